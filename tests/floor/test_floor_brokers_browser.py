"""The floor page says when the view's Kafka clients lose a broker node, at once (pushed over the
page's event stream, whether or not a table changed), what is being done, and stops saying it when
the node is no longer lost. Headless Chromium on a replayed floor whose reader reports the lost
nodes as the floor view's TablesReader does (craps_streams/kafka/client_logs.py's lost_nodes)."""
from __future__ import annotations

import asyncio
import base64
import time


from tests.chromium import page_until
from tests.floor.page_shots import floor_history, floor_in_chromium
from tests.floor.replayed import ReplayedFloor

BANNER_JS = """(() => { const b = document.getElementById("brokers");  // null until the page has loaded
  return {hidden: b ? b.hidden : null, text: b ? b.textContent : null,
          cards: document.querySelectorAll("#tables [data-table]").length}; })()"""


class LosingFloor(ReplayedFloor):
    lost: list[dict] = []

    def lost_brokers(self) -> list[dict]:
        return self.lost


async def _watch(floor: LosingFloor, shot_path) -> dict:
    (shot_path.parent / "chromium").mkdir()
    seen = {}
    async with floor_in_chromium(floor, shot_path.parent / "chromium") as (dt, port):
        await dt.call("Emulation.setDeviceMetricsOverride", width=1400, height=700, deviceScaleFactor=1,
                      mobile=False)
        await dt.call("Page.navigate", url=f"http://127.0.0.1:{port}/")

        async def until(check):
            start = time.monotonic()
            return await page_until(dt, BANNER_JS, check), time.monotonic() - start

        seen["before"], _ = await until(lambda s: s["cards"] == len(floor.table_ids()))
        floor.lost = [{"node": "1", "since_ms": int(time.time() * 1000) - 4000, "attempts": 57,
                       "error": "[Errno 111] Connect call failed ('127.0.0.1', 19093)"}]
        seen["lost"], seen["lost_after_s"] = await until(lambda s: not s["hidden"])
        shot = await dt.call("Page.captureScreenshot", format="png")
        shot_path.write_bytes(base64.b64decode(shot["data"]))
        floor.lost = []
        seen["back"], seen["back_after_s"] = await until(lambda s: s["hidden"])
        seen["errors"] = dt.errors()
    return seen


def test_the_floor_page_says_a_broker_is_lost_and_when_it_is_not(tmp_path):
    floor = LosingFloor(floor_history(tables=4))
    seen = asyncio.run(_watch(floor, tmp_path / "brokers.png"))
    assert seen["errors"] == []
    assert seen["before"]["hidden"] and seen["before"]["text"] == ""
    text = seen["lost"]["text"]
    assert text.startswith("Kafka broker node 1 lost since ") and "(57 failed connections)" in text, text
    assert "the view retries it and reads from its partitions' new leaders" in text
    # Looked at every BROKERS_EVERY_S (2 s) by the stream; the rest is slack for a loaded 2-core machine.
    assert seen["lost_after_s"] <= 8 and seen["back_after_s"] <= 8, seen  # no table changed meanwhile
