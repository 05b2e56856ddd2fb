"""The period's exceptions as a report's pass keeps them: every one counted, the first `LISTED` of
each list kept.

The report lists at most `LISTED` of each kind of exception (rejections, undated rejections,
alerts, forged events, sequence faults, duplicates: report/figures.py `exceptions`) and counts
them all. A year of 300 tables raises some 700,000 alerts; kept whole until the figures, they
were most of a range report's memory after its lines. So each list keeps its first `LISTED` by
the order the report lists them in (`Listed`: sorted and cut whenever it holds twice as many),
with its counts: the same listing and counts as keeping every one, as ties keep the order they
were met in (the sort is stable) and a part of the floor booked in a job adds its lists after the
parts before it (`merge`).
"""
from __future__ import annotations

from craps_streams.authenticity.tags import REASONS as AUTHENTICITY_REASONS

LISTED = 2000  # exceptions listed one by one (all are counted)
SEQUENCE_ALERTS = ("sequence_gap", "sequence_resumed")


def when(o) -> tuple:
    """A dated exception's place in the listing: its time, table, seq and id."""
    return o.ts, o.table_id, o.seq, o.id


def by_id(o) -> str:
    return o.id


def reason(o) -> str:
    return o.reason


def alert(o) -> str:
    return o.alert


def duplicate_when(d: tuple) -> tuple:
    """A duplicate's (table, seq, ts) in the listing's order: time, table, seq."""
    return d[2], d[0], d[1]


class Listed:
    """One list of exceptions: `count` of them, `by` category (where `category` is given), and the
    first `LISTED` by `order` (`first`)."""

    __slots__ = ("order", "category", "count", "by", "items")

    def __init__(self, order, category=None):
        self.order = order
        self.category = category
        self.count = 0
        self.by: dict = {}
        self.items: list = []

    def add(self, o) -> None:
        self.count += 1
        if self.category is not None:
            k = self.category(o)
            self.by[k] = self.by.get(k, 0) + 1
        self.items.append(o)
        if len(self.items) > 2 * LISTED:
            self._cut()

    def _cut(self) -> None:
        self.items.sort(key=self.order)
        del self.items[LISTED:]

    def merge(self, other: "Listed") -> None:
        """Another part's list, met after this one's."""
        self.count += other.count
        for k, n in other.by.items():
            self.by[k] = self.by.get(k, 0) + n
        self.items += other.items
        if len(self.items) > 2 * LISTED:
            self._cut()

    def first(self) -> list:
        """The first `LISTED`, in order."""
        self._cut()
        return self.items

    def __eq__(self, other) -> bool:
        if not isinstance(other, Listed):
            return NotImplemented
        return (self.count, self.by, self.first()) == (other.count, other.by, other.first())

    __hash__ = None


class Noted:
    """The period's exceptions: rejections (`rejected`: dated ones, undated ones, the forged among
    the dated), alerts (`alerted`: the sequence faults among them), duplicates (`duplicate`)."""

    __slots__ = ("rejections", "undated", "forged", "alerts", "sequence", "duplicates")

    def __init__(self):
        self.rejections = Listed(when, reason)
        self.undated = Listed(by_id, reason)
        self.forged = Listed(when)
        self.alerts = Listed(when, alert)
        self.sequence = Listed(when, alert)
        self.duplicates = Listed(duplicate_when)

    def rejected(self, o) -> None:
        """A rejection: dated (a time and a table: on its claimed gaming day) or not."""
        if o.ts and o.table_id:
            self.rejections.add(o)
            if o.reason in AUTHENTICITY_REASONS:
                self.forged.add(o)
        else:
            self.undated.add(o)

    def alerted(self, a) -> None:
        self.alerts.add(a)
        if a.alert in SEQUENCE_ALERTS:
            self.sequence.add(a)

    def duplicate(self, d: tuple) -> None:
        """A duplicate's (table, seq, ts)."""
        self.duplicates.add(d)

    def merge(self, other: "Noted") -> None:
        for name in self.__slots__:
            getattr(self, name).merge(getattr(other, name))

    @classmethod
    def of(cls, rejections, alerts, duplicates) -> "Noted":
        """The lists of another source of the same exceptions (the ledger's)."""
        noted = cls()
        for o in rejections:
            noted.rejected(o)
        for a in alerts:
            noted.alerted(a)
        for d in duplicates:
            noted.duplicate(d)
        return noted

    def __eq__(self, other) -> bool:
        if not isinstance(other, Noted):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    __hash__ = None
