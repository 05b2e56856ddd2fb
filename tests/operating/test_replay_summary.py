"""The replay's summary adds up on its own: per wager, handle - stakes back - won by players = house win,
with the pushes (a table closed, a Hot Shooter surrendered) counted in their own column."""
from __future__ import annotations

import re

from craps_streams.cli.history import format_summary
from craps_streams.replay.engine import Replay, json_lines
from craps_streams.sim.floor import floor_events
from craps_streams.codec import to_json_line


def cents(text: str) -> int:
    return round(float(text.replace("$", "").replace(",", "")) * 100)


def test_every_line_of_the_summary_adds_up_and_counts_its_pushes():
    replay = Replay(tags=None)
    for record, where in json_lines([to_json_line(r) for r in floor_events(3, 2.0, 7, 0.0, 1_767_225_600_000)
                                     if type(r) is not str], "floor"):
        replay.feed_record(record, where)
    text = format_summary(replay.tally)
    money = re.compile(r"^(\S+(?: side wagers)?)\s+([\d,]+)\s+([\d,]+)\s+(-?\$[\d,.]+)\s+(-?\$[\d,.]+)\s+(-?\$[\d,.]+)"
                       r"\s+(-?\$[\d,.]+)\s+(-?[\d.]+)%$")
    rows = [m.groups() for m in map(money.match, text.splitlines()) if m]
    assert len(rows) >= 5 and rows[-1][0] == "all side wagers"
    for name, settled, pushes, handle, back, won, house, _ in rows:
        assert cents(handle) - cents(back) - cents(won) == cents(house), name
    assert sum(int(r[2].replace(",", "")) for r in rows[:-1]) == int(rows[-1][2].replace(",", "")) > 0
    assert "handle - stakes back - won by players = house win" in text
