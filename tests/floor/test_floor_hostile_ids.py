"""Hostile strings reach the floor view's pages as text: table ids, shooter ids
and wager ids carrying `<script>`, `<img src=x onerror=...>`, `<svg onload=...>` and quotes, and
headless Chromium shows them verbatim: no element made from them, no script run, no CSP violation.
The pages also carry the Content-Security-Policy header that forbids inline script.

The event contract refuses such ids today (`invalid_id`, tests/rules/test_input_limits.py), so the
page is the second line of defence: for history settled before the limits, or a writer that got
round them. The test replays an honest floor through the rules core and the view's folds, then
gives every id in the folded views a hostile spelling, as such a history would have them."""
from __future__ import annotations

import asyncio
import json
import re
import urllib.parse

import aiohttp
import pytest
from aiohttp import web

from craps_streams.app.web_security import CSP, WebConfig
from craps_streams.codec import to_json_line
from craps_streams.floor.hub import ChangeHub
from craps_streams.floor.web import make_floor_web
from craps_streams.sim.floor import floor_events

from tests.chromium import open_page, start_chromium, stop_chromium
from tests.conftest import free_port
from tests.floor.replayed import ReplayedFloor

HOSTILE_TABLES = {
    "T001": '<img src=x onerror="window.__pwned=1">',
    "T002": "<script>window.__pwned=2</script>\"'&amp;",
    "T003": "\"><svg onload=window.__pwned=3>'",
}
HOSTILE_SHOOTER = '"><img src=x onerror="window.__pwned=4">'

PAGE_JS = r"""(() => ({
  pwned: window.__pwned ?? null, csp: window.__cspViolations,
  made: document.querySelectorAll("img, svg, iframe, object, embed").length,
  handlers: [...document.querySelectorAll("*")].filter(e => [...e.attributes].some(a => a.name.startsWith("on"))).length,
  scripts: [...document.scripts].map(s => s.getAttribute("src")),
  ids: [...document.querySelectorAll("[data-table]")].map(e => e.dataset.table),
  links: [...document.querySelectorAll("#tables a.id")].map(a => a.textContent),
  shooters: [...document.querySelectorAll('[data-field="shooter"]')].map(e => e.textContent),
  title: document.getElementById("table-id") ? document.getElementById("table-id").textContent : null,
  wager_ids: [...document.querySelectorAll("[data-settlement] td:nth-child(2)")].map(e => e.textContent),
  alerts: [...document.querySelectorAll("[data-alert]")].map(e => e.textContent),
}))()"""


HONEST_ID = re.compile(r"(T00[123])(-[pw]\w*)?")


def history() -> list[str]:
    lines = [to_json_line(record) for record in floor_events(3, 0.5, 23, 0.0)]
    # A gap on the third table: suspended, with a sequence_gap alert whose message names the table.
    third = [i for i, x in enumerate(lines) if json.loads(x)["table_id"] == "T003"]
    del lines[third[len(third) // 2]]
    return lines


def hostile(value):
    """The same views with every table, shooter and wager id spelt hostile (inside messages too)."""
    if isinstance(value, dict):
        return {hostile(k): hostile(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [hostile(v) for v in value]
    if not isinstance(value, str):
        return value

    def spelt(m: re.Match) -> str:
        table, rest = HOSTILE_TABLES[m.group(1)], m.group(2) or ""
        if rest.startswith("-p"):
            return HOSTILE_SHOOTER + table + rest
        if rest.startswith("-w"):
            return "<b onmouseover=alert(5)>" + table + rest
        return table
    return HONEST_ID.sub(spelt, value)


@pytest.mark.timeout(240)
def test_hostile_ids_are_shown_as_text_and_run_no_script(tmp_path):
    floor = ReplayedFloor(history())
    floor.views = hostile(floor.views)
    assert sorted(floor.table_ids()) == sorted(HOSTILE_TABLES.values())
    assert any(v["recent_settlements"] for v in floor.views.values())
    assert floor.views[HOSTILE_TABLES["T003"]]["alerts_open"]
    chromium, devtools_port = start_chromium(tmp_path)
    try:
        asyncio.run(drive(floor, devtools_port))
    finally:
        stop_chromium(chromium)


async def until(dt, check, timeout=30):
    value = None
    for _ in range(int(timeout / 0.3)):
        value = await dt.evaluate(PAGE_JS)
        if check(value):
            return value
        await asyncio.sleep(0.3)
    raise AssertionError(f"the page never settled: {json.dumps(value)[:2000]}; errors: {dt.errors()}")


async def drive(floor: ReplayedFloor, devtools_port: int) -> None:
    port = free_port()
    runner = web.AppRunner(make_floor_web(floor, ChangeHub(), WebConfig(), "hostile"), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
            for path in ("/", "/table?id=x", "/plots", "/api/floor"):
                async with http.get(base + path) as r:
                    assert r.headers["Content-Security-Policy"] == CSP
                    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP
                    assert r.headers["X-Content-Type-Options"] == "nosniff"
            pages = []
            floor_dt, ws = await open_page(http, devtools_port, base + "/")
            pages.append((floor_dt, ws))
            p = await until(floor_dt, lambda v: len(v["ids"]) == 3)
            assert sorted(p["ids"]) == sorted(HOSTILE_TABLES.values())
            assert sorted(p["links"]) == sorted(HOSTILE_TABLES.values())
            assert all(s.startswith(HOSTILE_SHOOTER) for s in p["shooters"]), p["shooters"]
            assert p["alerts"], "the third table's open sequence_gap alert is not shown"
            checks = [p]
            for table in HOSTILE_TABLES.values():
                dt, ws = await open_page(http, devtools_port, base + "/table?id=" + urllib.parse.quote(table, safe=""))
                pages.append((dt, ws))
                t = await until(dt, lambda v: v["title"] == table and v["ids"] == [table])
                if floor.views[table]["recent_settlements"]:
                    assert t["wager_ids"] and all(w.startswith("<b onmouseover=alert(5)>") for w in t["wager_ids"])
                checks.append(t)
            plots_dt, ws = await open_page(http, devtools_port, base + "/plots")
            pages.append((plots_dt, ws))
            await asyncio.sleep(1.5)
            checks.append(await plots_dt.evaluate(PAGE_JS))
            for c in checks:
                assert c["pwned"] is None, "a hostile id ran script"
                assert c["made"] == 0 and c["handlers"] == 0, c
                assert all(s and s.startswith("static/") for s in c["scripts"]), c["scripts"]
                assert c["csp"] == [], c["csp"]
            for dt, ws in pages:
                assert not dt.errors(), dt.errors()
                dt.reader.cancel()
                await ws.close()
    finally:
        await runner.cleanup()
