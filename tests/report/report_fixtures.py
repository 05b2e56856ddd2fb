"""Floors for the report tests: signed simulated histories and reports made from them."""
from __future__ import annotations

from datetime import date, datetime, time

from craps_streams.authenticity import TableSigner, TagCheck, sign_record
from craps_streams.codec import to_json_line
from craps_streams.replay.engine import Replay, json_lines
from craps_streams.report import GamingCalendar, Period, ReportSettings, make_report
from craps_streams.rules import WagerSettled
from craps_streams.sim.floor import floor_events
from tests.authenticity.authenticity_keys import ring_for

TABLES = [f"T{n:03d}" for n in range(1, 5)]
RING = ring_for(TABLES)
NY = GamingCalendar("America/New_York", time(6, 0))
MONEY = ("wagers", "handle_cents", "paid_cents", "returned_cents", "collected_cents", "house_win_cents")


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def floor(tables: int, hours: float, start_ms: int, seed: int = 3, bad_rate: float = 0.0) -> list:
    """Signed records (dicts; torn lines as str) of a simulated floor."""
    signer = TableSigner(RING)
    return [r if type(r) is str else sign_record(signer, r) for r in floor_events(tables, hours, seed, bad_rate, start_ms)]


def write(path, records) -> str:
    path.write_text("".join((r if type(r) is str else to_json_line(r)) + "\n" for r in records))
    return str(path)


def report(path: str, first: date, last: date | None = None, shift: str | None = None, cal=NY, jobs: int = 1,
           **kw) -> dict:
    settings = ReportSettings(cal, Period(first, last or first, shift), **kw)
    return make_report(settings, path, tags=TagCheck(RING), ring=RING, jobs=jobs)


def settlements(records) -> list[WagerSettled]:
    """Every settlement of the history, by the replay (the oracle the report must agree with)."""
    replay = Replay(tags=TagCheck(RING))
    out = []
    for record, where in json_lines([r if type(r) is str else to_json_line(r) for r in records], "floor"):
        out += [o for o in replay.feed_record(record, where) if type(o) is WagerSettled]
    return out


def money(row: dict) -> tuple:
    return tuple(row[k] for k in MONEY)


def summed(rows) -> tuple:
    rows = list(rows)
    return tuple(sum(r[k] for r in rows) for k in MONEY)
