"""The floor view in a real browser: headless Chromium over the DevTools Protocol loads
the floor page, a table page and the plots page of a view instance while a settling worker settles a
simulated floor. The pages show what the view's data says, follow new throws without a reload
(pushed, server-sent events), show a table suspended by a sequence gap and its open alert, and the
charts hold data points (read from Chart.js itself); no JavaScript error, no CSP violation."""
from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import pytest

from tests.chromium import open_page, start_chromium, stop_chromium
from tests.floor.views import floor_of, get_json, last_seqs, start_view, wait_view
from tests.pipeline.test_pipeline import write_floor

pytestmark = pytest.mark.kafka

FLOOR_JS = r"""(() => {
  const text = (el, f) => { const x = el.querySelector(`[data-field="${f}"]`); return x ? x.textContent.trim() : null; };
  return {
    meta: document.getElementById("meta").textContent, marker: window.__floorTestMarker ?? null,
    pushes: window.__floor ? window.__floor.pushes : null, csp: window.__cspViolations,
    tables: [...document.querySelectorAll("#tables [data-table]")].map(el => ({
      table_id: el.dataset.table, last_seq: el.dataset.seq, suspended: el.classList.contains("suspended"),
      suspended_note: text(el, "suspended"), shooter: text(el, "shooter"), point: text(el, "point"),
      throws_this_hand: text(el, "throws_this_hand"), settled: text(el, "settled"),
      alerts: [...el.querySelectorAll('[data-field="alerts_open"] [data-alert]')].map(a => a.dataset.alert),
      hold: [...el.querySelectorAll("tr[data-wager]")].map(tr => tr.dataset.wager),
    })),
  };
})()"""

TABLE_JS = r"""(() => {
  const c = window.__charts;
  if (!c || !document.querySelector("#now [data-table]")) return null;
  const hold = [...c.hold.entries()].map(([line, ch]) => ({line, points: ch.data.datasets.map(d => d.data.length),
    house_win: ch.data.datasets[3].data.map(p => p.y)}));
  const freq = Object.fromEntries(Object.entries(c.frequencies).map(([k, ch]) =>
    [k, {labels: ch.data.labels.length, observed: ch.data.datasets[0].data, exact: ch.data.datasets[1].data,
         drawn: ch.getDatasetMeta(0).data.length}]));
  return {seq: document.querySelector("#now [data-table]").dataset.seq, marker: window.__floorTestMarker ?? null,
          pushes: window.__table.pushes, hand: document.querySelectorAll("#hand li").length,
          settlements: document.querySelectorAll("[data-settlement]").length, hold, freq, csp: window.__cspViolations};
})()"""

PLOTS_JS = r"""(() => {
  const c = window.__charts;
  if (!c) return null;
  return {csp: window.__cspViolations, freq: Object.fromEntries(Object.entries(c).map(([k, ch]) =>
    [k, {observed: ch.data.datasets[0].data, exact: ch.data.datasets[1].data, title: ch.options.plugins.title.text}]))};
})()"""


async def until(dt, expression: str, check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = await dt.evaluate(expression)
        if value is not None and check(value):
            return value
        await asyncio.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}; the page shows {json.dumps(value)[:3000]}")


def slice_last(lines) -> dict[str, int]:
    last = {}
    for x in lines:
        r = json.loads(x)
        last[r["table_id"]] = max(last.get(r["table_id"], 0), r["seq"])
    return last


@pytest.mark.timeout(420)
def test_floor_view_pages_in_headless_chromium(pipeline, tmp_path):
    lines = write_floor(tmp_path / "floor.jsonl", tables=3, hours=0.6, seed=41, bad_rate=0.0)
    third = len(lines) // 3
    first, second = lines[:third], lines[third:2 * third]
    # T003 loses one event of the second slice: the table is suspended, everything after is held.
    t3 = [i for i, x in enumerate(second) if json.loads(x)["table_id"] == "T003"]
    gap = json.loads(second.pop(t3[len(t3) // 3]))["seq"]
    (tmp_path / "first.jsonl").write_text("\n".join(first) + "\n")
    (tmp_path / "second.jsonl").write_text("\n".join(second) + "\n")
    first_seq, second_seq = slice_last(first), slice_last(second)

    pipeline.start_worker("w1")
    view = start_view(pipeline, "browser")
    pipeline.run("produce", str(tmp_path / "first.jsonl"), "--quiet")
    floor1 = wait_view(view, lambda f: last_seqs(f) == first_seq, 180, f"the first slice {first_seq}")
    assert any(t["hold"] for t in floor1["tables"])

    chromium, devtools_port = start_chromium(tmp_path)
    try:
        asyncio.run(drive(pipeline, view, devtools_port, tmp_path, floor1, second_seq, gap))
    finally:
        stop_chromium(chromium)


async def drive(pipeline, view, devtools_port, tmp_path, floor1, second_seq, gap) -> None:
    base = f"http://127.0.0.1:{view.web_port}"
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
        floor_dt, floor_ws = await open_page(http, devtools_port, base + "/")
        table_dt, table_ws = await open_page(http, devtools_port, base + "/table?id=T001")
        plots_dt, plots_ws = await open_page(http, devtools_port, base + "/plots")
        try:
            # The floor page shows every table as the view's data has it.
            want = {t["table_id"]: t for t in floor1["tables"]}
            page = await until(floor_dt, FLOOR_JS, lambda p: [t["table_id"] for t in p["tables"]] == sorted(want)
                               and all(t["last_seq"] == str(want[t["table_id"]]["last_seq"]) for t in p["tables"]),
                               60, "the floor page to show the first slice")
            for t in page["tables"]:
                w = want[t["table_id"]]
                assert t["shooter"] == (w["shooter"] or "—")
                assert t["point"] == (str(w["point"]) if w["point"] else "off")
                assert t["throws_this_hand"] == str(w["throws_this_hand"])
                assert t["settled"] == str(w["settled"])
                assert t["hold"] == [h["wager"] for h in w["hold"]]
                assert not t["suspended"]
            await floor_dt.evaluate("window.__floorTestMarker = 'first load'")

            # The table page: its hold charts and outcome charts have data points.
            detail = get_json(view, "/api/table?id=T001")
            tpage = await until(table_dt, TABLE_JS, lambda p: p["seq"] == str(detail["last_seq"]) and p["hold"],
                                60, "the table page to show T001")
            assert sorted(h["line"] for h in tpage["hold"]) == sorted(detail["series"])
            for h in tpage["hold"]:
                series = detail["series"][h["line"]]
                assert h["points"] == [len(series)] * 4, h
                assert h["house_win"] == [p[2] for p in series]
            fire = tpage["freq"]["fire_points"]
            assert fire["labels"] == 7 and fire["drawn"] == 7
            assert abs(sum(fire["exact"]) - 1) < 1e-9
            observed_fire = detail["observed"].get("fire_points", {})
            assert sum(observed_fire.values()) > 0, "no Fire Bet decided yet on T001"
            assert abs(sum(fire["observed"]) - 1) < 1e-9
            assert tpage["hand"] == len(detail["hand_markers"])
            assert tpage["settlements"] == len(detail["recent_settlements"]) > 0
            await table_dt.evaluate("window.__floorTestMarker = 'first load'")

            # The plots page: the floor's observed outcomes against the exact distributions.
            observed = get_json(view, "/api/observed")
            ppage = await until(plots_dt, PLOTS_JS,
                                lambda p: any(sum(v["observed"]) > 0 for v in p["freq"].values()), 60, "the plots")
            n_fire = sum(observed["observed"]["fire_points"].values())
            assert ppage["freq"]["fire_points"]["title"].endswith(f"n = {n_fire}")

            navigations = floor_dt.count("Page.frameNavigated"), table_dt.count("Page.frameNavigated")

            # More throws, and a gap on T003: the pages follow without a reload.
            await asyncio.to_thread(pipeline.run, "produce", str(tmp_path / "second.jsonl"), "--quiet")
            floor2 = await asyncio.to_thread(
                wait_view, view, lambda f: {t: s for t, s in last_seqs(f).items() if t != "T003"}
                == {t: s for t, s in second_seq.items() if t != "T003"}
                and next(t for t in f["tables"] if t["table_id"] == "T003")["suspended"], 180, "the second slice")
            t3 = next(t for t in floor2["tables"] if t["table_id"] == "T003")
            assert t3["last_seq"] == gap - 1 and t3["held_events"] > 0
            assert [a["alert"] for a in t3["alerts_open"]] == ["sequence_gap"]

            want2 = {t["table_id"]: t for t in floor2["tables"]}
            page2 = await until(floor_dt, FLOOR_JS, lambda p: all(
                t["last_seq"] == str(want2[t["table_id"]]["last_seq"]) and t["settled"] == str(want2[t["table_id"]]["settled"])
                for t in p["tables"]) and any(t["suspended"] for t in p["tables"]), 60, "the floor page to follow")
            assert page2["marker"] == "first load" and page2["pushes"] > 0
            s3 = next(t for t in page2["tables"] if t["table_id"] == "T003")
            assert s3["suspended"] and "SUSPENDED" in s3["suspended_note"]
            assert f"{t3['held_events']} events held" in s3["suspended_note"]
            assert s3["alerts"] == ["sequence_gap"]
            assert not any(t["suspended"] for t in page2["tables"] if t["table_id"] != "T003")

            detail2 = get_json(view, "/api/table?id=T001")
            tpage2 = await until(table_dt, TABLE_JS, lambda p: p["seq"] == str(detail2["last_seq"]), 60,
                                 "the table page to follow")
            assert tpage2["marker"] == "first load" and tpage2["pushes"] > 0
            assert int(tpage2["seq"]) > int(tpage["seq"])
            assert sum(h["points"][3] for h in tpage2["hold"]) >= sum(h["points"][3] for h in tpage["hold"])
            assert (floor_dt.count("Page.frameNavigated"), table_dt.count("Page.frameNavigated")) == navigations

            for dt, name in ((floor_dt, "floor"), (table_dt, "table"), (plots_dt, "plots")):
                assert not dt.errors(), f"errors on the {name} page: {dt.errors()}"
                assert await dt.evaluate("window.__cspViolations") == [], name
        finally:
            for dt, ws in ((floor_dt, floor_ws), (table_dt, table_ws), (plots_dt, plots_ws)):
                dt.reader.cancel()
                await ws.close()
