"""The report from the ledger: the books `craps-streams report` keeps from a history, read from SQL.

`report_from_ledger(engine, settings, provenance)` gives the report `craps_streams.report.make_report`
gives from the history the ledger's rows came from: the same lines, to the cent, and the same
figures, because both hand the same books (`craps_streams.report.build.Collected`) to the one
function that turns books into a report (`craps_streams.report.figures.build_figures`: its tails,
its p values, its Bonferroni totals). What differs is where the books come from: here, the books
the ledger keeps as it writes (craps_streams/ledger/books.py: each line's money, its decisions by
total stake, its outcomes), read with SQLAlchemy Core on SQLite or PostgreSQL, instead of settling
the history again.

A report line is keyed by gaming day, shift, table, wager kind, paytable and reading. The ledger's
books are keyed by the first five (the gaming day and shift computed with the ledger's calendar,
which must be the report's); the reading is the Rules Submission's in force at the table when the
wager was settled: the table's last opening at or before the settlement's seq that the worker did
not refuse (the view openings_in_force). Each distinct Rules Submission is a regime, whose odds
(`craps_streams.odds`) give the reading. A book line spans the seqs `first_seq`..`last_seq`: when
the rules changed between them (a table reopened under another Submission within a shift), that
table's shift is read from its settlements instead, each under the opening in force at its seq.

Not in the ledger, so not in a report from it: the duplicates the history held, the events still
held behind a sequence gap at the end, the replay's counts of events read, and each table's hold
series through the period (the hold plots); the CSV files need none of them.
"""
from __future__ import annotations

import bisect
import json
import os
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import and_, case, func, or_, select, tuple_
from sqlalchemy.engine import Engine

from craps_streams.ledger import schema, views
from craps_streams.ledger.books import DICE_DECIDED, UNIT, sum_if, total
from craps_streams.report.books import Line
from craps_streams.report.build import HOUR_MS, Collected, HistorySeen, ReportSettings, add_hourly
from craps_streams.report.calendar import GamingCalendar, utc_iso
from craps_streams.report.days import SPILL_LINES, LeftDays, by_day
from craps_streams.report.noted import Noted
from craps_streams.report.figures import build_figures
from craps_streams.report.statistics import odds_of
from craps_streams.rules.hold import HoldLine
from craps_streams.rules.submission import DEFAULT_RULES, rules_from_record

s = schema.settlements
LEDGER_DAYS = 7  # gaming days of lines read at a time (`books`)


class LedgerCalendarMismatch(ValueError):
    """The report's calendar is not the one the ledger's gaming days were computed with."""


@dataclass(frozen=True)
class LedgerTally:
    """The replay's counts a report from history shows; a ledger holds outputs, not events read."""

    read: None = None
    applied: None = None
    rejected: int = 0
    duplicates: None = None
    held: None = None
    untagged: None = None


@dataclass(frozen=True)
class Opening:
    table_id: str
    seq: int
    ts: int
    table_kind: str
    rules_text: str | None


def _calendar_text(calendar: GamingCalendar) -> dict:
    # the form Ledger.bind_calendar stores
    return {"zone": calendar.zone, "day_start": f"{calendar.day_start:%H:%M}",
            "shifts": ",".join(f"{n}={c:%H:%M}" for n, c in calendar.shifts)}


def check_calendar(conn, calendar: GamingCalendar) -> None:
    stored = conn.execute(select(schema.calendar).where(schema.calendar.c.id == 1)).mappings().first()
    wanted = _calendar_text(calendar)
    if stored is not None and {k: stored[k] for k in wanted} != wanted:
        raise LedgerCalendarMismatch(
            f"the ledger's gaming days are computed with {{zone {stored['zone']}, day start {stored['day_start']}, "
            f"shifts {stored['shifts']}}}, the report asks for {{zone {wanted['zone']}, day start "
            f"{wanted['day_start']}, shifts {wanted['shifts']}}}: report with the ledger's calendar")


def openings_in_force(conn, tables: frozenset | None) -> list[Opening]:
    """Every opening the worker applied (the view openings_in_force), by table and seq."""
    o = views.openings_in_force.subquery()
    query = select(o)
    if tables is not None:
        query = query.where(o.c.table_id.in_(sorted(tables)))
    return [Opening(*row) for row in conn.execute(query.order_by(o.c.table_id, o.c.seq))]


class Regimes:
    """The distinct Rules Submissions the openings put in force, numbered (0: the defaults, for a
    settlement before its table's first opening), and the SQL expression giving a settlement's."""

    def __init__(self, openings: list[Opening]):
        self.rules = [DEFAULT_RULES]
        number: dict = {}
        self.of_opening: dict = {}
        for op in openings:
            key = op.rules_text
            if key not in number:
                number[key] = len(self.rules)
                self.rules.append(rules_from_record(None if key is None else json.loads(key)))
            self.of_opening[(op.table_id, op.seq)] = number[key]
        self.openings = openings
        self.seqs: dict = {}  # table -> its openings' seqs, ascending
        self.regimes: dict = {}  # table -> their regimes
        for op in openings:
            self.seqs.setdefault(op.table_id, []).append(op.seq)
            self.regimes.setdefault(op.table_id, []).append(self.of_opening[(op.table_id, op.seq)])

    def column(self):
        """CASE table_id WHEN ... THEN (the regime of the last opening at or before seq) ... END."""
        by_table: dict = {}
        for op in self.openings:
            by_table.setdefault(op.table_id, []).append((op.seq, self.of_opening[(op.table_id, op.seq)]))
        if not by_table:
            return s.c.seq * 0  # every settlement under the defaults (an expression: GROUP BY 0 is a position)
        whens = {}
        for table, seqs in by_table.items():
            # latest first: the first WHEN that holds is the opening in force
            whens[table] = case(*((s.c.seq >= seq, regime) for seq, regime in reversed(seqs)), else_=0)
        return case(whens, value=s.c.table_id, else_=0)

    def regime_of(self, table_id: str, first_seq: int, last_seq: int) -> int | None:
        """The regime of settlements of `table_id` from `first_seq` to `last_seq`; None when the
        rules in force changed between them."""
        seqs = self.seqs.get(table_id)
        if not seqs:
            return 0
        i = bisect.bisect_right(seqs, first_seq) - 1
        regime = self.regimes[table_id][i] if i >= 0 else 0
        j = bisect.bisect_right(seqs, last_seq) - 1
        if any(r != regime for r in self.regimes[table_id][i + 1:j + 1]):
            return None
        return regime

    def line_key(self, wager: str, paytable: str, regime: int, odds: dict) -> tuple:
        """(wager, paytable, reading), the report's line key, and the odds kept for it."""
        o = odds_of(wager, self.rules[regime])
        lk = (wager, paytable, o.reading)
        odds.setdefault(lk, o)
        return lk


def _place(c: Collected, lo_day, order: dict):
    """Where a (gaming day, shift) line belongs: the period's lines, the year's before it, or
    neither (as the report from history books by the deciding event's time)."""
    period = c.settings.period

    def place(day, shift: str) -> str | None:
        if period.first <= day <= period.last and (period.shift is None or shift == period.shift):
            return "period"
        if day >= lo_day and (day < period.first or (day == period.first and period.shift is not None
                                                      and order[shift] < order[period.shift])):
            return "before"
        return None
    return place


def books(conn, settings: ReportSettings) -> Collected:
    """The report's books of `settings.period`, read on `conn` (one transaction: one snapshot
    with a reader's engine): the ledger's books (craps_streams/ledger/books.py), and for a line
    whose settlements span a change of the rules in force, its table's shift from the settlements."""
    from datetime import date

    cal, period = settings.calendar, settings.period
    start, end = period.bounds(cal)
    last = period.last
    c = Collected(settings, start, end, cal.day_bounds(last.replace(day=1))[0],
                  cal.day_bounds(date(last.year, 1, 1))[0])
    # As the report from history: what is settled before the period counts toward the year and
    # month to date from the first of the last day's year; the period itself, whatever its year.
    lo_day = cal.gaming_day(min(start, c.year_start_ms))
    place = _place(c, lo_day, {n: i for i, n in enumerate(cal.shift_names())})
    check_calendar(conn, cal)
    regimes = Regimes(openings_in_force(conn, settings.tables))

    def book_line(where: str, day, shift: str, table_id: str, lk: tuple) -> Line:
        book, key = (c.before, (day, *lk)) if where == "before" else (c.lines, (day, shift, table_id, *lk))
        line = book.get(key)
        if line is None:
            line = book[key] = Line()
        return line

    # The lines a few gaming days at a time, each span's complete when its rows are read; the
    # period's past `SPILL_LINES` written out (report/days.py), as the pass over a history does.
    c.left = LeftDays()
    try:
        day = lo_day
        while day <= last:
            through = min(last, day + timedelta(days=LEDGER_DAYS - 1))
            _span(conn, c, settings, regimes, place, book_line, day, through)
            if len(c.lines) > SPILL_LINES:
                c.left.write_days(by_day(c.lines.items()))
                c.lines.clear()
            day = through + timedelta(days=1)

        # the gaming days as well as the instants: the settlements' (gaming_day, shift, table_id) index
        period_where = [s.c.gaming_day >= period.first, s.c.gaming_day <= period.last, s.c.ts >= start,
                        s.c.ts < end]
        if settings.tables is not None:
            period_where.append(s.c.table_id.in_(sorted(settings.tables)))
        hour = ((s.c.ts - c.start_ms) // HOUR_MS).label("hour")
        for row in conn.execute(select(s.c.table_id, hour, total(s.c.stake_cents).label("handle"))
                                .where(*period_where).group_by(s.c.table_id, hour)):
            add_hourly(c, row.table_id, row.hour, row.handle)
        _exceptions(conn, c, settings.tables)
        _rules_in_force(c, regimes)
        c.seen = _seen(conn)
        c.tally = LedgerTally(rejected=c.noted.rejections.count + c.noted.undated.count)
    except BaseException:
        c.left.close()
        raise
    return c


def _span(conn, c: Collected, settings: ReportSettings, regimes: Regimes, place, book_line, day, through) -> None:
    """The lines of the gaming days `day` to `through` (of those `place` keeps), and the period's
    outcomes on them."""
    period = settings.period
    t, st, oc = schema.line_totals, schema.line_stakes, schema.line_outcomes

    def chosen(table, first_day):
        where = [table.c.gaming_day >= max(first_day, day), table.c.gaming_day <= through]
        if settings.tables is not None:
            where.append(table.c.table_id.in_(sorted(settings.tables)))
        return where

    keyed: dict = {}  # (day, shift, table, wager, paytable) -> (place, line key)
    spanning: set = set()  # (day, shift, table) whose lines are read from the settlements
    rows = conn.execute(select(t).where(*chosen(t, day))).all()
    for row in rows:
        where = place(row.gaming_day, row.shift)
        if where is None:
            continue
        regime = regimes.regime_of(row.table_id, row.first_seq, row.last_seq)
        if regime is None:
            spanning.add((row.gaming_day, row.shift, row.table_id))
            continue
        keyed[(row.gaming_day, row.shift, row.table_id, row.wager, row.paytable)] = \
            (where, regimes.line_key(row.wager, row.paytable, regime, c.odds))
    for row in rows:
        got = keyed.get((row.gaming_day, row.shift, row.table_id, row.wager, row.paytable))
        if got is not None and (row.gaming_day, row.shift, row.table_id) not in spanning:
            _money(book_line(got[0], row.gaming_day, row.shift, row.table_id, got[1]), row.settled,
                   row.handle_cents, row.returned_cents, row.collected_cents, row.won_cents, row.wins, row.losses)
    for row in conn.execute(select(st).where(*chosen(st, day), st.c.decisions != 0)):
        got = keyed.get((row.gaming_day, row.shift, row.table_id, row.wager, row.paytable))
        if got is not None and (row.gaming_day, row.shift, row.table_id) not in spanning:
            line = book_line(got[0], row.gaming_day, row.shift, row.table_id, got[1])
            _decided(line, row.stake_cents, row.decisions, row.house_win_cents)
    for row in conn.execute(select(oc).where(*chosen(oc, period.first))):
        got = keyed.get((row.gaming_day, row.shift, row.table_id, row.wager, row.paytable))
        if got is not None and got[0] == "period" and (row.gaming_day, row.shift, row.table_id) not in spanning:
            counts = c.outcomes.setdefault(got[1], {})
            counts[row.unit] = counts.get(row.unit, 0) + row.wagers
    if spanning:
        _from_settlements(conn, c, regimes, place, book_line, spanning)



def _money(line: Line, settled: int, handle: int, returned: int, collected: int, won: int, wins: int,
           losses: int) -> None:
    line.money.merge(HoldLine(settled, handle, returned, collected, won, wins, losses, settled - wins - losses))


def _decided(line: Line, stake: int, decisions: int, house_win: int) -> None:
    line.decisions += decisions
    line.dice_handle_cents += stake * decisions
    line.dice_house_win_cents += house_win
    line.stakes[stake] = line.stakes.get(stake, 0) + decisions


def _from_settlements(conn, c: Collected, regimes: Regimes, place, book_line, spanning: set) -> None:
    """The lines of these (gaming day, shift, table)s from their settlements, each settlement
    under the rules in force at its seq."""
    regime = regimes.column().label("regime")
    keys = (s.c.gaming_day, s.c.shift, s.c.table_id, s.c.wager, s.c.paytable, regime)
    where = tuple_(s.c.gaming_day, s.c.shift, s.c.table_id).in_(sorted(spanning))
    lose = s.c.outcome == "lose"
    money = select(
        *keys, func.count().label("settled"), total(s.c.stake_cents).label("handle"),
        sum_if(~lose, s.c.stake_cents).label("returned"), sum_if(lose, s.c.stake_cents).label("collected"),
        total(s.c.won_cents).label("won"), sum_if(s.c.outcome == "win", 1).label("wins"),
        sum_if(lose, 1).label("losses"),
    ).where(where).group_by(*keys)
    decision = select(
        *keys, total(s.c.stake_cents).label("stake"),
        total(case((lose, s.c.stake_cents), else_=-s.c.won_cents)).label("win"),
    ).where(where, DICE_DECIDED).group_by(*keys, s.c.seq).subquery()
    dkeys = [decision.c[k.name] for k in keys]
    stakes = select(*dkeys, decision.c.stake, func.count().label("n"), total(decision.c.win).label("win")) \
        .group_by(*dkeys, decision.c.stake)
    unit = UNIT.label("unit")
    outcomes = select(*keys, unit, func.count().label("n")).where(where, DICE_DECIDED).group_by(*keys, unit)

    def line_of(row) -> tuple:
        lk = regimes.line_key(row.wager, row.paytable, row.regime, c.odds)
        at = place(row.gaming_day, row.shift)
        return at, book_line(at, row.gaming_day, row.shift, row.table_id, lk), lk

    for row in conn.execute(money):
        _money(line_of(row)[1], row.settled, row.handle, row.returned, row.collected, row.won, row.wins, row.losses)
    for row in conn.execute(stakes):
        _decided(line_of(row)[1], row.stake, row.n, row.win)
    for row in conn.execute(outcomes):
        at, _, lk = line_of(row)
        if at == "period":
            counts = c.outcomes.setdefault(lk, {})
            counts[row.unit] = counts.get(row.unit, 0) + row.n


def _exceptions(conn, c: Collected, tables: frozenset | None) -> None:
    """The period's rejections (and every undated one) and alerts, as the report from history lists them."""
    r, a = schema.rejections, schema.alerts
    dated = and_(r.c.ts >= c.start_ms, r.c.ts < c.end_ms)
    # A report of some tables reads only their events: the undated rejections (no table) are not theirs.
    rejected = or_(r.c.ts == 0, r.c.table_id == "", dated) if tables is None else \
        and_(r.c.table_id.in_(sorted(tables)), or_(r.c.ts == 0, dated))
    # counted and the first of each kept as they are read (report/noted.py), not all held
    c.noted = noted = Noted()
    for row in conn.execute(select(r.c.id, r.c.table_id, r.c.seq, r.c.ts, r.c.reason, r.c.message).where(rejected)):
        noted.rejected(row)
    alerts = select(a.c.id, a.c.table_id, a.c.seq, a.c.ts, a.c.alert, a.c.shooter_id, a.c.message) \
        .where(a.c.ts >= c.start_ms, a.c.ts < c.end_ms)
    if tables is not None:
        alerts = alerts.where(a.c.table_id.in_(sorted(tables)))
    for row in conn.execute(alerts):
        noted.alerted(row)


def _rules_in_force(c: Collected, regimes: Regimes) -> None:
    """Each table's openings in force in the period: the last before it, and those in it."""
    by_table: dict = {}
    for op in regimes.openings:
        if op.ts < c.end_ms:
            by_table.setdefault(op.table_id, []).append(op)
    for table, ops in by_table.items():
        kept = [op for i, op in enumerate(ops) if i + 1 == len(ops) or ops[i + 1].ts > c.start_ms]
        c.rules[table] = [(op.ts, op.table_kind, regimes.rules[regimes.of_opening[(table, op.seq)]].to_record())
                          for op in kept]


def _seen(conn) -> HistorySeen:
    """The time the ledger's rows span (for the to-date lines' coverage): from the first opening."""
    o = schema.table_openings
    first, last = conn.execute(select(func.min(o.c.ts), func.max(o.c.ts))).one()
    if first is None:
        first, last = conn.execute(select(func.min(s.c.ts), func.max(s.c.ts))).one()
    return HistorySeen(items=0, min_ts=first, max_ts=last)


def ledger_block(conn) -> dict:
    """The provenance of a report from the ledger: the database (password hidden) and the
    positions of the topics its rows came from."""
    t = schema.consumed_offsets
    positions = {f"{row.topic}/{row.partition}": row.next_offset
                 for row in conn.execute(select(t).order_by(t.c.topic, t.c.partition))}
    return {"kind": "ledger", "database": conn.engine.url.render_as_string(hide_password=True),
            "next_offsets": positions}


class LedgerUnreadable(ValueError):
    """The ledger's database could not be read (away, refused, not a ledger)."""


def report_from_url(url: str, settings: ReportSettings, provenance: dict) -> dict:
    """`report_from_ledger` on the ledger database at `url`. LedgerUnreadable when it cannot be
    read, LedgerCalendarMismatch when its calendar is not the report's."""
    from sqlalchemy.exc import SQLAlchemyError

    from craps_streams.ledger.store import open_engine

    engine = open_engine(url, reader=True)
    database = engine.url.database
    if engine.dialect.name == "sqlite" and database and not os.path.exists(database):
        raise LedgerUnreadable(f"no ledger at {database} (craps-streams ledger makes it)")  # not an empty file made
    try:
        return report_from_ledger(engine, settings, provenance)
    except SQLAlchemyError as e:
        raise LedgerUnreadable(f"cannot read the ledger {engine.url.render_as_string(hide_password=True)}: "
                               f"{getattr(e, 'orig', None) or e}") from None
    finally:
        engine.dispose()


def report_from_ledger(engine: Engine, settings: ReportSettings, provenance: dict) -> dict:
    """The report of `settings.period` from the ledger. `provenance` is the report's provenance
    block without its history, which is the ledger's (`ledger_block`). LedgerCalendarMismatch
    when the report's calendar is not the ledger's."""
    with engine.connect() as conn:
        collected = books(conn, settings)
        history = ledger_block(conn)
    try:
        seen = collected.seen
        history.update(first_event_time=utc_iso(seen.min_ts) if seen.min_ts is not None else None,
                       last_event_time=utc_iso(seen.max_ts) if seen.max_ts is not None else None)
        return build_figures(collected, {"history": history, **provenance})
    finally:
        collected.left.close()  # the lines written out (report/days.py)
