"""The floor page shows the events a table's controller holds because the broker has not
acknowledged them, in the status panel's words: folded from the controllers' /metrics by the one
function the panel uses (craps_streams/metrics/at_table.py). A real controller whose sender points
at a port where nothing listens holds what it is given; the floor view's watch reads its /metrics;
headless Chromium shows the card, and the card goes back once the figures say nothing is held."""
from __future__ import annotations

import asyncio
import base64
import time

import aiohttp

from craps_streams.controller.journal import Journal
from craps_streams.controller.metrics import ControllerMetrics
from craps_streams.floor.controllers import ControllerWatch, urls_of
from craps_streams.floor.folding import at_table_fields
from craps_streams.floor.hub import ChangeHub
from craps_streams.metrics.at_table import HeldAtTable, held_at_tables
from craps_streams.metrics.panel import held_at_table, snapshot_of
from tests.chromium import page_until
from tests.conftest import free_port
from tests.controller.test_controller_inputs import post, started, throw
from tests.floor.page_shots import floor_history, floor_in_chromium
from tests.floor.replayed import ReplayedFloor


def _exposition(held: dict, now_ns: int) -> str:
    m = ControllerMetrics()
    m.show_held(sorted(held), held, now_ns)
    return m.exposition().decode()


def test_the_held_events_fold_from_the_controllers_metrics_as_the_panel_says_them():
    now = time.time_ns()
    texts = [_exposition({"T005": (340, now - 125 * 10**9), "T006": (0, None)}, now),
             _exposition({"T007": (1, now - 3 * 10**9)}, now),
             "craps_table_held_events{table=\"T005\"} 7.0\n"]  # a worker's gap hold: not the controller's
    held = held_at_tables(texts)
    assert held["T005"].events == 340 and 124 < held["T005"].oldest_s < 127
    assert held["T006"] == HeldAtTable(0, 0.0)
    assert held["T005"].words() == "340 events held at the table, oldest 2 min"
    assert held["T007"].words() == "1 event held at the table, oldest 3 s"
    # The panel reads the same texts to the same words, the floor row carries them.
    panel = {t.table_id: t for t in snapshot_of(0.0, texts).tables}
    assert held_at_table(panel["T005"]) == held["T005"].words()
    assert at_table_fields(held["T005"]) == {"at_table": {"events": 340, "oldest_s": round(held["T005"].oldest_s, 1),
                                                          "words": "340 events held at the table, oldest 2 min"}}
    assert at_table_fields(None) == {"at_table": None}
    # A table served by two controllers (moved between hosts) adds up; the oldest is the older.
    both = held_at_tables([_exposition({"T001": (2, now - 5 * 10**9)}, now),
                           _exposition({"T001": (3, now - 9 * 10**9)}, now)])
    assert both["T001"].events == 5 and 8.9 < both["T001"].oldest_s < 9.1
    assert urls_of(" http://a/metrics, ,http://b/metrics") == ("http://a/metrics", "http://b/metrics")


class HoldingFloor(ReplayedFloor):
    watch: ControllerWatch

    def held_at_tables(self) -> dict:
        return self.watch.held


CARD_JS = """(() => { const c = document.querySelector('#tables [data-table="T001"]');
  const n = c && c.querySelector('[data-field="at_table"]');
  return {cards: document.querySelectorAll("#tables [data-table]").length, note: n ? n.textContent : null,
          holding: c ? c.classList.contains("holding") : null,
          meta: (document.getElementById("meta") || {}).textContent}; })()"""


async def _watch(tmp_path, shot_path) -> dict:
    floor = HoldingFloor(floor_history(tables=4))
    hub = ChangeHub()
    seen: dict = {}
    controller, sender, url, stop_controller = await started(tmp_path / "journal.sqlite")
    dead = f"http://127.0.0.1:{free_port()}/metrics"  # a controller that does not answer: no figures, no failure
    floor.watch = ControllerWatch([url + "/metrics", dead], hub)
    watching = asyncio.create_task(floor.watch.run())
    (shot_path.parent / "chromium").mkdir()
    try:
        async with floor_in_chromium(floor, shot_path.parent / "chromium", hub) as (dt, port), \
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
            answers = [await post(http, url, throw("T001")) for _ in range(12)]
            seen["answers"] = [code for code, _ in answers]
            await dt.call("Emulation.setDeviceMetricsOverride", width=1400, height=900, deviceScaleFactor=1,
                          mobile=False)
            await dt.call("Page.navigate", url=f"http://127.0.0.1:{port}/")
            # The watch polls the controllers' /metrics on its own beat: a poll taken during the
            # posts shows fewer; the page must come to all twelve.
            seen["held"] = await page_until(dt, CARD_JS, lambda s: (s["note"] or "").startswith("12 "))
            async with http.get(f"http://127.0.0.1:{port}/api/floor") as r:
                seen["doc"] = await r.json()
            async with http.get(f"http://127.0.0.1:{port}/api/table?id=T001") as r:
                seen["table"] = await r.json()
            shot = await dt.call("Page.captureScreenshot", format="png")
            shot_path.write_bytes(base64.b64decode(shot["data"]))
            # The broker acknowledged them (the journal marked): the figures say 0, the note goes.
            journal = Journal(tmp_path / "journal.sqlite", sync_full=False)
            journal.mark_sent([h.id for h in journal.unsent(100)])
            journal.close()
            seen["back"] = await page_until(dt, CARD_JS, lambda s: s["note"] is None)
            seen["errors"] = dt.errors()
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
        await stop_controller()
    return seen


def test_the_floor_page_shows_the_events_held_at_a_table(tmp_path):
    seen = asyncio.run(_watch(tmp_path, tmp_path / "held-at-table.png"))
    assert seen["answers"] == [200] * 12
    assert seen["errors"] == []
    note = seen["held"]["note"]
    assert note.startswith("12 events held at the table, oldest ") and note.endswith(" s"), note
    assert seen["held"]["holding"] and seen["held"]["cards"] == 4
    assert "1 with events held at the table" in seen["held"]["meta"]
    t1 = next(t for t in seen["doc"]["tables"] if t["table_id"] == "T001")
    assert t1["at_table"]["events"] == 12 and t1["at_table"]["words"] == note
    assert seen["table"]["at_table"]["events"] == 12  # the table's own page says it too
    # T002 is served by the controller too and holds nothing; T003 has no controller answering.
    t2 = next(t for t in seen["doc"]["tables"] if t["table_id"] == "T002")
    t3 = next(t for t in seen["doc"]["tables"] if t["table_id"] == "T003")
    assert t2["at_table"]["events"] == 0 and t3["at_table"] is None
    assert not seen["back"]["holding"] and seen["back"]["cards"] == 4
