"""The casino's accounting calendar: gaming days and shifts in its own time zone, DST-correct.

A gaming day D runs from D at `day_start` (local wall-clock time, e.g. 06:00) to D + 1 at
`day_start`, in the casino's IANA time zone (zoneinfo). On the day a clock change falls inside,
the gaming day lasts 23 or 25 hours: the bounds are the two local starts, each turned into an
instant by the zone's rules. Shifts divide a gaming day at local wall-clock starts (the first at
`day_start`). A settlement counts on the gaming day, and in the shift, of its deciding event's
time (`WagerSettled.ts`): a table open across the boundary books each wager on the day it was
decided.

Pure: no clock, no I/O; instants are epoch milliseconds.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_CLOCK = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def parse_clock(text: str) -> time:
    """"06:00" -> time(6, 0); ValueError otherwise."""
    m = _CLOCK.match(text.strip())
    if not m:
        raise ValueError(f"not a wall-clock time HH:MM: {text!r}")
    return time(int(m.group(1)), int(m.group(2)))


def parse_zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"not an IANA time zone: {name!r} (e.g. America/New_York, UTC)") from None


def parse_shifts(text: str) -> tuple[tuple[str, time], ...]:
    """"day=06:00,swing=14:00,grave=22:00" -> ((name, start), ...), in the order of the gaming
    day (the caller's `GamingCalendar` rotates them to begin at the day's start)."""
    shifts = []
    for part in text.split(","):
        name, sep, clock = part.strip().partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,31}", name.strip()):
            raise ValueError(f"a shift is NAME=HH:MM (NAME a word): {part.strip()!r}")
        shifts.append((name.strip(), parse_clock(clock)))
    names = [n for n, _ in shifts]
    if len(set(names)) != len(names):
        raise ValueError(f"shift names repeat: {text!r}")
    if len({c for _, c in shifts}) != len(shifts):
        raise ValueError(f"two shifts start at the same time: {text!r}")
    return tuple(shifts)


def _minutes(t: time) -> int:
    return t.hour * 60 + t.minute


@dataclass(frozen=True)
class GamingCalendar:
    """`zone` an IANA name, `day_start` local HH:MM, `shifts` (name, local start) pairs; one of
    the shifts must start at `day_start` (the gaming day's first shift)."""

    zone: str = "America/New_York"
    day_start: time = time(6, 0)
    shifts: tuple[tuple[str, time], ...] = (("day", time(6, 0)), ("swing", time(14, 0)), ("grave", time(22, 0)))
    _tz: ZoneInfo = field(init=False, repr=False, compare=False)
    _order: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_tz", parse_zone(self.zone))
        if not self.shifts:
            raise ValueError("at least one shift")
        if self.day_start not in {c for _, c in self.shifts}:
            raise ValueError(f"no shift starts at the gaming day's start {self.day_start:%H:%M}: "
                             f"{', '.join(f'{n}={c:%H:%M}' for n, c in self.shifts)}")
        start = _minutes(self.day_start)
        # Shifts in the order of the gaming day: minutes after the day's start.
        order = sorted(((_minutes(c) - start) % 1440, n, c) for n, c in self.shifts)
        object.__setattr__(self, "_order", tuple(order))

    # ------------------------------------------------------------ days

    def gaming_day(self, ts_ms: int) -> date:
        """The gaming day of an instant: its local date, the day before when the local time is
        before `day_start`."""
        local = datetime.fromtimestamp(ts_ms / 1000, self._tz)
        d = local.date()
        return d - timedelta(days=1) if local.time() < self.day_start else d

    def instant(self, d: date, t: time) -> int:
        """Epoch ms of local wall-clock `t` on `d` (a time a clock change skips is read with the
        offset before the change, PEP 495 fold=0)."""
        return int(datetime.combine(d, t, tzinfo=self._tz).timestamp() * 1000)

    def day_bounds(self, d: date) -> tuple[int, int]:
        """[start, end) of gaming day `d`, epoch ms."""
        return self.instant(d, self.day_start), self.instant(d + timedelta(days=1), self.day_start)

    def shift_names(self) -> tuple[str, ...]:
        return tuple(n for _, n, _ in self._order)

    def shift_bounds(self, d: date, name: str) -> tuple[int, int]:
        """[start, end) of shift `name` of gaming day `d`, epoch ms."""
        names = self.shift_names()
        if name not in names:
            raise ValueError(f"no shift {name!r}; shifts: {', '.join(names)}")
        i = names.index(name)
        offset, _, clock = self._order[i]
        start_day = d + timedelta(days=(_minutes(self.day_start) + offset) // 1440)
        start = self.instant(start_day, clock)
        if i + 1 == len(self._order):
            return start, self.day_bounds(d)[1]
        offset2, _, clock2 = self._order[i + 1]
        return start, self.instant(d + timedelta(days=(_minutes(self.day_start) + offset2) // 1440), clock2)

    def shift_of(self, ts_ms: int, d: date | None = None) -> str:
        """The shift of an instant (in its gaming day `d`, computed when not given)."""
        d = self.gaming_day(ts_ms) if d is None else d
        found = self._order[0][1]
        for _, name, _ in self._order:
            if ts_ms >= self.shift_bounds(d, name)[0]:
                found = name
        return found

    def local_label(self, ts_ms: int, fmt: str = "%H:%M") -> str:
        return datetime.fromtimestamp(ts_ms / 1000, self._tz).strftime(fmt)

    def iso(self, ts_ms: int) -> str:
        """The instant in local time with its offset, e.g. 2026-03-08T06:00:00-04:00."""
        return datetime.fromtimestamp(ts_ms / 1000, self._tz).isoformat(timespec="seconds")

    def describe(self) -> dict:
        return {"time_zone": self.zone, "day_start": f"{self.day_start:%H:%M}",
                "shifts": [{"name": n, "start": f"{c:%H:%M}"} for _, n, c in self._order]}


@dataclass(frozen=True)
class Period:
    """What a report covers: gaming days `first`..`last` (inclusive), or one `shift` of one day."""

    first: date
    last: date
    shift: str | None = None

    def __post_init__(self) -> None:
        if self.last < self.first:
            raise ValueError(f"the period ends ({self.last}) before it starts ({self.first})")
        if self.shift is not None and self.first != self.last:
            raise ValueError("a shift is reported for one gaming day")

    @property
    def kind(self) -> str:
        return "shift" if self.shift else ("day" if self.first == self.last else "range")

    def bounds(self, cal: GamingCalendar) -> tuple[int, int]:
        if self.shift:
            return cal.shift_bounds(self.first, self.shift)
        return cal.day_bounds(self.first)[0], cal.day_bounds(self.last)[1]

    def days(self) -> list[date]:
        return [self.first + timedelta(days=i) for i in range((self.last - self.first).days + 1)]

    def label(self) -> str:
        if self.shift:
            return f"gaming day {self.first.isoformat()}, {self.shift} shift"
        if self.first == self.last:
            return f"gaming day {self.first.isoformat()}"
        return f"gaming days {self.first.isoformat()} to {self.last.isoformat()}"


def utc_iso(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def calendar_of(zone: str, day_start: str, shifts: str | None = None) -> GamingCalendar:
    """A calendar from its text options (`report`'s and `ledger`'s --tz, --day-start, --shifts):
    without shifts, day, swing and grave, 8 hours each from the day's start."""
    start = parse_clock(day_start)
    parsed = parse_shifts(shifts) if shifts else \
        tuple((n, parse_clock(f"{(start.hour + 8 * i) % 24:02d}:{start.minute:02d}"))
              for i, n in enumerate(("day", "swing", "grave")))
    return GamingCalendar(zone, start, parsed)
