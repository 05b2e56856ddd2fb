"""Headless Chromium driven over the Chrome DevTools Protocol, for the page tests (no Selenium, no
Playwright: the browser from apt and a websocket)."""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pathlib
import shutil
import signal
import subprocess
import time

import aiohttp

from tests.conftest import wait_for


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


async def open_page(http: aiohttp.ClientSession, devtools_port: int, url: str) -> tuple:
    """A new tab on `url`: (its DevTools client, its websocket). Page, Runtime and Log enabled
    before the navigation, so no error of the first load is missed."""
    async with http.put(f"http://127.0.0.1:{devtools_port}/json/new?about:blank") as r:
        target = await r.json()
    ws = await http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0)
    dt = DevTools(ws)
    for domain in ("Page", "Runtime", "Log"):
        await dt.call(f"{domain}.enable")
    nav = await dt.call("Page.navigate", url=url)
    assert not nav.get("errorText"), nav
    return dt, ws


@contextlib.asynccontextmanager
async def chromium_tab(profile: pathlib.Path):
    """Chromium started with its profile and log in `profile`, one tab open on about:blank: yields
    the tab's DevTools client. The tab's websocket is closed and Chromium stopped (its helpers
    too) whatever the outcome."""
    proc, devtools_port = start_chromium(profile)
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
            dt, ws = await open_page(http, devtools_port, "about:blank")
            try:
                yield dt
            finally:
                dt.reader.cancel()
                await ws.close()
    finally:
        stop_chromium(proc)


async def page_until(dt: DevTools, js: str, check, timeout: float = 30.0):
    """What `js` evaluates to on the page once `check` holds for it (a falsy value never does);
    AssertionError naming what the page shows when it has not held within `timeout` seconds."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        state = await dt.evaluate(js)
        if state and check(state):
            return state
        await asyncio.sleep(0.1)
    raise AssertionError(f"the page never showed it: {await dt.evaluate(js)}")
