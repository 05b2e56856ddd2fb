"""The report's books kept natively (native/src/report.rs `ReportBook`) against the Python books
(craps_streams/report/build.py `ReportPass._book`, `_settled`: the specification), line by line:
every line of the period and of the year to date before it (its money, decisions, stakes), the
outcomes, the hourly handle, each table's hold series to the last bit, the alerts, rejections
and odds, each in the order first met; on floors with forged, untagged, swapped, lost, duplicated,
torn and oddly written lines, through the lane (raw JSON lines) and as items (the path of archives
and topics), for a day, a range from the year's start, and one shift with the year before it."""
from __future__ import annotations

from datetime import date, time

import pytest

from craps_streams.accelerator.rules import in_use
from craps_streams.authenticity import TagCheck
from craps_streams.replay.jsonread import line_batches
from craps_streams.report import GamingCalendar, Period, ReportSettings
from craps_streams.report.build import ReportPass
from craps_streams.sim.floor import FLOOR_EPOCH_MS
from tests.native.lockstep import history, history_floor
from tests.report.report_fixtures import NY

pytestmark = pytest.mark.skipif(not in_use(), reason="the native books are the native code's")  # CRAPS_CORE=python

# Half-hour shifts of a UTC gaming day: the floor's two hours span four of them.
HALF_HOURS = GamingCalendar("UTC", time(0, 0), (("a", time(0, 0)), ("b", time(0, 30)), ("c", time(1, 0)),
                                                ("d", time(1, 30))))
FIELDS = ("lines", "before", "outcomes", "hourly", "series", "noted", "rules", "held")


def _periods() -> list:
    first = NY.gaming_day(FLOOR_EPOCH_MS)
    day = HALF_HOURS.gaming_day(FLOOR_EPOCH_MS)
    return [(NY, Period(first, first)),
            (NY, Period(date(first.year, 1, 1) if first.month > 1 else first,
                        NY.gaming_day(FLOOR_EPOCH_MS + 3 * 86_400_000))),
            (HALF_HOURS, Period(day, day, "c"))]


def _collected(feed, floor_ring, untagged: bool, cal, period, native: bool):
    tags = TagCheck(floor_ring, accept_untagged=untagged)
    rp = ReportPass(ReportSettings(cal, period), tags, native_books=native)
    assert (rp.book is not None) == native
    feed(rp)
    return rp.finish()


def _same(native, python) -> None:
    for name in FIELDS:
        mine, theirs = getattr(native, name), getattr(python, name)
        assert mine == theirs, name
        if type(theirs) is dict:
            assert list(mine) == list(theirs), f"{name}: the order first met"
    for table, points in python.series.items():
        # to the last bit, and floats where Python has floats
        assert [[type(x) for x in p] for p in native.series[table]] == [[type(x) for x in p] for p in points]
    assert native.odds == python.odds and list(native.odds) == list(python.odds)
    assert native.seen == python.seen


@pytest.mark.parametrize("seed,untagged", [(1, False), (2, True), (5, False)])
def test_native_books_are_the_python_books_through_the_lane(tmp_path, seed, untagged):
    floor = history_floor(seed, untagged, odd=True)
    path = tmp_path / "floor.jsonl"
    path.write_text("".join(line + "\n" for line in floor.lines))

    def feed(rp):
        with open(path, encoding="utf-8") as fo:
            rp.feed(line_batches(fo, str(path)))

    for cal, period in _periods():
        native = _collected(feed, floor.ring, untagged, cal, period, True)
        python = _collected(feed, floor.ring, untagged, cal, period, False)
        _same(native, python)
        assert native.lines and native.outcomes and native.series and native.noted.rejections.count
        if period.shift:
            assert native.before  # the year to date before the shift


@pytest.mark.parametrize("seed,untagged", [(3, False), (4, True)])
def test_native_books_are_the_python_books_for_items(seed, untagged):
    items, ring = history(seed, untagged)

    def feed(rp):
        rp.feed([items[i:i + 300] for i in range(0, len(items), 300)])

    for cal, period in _periods():
        _same(_collected(feed, ring, untagged, cal, period, True), _collected(feed, ring, untagged, cal, period, False))
