"""The live floor page in a real browser (issue 4, item 4): headless Chromium, driven over the Chrome
DevTools Protocol, loads the worker's page while the worker settles a simulated floor. The page shows
every table with exactly what /floor.json says (shooter, point, markers of each side wager, throws
this hand, hold against theory), and when more throws arrive it updates in place, without a reload
and without a JavaScript error."""
from __future__ import annotations

import asyncio
import json
import os
import pathlib
import shutil
import signal
import subprocess
import time

import aiohttp
import pytest

from tests.conftest import wait_for
from tests.pipeline.test_pipeline import write_floor

pytestmark = pytest.mark.kafka

# Everything the page shows of each table, read from the DOM by the data-field hooks of floor.html.
SNAPSHOT_JS = r"""(() => {
  const text = (el, f) => { const x = el.querySelector(`[data-field="${f}"]`); return x ? x.textContent.trim() : null; };
  const on = (el, f) => [...el.querySelectorAll(`[data-field="${f}"] .mk.on`)].map(x => x.textContent.trim());
  const meta = document.getElementById("meta");
  if (!meta) return null;  // not the floor page yet
  return {
    meta: meta.textContent,
    marker: window.__floorTestMarker ?? null,
    tables: [...document.querySelectorAll("#tables [data-table]")].map(el => ({
      table_id: el.dataset.table, last_seq: el.dataset.seq, closed: el.classList.contains("closed"),
      shooter: text(el, "shooter"), position: text(el, "position"), hand: text(el, "hand"),
      point: text(el, "point"), throws_this_hand: text(el, "throws_this_hand"),
      fire_points: on(el, "fire_points"), bonus_marked: on(el, "bonus_marked"),
      hot_roller_combos: on(el, "hot_roller_combos"), hot_roller_numbers: text(el, "hot_roller_numbers"),
      hot_shooter_throws: text(el, "hot_shooter_throws"),
      hold: [...el.querySelectorAll("tr[data-wager]")].map(tr => [...tr.cells].map(td => td.textContent.trim())),
    })),
  };
})()"""


def money(cents: int) -> str:
    """floor.html's money() in the en-US locale the browser is started with."""
    return ("-" if cents < 0 else "") + f"${abs(cents) / 100:,.2f}"


def js_number(x) -> str:
    """How a template literal prints a JSON number."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def shown(floor: dict) -> dict:
    """What the page must show for this /floor.json, in the shape SNAPSHOT_JS reads the DOM."""
    dash = "—"
    return {"events_applied": floor["events_applied"], "tables": [{
        "table_id": t["table_id"], "last_seq": str(t["last_seq"]), "closed": bool(t["closed"]),
        "shooter": dash if t["shooter"] is None else str(t["shooter"]),
        "position": str(t["position"]) if t["position"] else dash,
        "hand": str(t["hand"]), "point": "off" if t["point"] is None else str(t["point"]),
        "throws_this_hand": str(t["throws_this_hand"]),
        "fire_points": sorted(str(x) for x in t["fire_points"]),
        "bonus_marked": sorted(str(x) for x in t["bonus_marked"]),
        "hot_roller_combos": sorted(t["hot_roller_combos"]),
        "hot_roller_numbers": ",".join(map(str, t["hot_roller_numbers"])) or dash,
        "hot_shooter_throws": ", ".join(map(str, t["hot_shooter_throws"])) or dash,
        "hold": [[h["wager"], money(h["handle_cents"]), money(h["house_win_cents"]),
                  money(h["expected_house_win_cents"]), js_number(h["z_score"])] for h in t["hold"]],
    } for t in floor["tables"]]}


def as_read(snapshot: dict) -> dict:
    """The DOM snapshot in the shape of shown(): marker lists sorted, events applied from the header."""
    meta = snapshot["meta"]
    assert "unreachable" not in meta, meta
    applied = int(meta.rsplit("events applied", 1)[1]) if "events applied" in meta else None
    tables = [{**t, **{k: sorted(t[k]) for k in ("fire_points", "bonus_marked", "hot_roller_combos")}}
              for t in snapshot["tables"]]
    return {"events_applied": applied, "tables": tables}


class DevTools:
    """A minimal Chrome DevTools Protocol client for one page target."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse):
        self.ws = ws
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future] = {}
        self.events: list[dict] = []
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                break
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self.waiting:
                self.waiting.pop(data["id"]).set_result(data)
            elif "method" in data:
                self.events.append(data)
        for fut in self.waiting.values():
            if not fut.done():
                fut.set_exception(ConnectionError("the DevTools websocket closed"))

    async def call(self, method: str, **params) -> dict:
        self.next_id += 1
        fut = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = fut
        await self.ws.send_str(json.dumps({"id": self.next_id, "method": method, "params": params}))
        reply = await asyncio.wait_for(fut, 30)
        assert "error" not in reply, f"{method}: {reply['error']}"
        return reply["result"]

    async def evaluate(self, expression: str):
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def count(self, method: str) -> int:
        return sum(1 for e in self.events if e["method"] == method)

    def errors(self) -> list[dict]:
        """Uncaught exceptions, console.error calls and error log entries (bar the missing favicon)."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown" or \
                    (e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert")) or \
                    (e["method"] == "Log.entryAdded" and p["entry"].get("level") == "error"
                     and not p["entry"].get("url", "").endswith("/favicon.ico")):
                out.append(e)
        return out


def start_chromium(tmp: pathlib.Path) -> tuple[subprocess.Popen, int]:
    chromium = shutil.which("chromium")
    assert chromium, "chromium is not installed: apt-get install -y chromium (CI does)"
    profile = tmp / "chromium-profile"
    profile.mkdir()
    # Port 0: Chromium picks a free port and writes it to DevToolsActivePort, so no port race.
    proc = subprocess.Popen(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-background-networking", "--no-first-run", "--no-default-browser-check",
         "--disable-extensions", "--lang=en-US", f"--user-data-dir={profile}",
         "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "about:blank"],
        stdout=open(tmp / "chromium.log", "wb"), stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "LANG": "en_US.UTF-8"})

    def port():
        assert proc.poll() is None, f"chromium exited with {proc.returncode}: see {tmp / 'chromium.log'}"
        active = profile / "DevToolsActivePort"
        lines = active.read_text().split() if active.exists() else []
        return int(lines[0]) if lines else None

    try:
        return proc, wait_for(port, 60, "chromium to open its DevTools port", interval=0.2)
    except BaseException:
        stop_chromium(proc)
        raise


def stop_chromium(proc: subprocess.Popen) -> None:
    """Kill Chromium and its helper processes: its own process group, started above."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # helpers left behind, if any
    except ProcessLookupError:
        pass
    proc.wait(10)


def slice_file(path: pathlib.Path, lines: list[str]) -> dict[str, int]:
    """Write a slice of the history; returns each table's last seq in it."""
    path.write_text("\n".join(lines) + "\n")
    last = {}
    for line in lines:
        r = json.loads(line)
        last[r["table_id"]] = max(last.get(r["table_id"], 0), r["seq"])
    return last


@pytest.mark.timeout(300)
def test_floor_page_in_headless_chromium_shows_the_tables_and_updates_live(pipeline, tmp_path):
    lines = write_floor(tmp_path / "floor.jsonl", tables=3, hours=0.5, seed=41, bad_rate=0.0)
    third = len(lines) // 3
    first, second = lines[:third], lines[third:2 * third]  # the tables are still open after both
    first_seq = slice_file(tmp_path / "first.jsonl", first)
    second_seq = {**first_seq, **slice_file(tmp_path / "second.jsonl", second)}
    throwing = {json.loads(x)["table_id"] for x in second if json.loads(x)["type"] == "DiceThrown"}
    assert sorted(first_seq) == sorted(second_seq) == sorted(throwing) == ["T001", "T002", "T003"]

    worker = pipeline.start_worker("web")
    base = f"http://127.0.0.1:{worker.web_port}"
    chromium, devtools_port = start_chromium(tmp_path)
    try:
        asyncio.run(drive(pipeline, worker, base, devtools_port, tmp_path, first_seq, second_seq))
    finally:
        stop_chromium(chromium)


async def drive(pipeline, worker, base, devtools_port, tmp_path, first_seq, second_seq) -> None:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:

        async def floor() -> dict | None:
            assert worker.poll() is None, f"the worker died: see {worker.log_path}"
            try:
                async with http.get(base + "/floor.json") as r:
                    return await r.json() if r.status == 200 else None
            except aiohttp.ClientError:
                return None

        async def settled_through(last_seq: dict[str, int], timeout: float) -> dict:
            """/floor.json once the worker has applied every table up to last_seq and is quiet."""
            deadline = time.monotonic() + timeout
            previous = None
            while time.monotonic() < deadline:
                f = await floor()
                if f and {t["table_id"]: t["last_seq"] for t in f["tables"]} == last_seq:
                    if f == previous:
                        return f
                    previous = f
                await asyncio.sleep(0.5)
            raise AssertionError(f"timed out after {timeout} s waiting for the worker to apply {last_seq}: "
                                 f"/floor.json says {previous or await floor()}")

        async def page_matches(dt: DevTools, timeout: float) -> tuple[dict, dict]:
            """Poll the DOM until it shows what /floor.json says (the page polls once a second)."""
            deadline = time.monotonic() + timeout
            want = got = None
            while time.monotonic() < deadline:
                f = await floor()
                if f is None:
                    await asyncio.sleep(0.5)
                    continue
                want = shown(f)
                snapshot = await dt.evaluate(SNAPSHOT_JS)
                got = snapshot and as_read(snapshot)
                if got == want:
                    return snapshot, want
                await asyncio.sleep(0.5)
            raise AssertionError(f"the page did not show /floor.json within {timeout} s:\n"
                                 f" page:  {json.dumps(got)}\n floor: {json.dumps(want)}")

        # The first slice of the floor, settled by the worker before the browser looks.
        await asyncio.to_thread(pipeline.run, "produce", str(tmp_path / "first.jsonl"), "--quiet")
        floor1 = await settled_through(first_seq, 120)
        assert any(t["hold"] for t in floor1["tables"]), "no settlement yet: nothing to hold against theory"

        async with http.get(f"http://127.0.0.1:{devtools_port}/json/list") as r:
            targets = [t for t in await r.json() if t["type"] == "page"]
        assert targets, "chromium has no page target"
        async with http.ws_connect(targets[0]["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            dt = DevTools(ws)
            for domain in ("Page", "Runtime", "Log"):
                await dt.call(f"{domain}.enable")
            nav = await dt.call("Page.navigate", url=base + "/")
            assert not nav.get("errorText"), nav

            # It loads and shows every table with what /floor.json says.
            snapshot, want = await page_matches(dt, 60)
            assert [t["table_id"] for t in snapshot["tables"]] == ["T001", "T002", "T003"]
            assert f"{len(want['tables'])} tables" in snapshot["meta"]
            assert any(t["hold"] for t in snapshot["tables"])
            await dt.evaluate("window.__floorTestMarker = 'first load'")
            navigations = dt.count("Page.frameNavigated")

            # More throws for the same tables: the page follows them without being reloaded.
            await asyncio.to_thread(pipeline.run, "produce", str(tmp_path / "second.jsonl"), "--quiet")
            floor2 = await settled_through(second_seq, 120)
            assert floor2["events_applied"] > floor1["events_applied"]
            snapshot2, want2 = await page_matches(dt, 60)
            assert snapshot2["marker"] == "first load", "the page was reloaded"
            assert dt.count("Page.frameNavigated") == navigations, "the page navigated"
            before = {t["table_id"]: t for t in snapshot["tables"]}
            for t in snapshot2["tables"]:
                assert int(t["last_seq"]) == second_seq[t["table_id"]] > int(before[t["table_id"]]["last_seq"])
            assert snapshot2["tables"] != snapshot["tables"]
            assert not dt.errors(), f"errors in the page: {dt.errors()}"
            dt.reader.cancel()
