"""Gaming days and shifts in the casino's time zone: the day's start, both clock changes of
America/New_York, shifts that cross midnight."""
from __future__ import annotations

from datetime import date, datetime, time, timezone

import pytest

from craps_streams.report.calendar import GamingCalendar, Period, parse_clock, parse_shifts

NY = GamingCalendar("America/New_York", time(6, 0))
H = 3_600_000


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def test_an_instant_before_the_day_start_belongs_to_the_day_before():
    start = ms("2026-01-02T06:00:00-05:00")
    assert NY.gaming_day(start - 1) == date(2026, 1, 1)
    assert NY.gaming_day(start) == date(2026, 1, 2)
    assert NY.day_bounds(date(2026, 1, 1)) == (start - 24 * H, start)


def test_spring_forward_gaming_day_lasts_23_hours():
    # 2026-03-08 02:00 EST becomes 03:00 EDT: the gaming day of 03-07 ends at 06:00 EDT (10:00Z).
    start, end = NY.day_bounds(date(2026, 3, 7))
    assert start == ms("2026-03-07T11:00:00+00:00") and end == ms("2026-03-08T10:00:00+00:00")
    assert end - start == 23 * H
    # 05:30 local (EDT) on the 8th is still the 7th's gaming day; a fixed -5 h offset would say so
    # of 06:30 EDT too, which belongs to the 8th.
    assert NY.gaming_day(ms("2026-03-08T09:30:00+00:00")) == date(2026, 3, 7)
    assert NY.gaming_day(ms("2026-03-08T10:30:00+00:00")) == date(2026, 3, 8)


def test_fall_back_gaming_day_lasts_25_hours():
    start, end = NY.day_bounds(date(2026, 10, 31))
    assert end - start == 25 * H
    assert NY.gaming_day(ms("2026-11-01T10:59:59+00:00")) == date(2026, 10, 31)  # 05:59:59 EST
    assert NY.gaming_day(ms("2026-11-01T11:00:00+00:00")) == date(2026, 11, 1)


def test_shifts_tile_the_gaming_day_on_every_kind_of_day():
    for d in (date(2026, 1, 5), date(2026, 3, 7), date(2026, 10, 31)):
        start, end = NY.day_bounds(d)
        bounds = [NY.shift_bounds(d, n) for n in NY.shift_names()]
        assert bounds[0][0] == start and bounds[-1][1] == end
        assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
        for name, (s, e) in zip(NY.shift_names(), bounds):
            assert NY.shift_of(s) == name and NY.shift_of(e - 1) == name
    # the grave shift crosses midnight: 22:00 to 06:00
    s, e = NY.shift_bounds(date(2026, 1, 5), "grave")
    assert (s, e) == (ms("2026-01-05T22:00:00-05:00"), ms("2026-01-06T06:00:00-05:00"))


def test_configured_shifts_and_zones():
    cal = GamingCalendar("Europe/London", parse_clock("04:00"), parse_shifts("late=20:00,early=04:00,mid=12:00"))
    assert cal.shift_names() == ("early", "mid", "late")
    assert cal.gaming_day(ms("2026-07-01T03:59:00+01:00")) == date(2026, 6, 30)
    assert cal.shift_of(ms("2026-07-01T03:59:00+01:00")) == "late"
    with pytest.raises(ValueError, match="no shift starts"):
        GamingCalendar("UTC", time(6, 0), parse_shifts("a=07:00"))
    with pytest.raises(ValueError, match="IANA"):
        GamingCalendar("Mars/Olympus", time(6, 0), (("a", time(6, 0)),))
    with pytest.raises(ValueError):
        parse_shifts("day=25:00")
    with pytest.raises(ValueError, match="ends"):
        Period(date(2026, 1, 2), date(2026, 1, 1))


def test_period_bounds():
    assert Period(date(2026, 1, 1), date(2026, 1, 3)).bounds(NY) == (NY.day_bounds(date(2026, 1, 1))[0],
                                                                      NY.day_bounds(date(2026, 1, 3))[1])
    assert Period(date(2026, 1, 1), date(2026, 1, 1), "swing").bounds(NY) == NY.shift_bounds(date(2026, 1, 1), "swing")
    assert datetime.fromtimestamp(Period(date(2026, 1, 1), date(2026, 1, 1)).bounds(NY)[0] / 1000,
                                  timezone.utc).hour == 11
