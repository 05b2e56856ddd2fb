"""The report from the ledger: the lines `craps-streams report` books from a history, summed in SQL.

`report_from_ledger(engine, settings)` gives the report `craps_streams.report.make_report` gives
from the history the ledger's rows came from: the same lines, to the cent, and the same figures,
because both hand the same books (`craps_streams.report.build.Collected`) to the one function that
turns books into a report (`craps_streams.report.figures.build_figures`: its tails, its p values,
its Bonferroni totals). What differs is only where the books come from: here, a few GROUP BY
statements over `settlements` (SQLAlchemy Core, the same on SQLite and PostgreSQL), instead of
settling the history again.

A report line is keyed by gaming day, shift, table, wager kind, paytable and reading. The first
five are columns of `settlements` (the gaming day and shift computed with the ledger's calendar,
which must be the report's); the reading is the Rules Submission's, in force at the table when
the wager was settled: the table's last opening (`table_openings`) at or before the settlement's
seq that the worker did not reject (no `rejections` row of that table and seq). Each distinct
Rules Submission is a regime; the statements group by regime, and the regime's odds
(`craps_streams.odds`) give the reading.

A line's statistics need its decisions: the dice-decided settlements of one table, seq, wager kind
and paytable are one decision (`craps_streams.report.books.book_group`); the statements group them
so, then count the decisions of each total stake.

Not in the ledger, so not in a report from it: the duplicates the history held, the events still
held behind a sequence gap at the end, the replay's counts of events read, and each table's hold
series through the period (the hold plots); the CSV files need none of them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy import BigInteger, and_, case, cast, func, not_, or_, select
from sqlalchemy.engine import Engine

from craps_streams.ledger import schema, views
from craps_streams.report.books import SURRENDER_DETAIL_END, TABLE_CLOSED_DETAIL, Line
from craps_streams.report.build import HOUR_MS, Collected, HistorySeen, ReportSettings
from craps_streams.report.calendar import GamingCalendar, utc_iso
from craps_streams.report.figures import build_figures
from craps_streams.report.statistics import odds_of
from craps_streams.rules.submission import DEFAULT_RULES, rules_from_record

s = schema.settlements


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

    def line_key(self, wager: str, paytable: str, regime: int, odds: dict) -> tuple:
        """(wager, paytable, reading), the report's line key, and the odds kept for it."""
        o = odds_of(wager, self.rules[regime])
        lk = (wager, paytable, o.reading)
        odds.setdefault(lk, o)
        return lk


def _dice_decided():
    # craps_streams.report.books.decided_by_dice, as SQL
    return or_(s.c.outcome != "push",
               not_(or_(s.c.detail == TABLE_CLOSED_DETAIL, s.c.detail.like("%" + SURRENDER_DETAIL_END))))


def _total(value):
    # PostgreSQL sums BIGINT as NUMERIC (a Decimal in Python): cents stay integers
    return cast(func.coalesce(func.sum(value), 0), BigInteger)


def _sum_if(condition, value):
    return _total(case((condition, value), else_=0))


def collected_from_ledger(engine: Engine, settings: ReportSettings) -> Collected:
    """The report's books of `settings.period` from the ledger's rows."""
    with engine.connect() as conn:
        return books(conn, settings)


def books(conn, settings: ReportSettings) -> Collected:
    """The report's books of `settings.period`, read on `conn` (one transaction: one snapshot
    with a reader's engine)."""
    from datetime import date

    cal, period = settings.calendar, settings.period
    start, end = period.bounds(cal)
    last = period.last
    c = Collected(settings, start, end, cal.day_bounds(last.replace(day=1))[0],
                  cal.day_bounds(date(last.year, 1, 1))[0])
    # As the report from history: what is settled before the period counts toward the year and
    # month to date from the first of the last day's year; the period itself, whatever its year.
    lo = min(start, c.year_start_ms)
    check_calendar(conn, cal)
    openings = openings_in_force(conn, settings.tables)
    regimes = Regimes(openings)
    regime = regimes.column().label("regime")
    where = [s.c.ts >= lo, s.c.ts < end]
    if settings.tables is not None:
        where.append(s.c.table_id.in_(sorted(settings.tables)))
    # Before the period a line is (gaming day, kind): no table, no shift. (Labels of their own:
    # PostgreSQL reads a GROUP BY name as the input column first.)
    before = case((s.c.ts < start, 1), else_=0).label("early")
    table = case((s.c.ts < start, ""), else_=s.c.table_id).label("line_table")
    shift = case((s.c.ts < start, ""), else_=s.c.shift).label("line_shift")
    keys = (before, s.c.gaming_day, shift, table, s.c.wager, s.c.paytable, regime)
    lose = s.c.outcome == "lose"
    money = select(
        *keys, func.count().label("settled"), _total(s.c.stake_cents).label("handle"),
        _sum_if(~lose, s.c.stake_cents).label("returned"), _sum_if(lose, s.c.stake_cents).label("collected"),
        _total(s.c.won_cents).label("won"), _sum_if(s.c.outcome == "win", 1).label("wins"),
        _sum_if(lose, 1).label("losses"),
    ).where(*where).group_by(*keys)
    # one row per decision by the dice: its stakes and its house win
    decision = select(
        *keys, _total(s.c.stake_cents).label("stake"),
        _total(case((lose, s.c.stake_cents), else_=-s.c.won_cents)).label("win"),
    ).where(*where, _dice_decided()).group_by(*keys, s.c.table_id, s.c.seq).subquery()
    dkeys = [decision.c[k.name] for k in keys]
    stakes = select(*dkeys, decision.c.stake, func.count().label("n"), _total(decision.c.win).label("win")) \
        .group_by(*dkeys, decision.c.stake)

    lines_by_regime: dict = {}

    def line_of(row) -> Line:
        key = (row.early, row.gaming_day, row.line_shift, row.line_table, row.wager, row.paytable, row.regime)
        line = lines_by_regime.get(key)
        if line is None:
            line = lines_by_regime[key] = Line()
        return line

    for row in conn.execute(money):
        m = line_of(row).money
        m.settled += row.settled
        m.handle_cents += row.handle
        m.returned_cents += row.returned
        m.collected_cents += row.collected
        m.won_cents += row.won
        m.wins += row.wins
        m.losses += row.losses
        m.pushes += row.settled - row.wins - row.losses
    for row in conn.execute(stakes):
        line = line_of(row)
        line.decisions += row.n
        line.dice_handle_cents += row.stake * row.n
        line.dice_house_win_cents += row.win
        line.stakes[row.stake] = line.stakes.get(row.stake, 0) + row.n

    for (is_before, day, shift_name, table_id, wager, paytable, reg), line in lines_by_regime.items():
        lk = regimes.line_key(wager, paytable, reg, c.odds)
        book, key = (c.before, (day, *lk)) if is_before else (c.lines, (day, shift_name, table_id, *lk))
        got = book.get(key)
        if got is None:
            book[key] = line
        else:
            got.merge(line)

    period_where = [s.c.ts >= start, s.c.ts < end, *where[2:]]
    _plots(conn, c, regimes, regime, period_where)
    _exceptions(conn, c, settings.tables)
    _rules_in_force(c, regimes)
    c.seen = _seen(conn)
    c.tally = LedgerTally(rejected=len(c.rejections))
    return c


def _plots(conn, c: Collected, regimes: Regimes, regime, where: list) -> None:
    """Handle by table and hour, and the outcomes per unit staked against the odds, of the period."""
    hour = ((s.c.ts - c.start_ms) // HOUR_MS).label("hour")
    for row in conn.execute(select(s.c.table_id, hour, _total(s.c.stake_cents).label("handle"))
                            .where(*where).group_by(s.c.table_id, hour)):
        c.hourly[(row.table_id, row.hour)] = row.handle
    # craps_streams.report.books.unit_result, as SQL
    unit = case((s.c.outcome == "lose", 1), (s.c.outcome == "push", 0),
                else_=-(s.c.won_cents // s.c.stake_cents)).label("unit")
    for row in conn.execute(select(s.c.wager, s.c.paytable, regime, unit, func.count().label("n"))
                            .where(*where, _dice_decided()).group_by(s.c.wager, s.c.paytable, regime, unit)):
        counts = c.outcomes.setdefault(regimes.line_key(row.wager, row.paytable, row.regime, c.odds), {})
        counts[row.unit] = counts.get(row.unit, 0) + row.n


def _exceptions(conn, c: Collected, tables: frozenset | None) -> None:
    """The period's rejections (and every undated one) and alerts, as the report from history lists them."""
    r, a = schema.rejections, schema.alerts
    dated = and_(r.c.ts >= c.start_ms, r.c.ts < c.end_ms)
    # A report of some tables reads only their events: the undated rejections (no table) are not theirs.
    rejected = or_(r.c.ts == 0, r.c.table_id == "", dated) if tables is None else \
        and_(r.c.table_id.in_(sorted(tables)), or_(r.c.ts == 0, dated))
    c.rejections = conn.execute(select(r.c.id, r.c.table_id, r.c.seq, r.c.ts, r.c.reason, r.c.message)
                                .where(rejected)).all()
    alerts = select(a.c.id, a.c.table_id, a.c.seq, a.c.ts, a.c.alert, a.c.shooter_id, a.c.message) \
        .where(a.c.ts >= c.start_ms, a.c.ts < c.end_ms)
    if tables is not None:
        alerts = alerts.where(a.c.table_id.in_(sorted(tables)))
    c.alerts = conn.execute(alerts).all()


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
    seen = collected.seen

    history.update(first_event_time=utc_iso(seen.min_ts) if seen.min_ts is not None else None,
                   last_event_time=utc_iso(seen.max_ts) if seen.max_ts is not None else None)
    return build_figures(collected, {"history": history, **provenance})
