"""The report's JSON Lines through the native lane (`ReportPass._feed_lines`) against the same
report with every line read into an event first (the plain path, `LineBatch.items`): the same
report, every figure, exception and provenance field, on floors with forged, untagged, swapped,
lost, duplicated, torn and oddly written lines, for a period inside the history (lines past its
end are not fed) and for the whole history."""
from __future__ import annotations

from datetime import date, time

import pytest

from craps_streams.accelerator.rules import in_use
from craps_streams.authenticity import TagCheck
from craps_streams.replay.engine import Replay
from craps_streams.report import GamingCalendar, Period, ReportSettings, make_report
from craps_streams.report.build import ReportPass
from craps_streams.sim.floor import FLOOR_EPOCH_MS
from tests.native.lockstep import history_floor
from tests.report.report_fixtures import NY

pytestmark = pytest.mark.skipif(not in_use(), reason="the lane is the native code's")  # CRAPS_CORE=python


def _report(path: str, floor, period: Period, lane: bool, monkeypatch, cal=NY) -> dict:
    fed = []
    real = ReportPass._feed_lines

    def counted(self, batch, *rest):
        fed.append(len(batch))
        return real(self, batch, *rest)

    with monkeypatch.context() as m:
        m.setattr(ReportPass, "_feed_lines", counted)
        if not lane:
            m.setattr(Replay, "lane_in_use", property(lambda self: False))
        tags = TagCheck(floor.ring, accept_untagged=floor.accept_untagged)
        report = make_report(ReportSettings(cal, period), path, tags=tags, ring=floor.ring)
    assert bool(fed) == lane
    return report


@pytest.mark.parametrize("seed,untagged", [(1, False), (2, True), (5, False)])
def test_the_lane_gives_the_plain_paths_report(tmp_path, monkeypatch, seed, untagged):
    floor = history_floor(seed, untagged, odd=True)
    path = tmp_path / "floor.jsonl"
    path.write_text("".join(line + "\n" for line in floor.lines))
    first = NY.gaming_day(FLOOR_EPOCH_MS)
    for period in (Period(first, first), Period(date(first.year, 1, 1) if first.month > 1 else first,
                                                 NY.gaming_day(FLOOR_EPOCH_MS + 3 * 86_400_000))):
        laned = _report(str(path), floor, period, True, monkeypatch)
        plain = _report(str(path), floor, period, False, monkeypatch)
        assert laned == plain
        ex = plain["exceptions"]
        assert ex["rejections"]["count"] > 0 and ex["sequence_faults"]["duplicates"] >= 0
        assert plain["provenance"]["history"]["events_read"] > 1000


def test_a_period_ending_inside_the_history_feeds_nothing_after_it(tmp_path, monkeypatch):
    # The floor's two hours begin at 00:00 UTC; a gaming day starting at 01:00 UTC splits them.
    floor = history_floor(3, False, odd=False)
    path = tmp_path / "floor.jsonl"
    path.write_text("".join(line + "\n" for line in floor.lines))
    cal = GamingCalendar("UTC", time(1, 0), (("day", time(1, 0)),))
    day = cal.gaming_day(FLOOR_EPOCH_MS)
    reports = [_report(str(path), floor, Period(day, day), lane, monkeypatch, cal) for lane in (True, False)]
    assert reports[0] == reports[1]
    assert cal.day_bounds(day)[1] == FLOOR_EPOCH_MS + 3_600_000
    assert reports[0]["provenance"]["history"]["last_event_time"] >= "2026-01-01T01:59"  # read, not fed
    total = next(r for r in reports[0]["floor"] if r["scope"] == f"day:{day}" and r["wager"] == "all")
    assert total["wagers"] > 0
