"""From a decoded output record to the ledger rows it makes: pure, no I/O, no clock.

`rows_of(record, partition, offset, calendar)` maps one record of an output topic (as
craps_streams.codec.decode_output gives it, with its "type") to (table name, row) pairs. The
gaming day and shift of a settlement are the report's (craps_streams/report/calendar.py: the
deciding event's time, in the casino's zone, from the day's start), computed here once so the
views group by plain columns on either database.

Of the table-events topic the ledger keeps only the openings (`TableOpened`: the Rules Submission a
table plays under from then on, which the report's lines are keyed by); `OPENING_MARK` tells the
other events from their bytes, undecoded.

A record of a type the ledger does not keep (the layout markers are the floor view's business, not
finance's, and their topic is not read) maps to no rows: its offset still moves, so it is consumed
once and never asked for again.
"""
from __future__ import annotations

import bisect
import json
from datetime import date
from functools import lru_cache
from operator import itemgetter
from typing import NamedTuple

from craps_streams.report.calendar import GamingCalendar

SETTLEMENT_FIELDS = ("id", "wager_id", "table_id", "position", "wager", "outcome", "stake_cents", "won_cents",
                     "paytable", "detail", "seq", "ts", "placed_seq")
REJECTION_FIELDS = ("id", "table_id", "seq", "ts", "reason", "message", "event_json", "raw", "topic", "partition",
                    "offset")
ALERT_FIELDS = ("id", "table_id", "seq", "ts", "alert", "shooter_id", "message")
_settlement_values = itemgetter(*SETTLEMENT_FIELDS)
_SETTLEMENT_KEYS = frozenset(("type", *SETTLEMENT_FIELDS))


# Every TableOpened's Avro bytes hold its type name; an event without them is no opening.
OPENING_MARK = b"TableOpened"


@lru_cache(maxsize=256)
def _shift_starts(calendar: GamingCalendar, day: date) -> tuple[list[int], tuple[str, ...]]:
    names = calendar.shift_names()
    return [calendar.shift_bounds(day, n)[0] for n in names], names


class _DaySpans:
    """The gaming day of a settlement's time, found by comparing it with the span [start, end) of
    the day last found (`calendar.gaming_day` converts every instant into the zone: half of
    `rows_of`'s time). The span is one tuple, replaced whole: a thread reading it never sees one
    day's start with another's end."""

    def __init__(self, calendar: GamingCalendar):
        self.calendar = calendar
        self.span: tuple = (0, 0, None)

    def day_of(self, ts: int) -> date:
        start, end, day = self.span
        if start <= ts < end:
            return day
        day = self.calendar.gaming_day(ts)
        self.span = (*self.calendar.day_bounds(day), day)
        return day


_day_spans = lru_cache(maxsize=16)(_DaySpans)


def gaming_day_of(calendar: GamingCalendar, ts: int) -> date:
    """`calendar.gaming_day(ts)`, by the span of the day last found (`_DaySpans`)."""
    return _day_spans(calendar).day_of(ts)


def shift_of(calendar: GamingCalendar, ts: int, day: date) -> str:
    """`calendar.shift_of(ts, day)`, with each gaming day's shift starts computed once (they were
    a third of the ledger's time per record)."""
    starts, names = _shift_starts(calendar, day)
    return names[max(0, bisect.bisect_right(starts, ts) - 1)]


class Row(NamedTuple):  # a tuple: made for every record, where a frozen dataclass's init cost a third of rows_of
    table: str
    values: dict


def rows_of(record: dict, partition: int, offset: int, calendar: GamingCalendar) -> list[Row]:
    """The rows one output record makes (none for a kind the ledger does not keep)."""
    kind = record.get("type")
    source = {"source_partition": partition, "source_offset": offset}
    if kind == "WagerSettled":
        ts = record["ts"]
        day = gaming_day_of(calendar, ts)
        if record.keys() == _SETTLEMENT_KEYS:  # its type and the fields alone: a copy less its type
            values = record.copy()
            del values["type"]
        else:
            values = dict(zip(SETTLEMENT_FIELDS, _settlement_values(record)))
        values["gaming_day"] = day
        values["shift"] = shift_of(calendar, ts, day)
        values["source_partition"] = partition
        values["source_offset"] = offset
        return [Row("settlements", values)]
    if kind == "EventRejected":
        values = {f: record.get(f) for f in REJECTION_FIELDS}
        if values["raw"] is not None:
            values["raw"] = bytes(values["raw"])
        return [Row("rejections", {**values, **source})]
    if kind == "SurveillanceAlerted":
        alert = Row("alerts", {**{f: record[f] for f in ALERT_FIELDS}, **source})
        # A wager named twice in one alert is one row: the pair is the key.
        wagers = dict.fromkeys(record.get("wager_ids") or ())
        return [alert, *(Row("alert_wagers", {"alert_id": record["id"], "wager_id": w}) for w in wagers)]
    if kind == "TableOpened":
        rules = record.get("rules")
        return [Row("table_openings", {"table_id": record["table_id"], "seq": record["seq"], "ts": record["ts"],
                                       "table_kind": record["table_kind"],
                                       "rules": None if rules is None else json.dumps(rules, sort_keys=True),
                                       **source})]
    return []
