"""The report itself, from what the pass booked: rows per grain, floor totals, month-to-date and
year-to-date, the exception section, the Rules Submissions in force, the plots' data.

Grains (each a CSV file, docs/reports.md lists the columns):

    kinds   gaming day x table x wager kind x paytable (x reading)   the tail of the line itself
    tables  gaming day x table                                      Bonferroni over its kinds
    shifts  gaming day x shift x table                              Bonferroni over its kinds
    floor   scope (a gaming day, the period, month to date, year to date) x wager kind x paytable,
            and the scope's total ("all")                           the tail; the total Bonferroni

The result is plain data (dicts, lists, numbers, strings), written as JSON as it is.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from craps_streams.report.books import Line
from craps_streams.report.build import Collected, hours_of
from craps_streams.report.calendar import utc_iso
from craps_streams.report.days import day_lines
from craps_streams.report.noted import Noted
from craps_streams.report.rows import ROWS_HELD, Discarded, RowFile
from craps_streams.jobs import in_processes
from craps_streams.report.statistics import NO_TAIL, Tail, bonferroni, line_tail, spectra_kept
from craps_streams.rules.board import board_of_record
from craps_streams.rules.wording import table_kind_words
from craps_streams.surveillance.tails import unit_distribution

FIGURES = ("wagers", "decisions", "handle_cents", "paid_cents", "returned_cents", "collected_cents",
           "house_win_cents", "hold_percent", "theoretical_hold_percent", "expected_house_win_cents",
           "p_low", "p_high", "p_value", "tail_method", "investigate")
KIND_KEYS = ("gaming_day", "table_id", "wager", "paytable", "reading")
TABLE_KEYS = ("gaming_day", "table_id")
SHIFT_KEYS = ("gaming_day", "shift", "table_id")
FLOOR_KEYS = ("scope", "wager", "paytable", "reading")
COLUMNS = {"kinds": KIND_KEYS + FIGURES, "tables": TABLE_KEYS + FIGURES, "shifts": SHIFT_KEYS + FIGURES,
           "floor": FLOOR_KEYS + FIGURES}
LATTICE_DAYS_KINDS = 7  # the kind lines' tails use the lattice in reports of up to this many days
# With --jobs, the lines' tails are computed in the jobs where at least this many lines take the
# lattice (`shares_tails`): a lattice line's tails take a fraction of a millisecond to tens of
# milliseconds, a line by its Chernoff bounds some 30 microseconds.
SHARED_LATTICE_LINES = 2000


def percent(numerator, handle: int) -> float | None:
    """100 x numerator / handle from the exact cents (an int, or a Fraction of theory), rounded to
    4 decimals (None without handle). Python divides two integers correctly rounded, as
    `float(Fraction)` does, so the quotient of the integers is the exact ratio's nearest float
    without a Fraction made for it (a report has one per row and plot point)."""
    if not handle:
        return None
    if type(numerator) is int:
        return round(numerator * 100 / handle, 4)
    q = Fraction(numerator)
    return round(q.numerator * 100 / (q.denominator * handle), 4)


def _merged(lines) -> Line:
    out = Line()
    for line in lines:
        out.merge(line)
    return out


def _money(line: Line, expected: Fraction) -> dict:
    m = line.money
    return {
        "wagers": m.settled, "decisions": line.decisions, "handle_cents": m.handle_cents,
        "paid_cents": m.won_cents, "returned_cents": m.returned_cents, "collected_cents": m.collected_cents,
        "house_win_cents": m.house_win_cents, "hold_percent": percent(m.house_win_cents, m.handle_cents),
        "theoretical_hold_percent": percent(expected, m.handle_cents),
        "expected_house_win_cents": round(float(expected), 2),
    }


class Rows:
    def __init__(self, collected: Collected, tail=line_tail):
        self.c = collected
        self.level = collected.settings.investigate_at
        self.tail = tail  # (odds, stakes, house win, lattice) -> Tail

    def line_row(self, lk: tuple, line: Line, lattice: bool = True) -> dict:
        odds = self.c.odds[lk]
        row = _money(line, odds.expected_house_win(line.money.handle_cents))
        tail = self.tail(odds, line.stakes, line.dice_house_win_cents, lattice)
        row.update(p_low=tail.p_low, p_high=tail.p_high, p_value=tail.p,
                   tail_method=tail.method,
                   investigate=tail.p <= self.level)
        return row

    def total_row(self, parts: list[tuple[tuple, Line]], part_ps: list[float]) -> dict:
        line = _merged(line for _, line in parts)
        expected = sum((self.c.odds[lk].expected_house_win(line.money.handle_cents) for lk, line in parts),
                       Fraction(0))
        row = _money(line, expected)
        p = bonferroni(part_ps)
        row.update(p_low=None, p_high=None, p_value=p, tail_method=f"bonferroni_{len(part_ps)}",
                   investigate=p <= self.level)
        return row


class _Noting(Rows):
    """Rows that only ask for their lines' tails (`tails_in_processes`): no money, no totals."""

    def line_row(self, lk: tuple, line: Line, lattice: bool = True) -> dict:
        self.tail(self.c.odds[lk], line.stakes, line.dice_house_win_cents, lattice)
        return {"p_value": NO_TAIL.p}

    def total_row(self, parts: list[tuple[tuple, Line]], part_ps: list[float]) -> dict:
        return {}


@dataclass(slots=True)
class Grains:
    """What the figures are made of, read a gaming day at a time (`_figures`): the period's lines,
    those held (`Collected.lines`) and those written out (`Collected.left`, days.py), and how many
    lines of each grain take the lattice."""

    days: list  # the period's gaming days, in order
    lines: int  # the period's lines (written out in parts: each part counted)
    kind_lines: int  # its lines merged over shifts, where none was written out (else `lines`)
    line_keys: int  # the wager kinds and paytables of its lines and those before it
    lattice_kinds: bool
    lattice_shifts: bool


def grains(c: Collected) -> Grains:
    # The lattice (statistics.py) for every line of a day; for the kind lines of up to a week; for
    # the floor's lines always: a month has tens of thousands of table lines.
    days = c.settings.period.days()
    held = len(c.lines)
    written = c.left.written if c.left is not None else 0
    kind_lines = len({(day, table, *lk) for day, shift, table, *lk in c.lines}) if not written else held + written
    return Grains(days, held + written, kind_lines, len(c.odds), len(days) <= LATTICE_DAYS_KINDS, len(days) == 1)


def _day(c: Collected, day, order: dict) -> tuple[list, list, list]:
    """A gaming day's lines by grain: its kind lines ((table, line key), Line merged over shifts),
    sorted; its shifts ((shift, table), [(line key, Line)] sorted), in shift, table order; and
    its floor lines [(line key, Line merged over tables and shifts)], sorted."""
    kinds: dict = {}
    by_shift: dict = {}
    floor: dict = {}
    for (_, shift, table, *lk), line in day_lines(c.lines, c.left, day).items():
        lk = tuple(lk)
        kinds.setdefault((table, lk), Line()).merge(line)
        by_shift.setdefault((shift, table), []).append((lk, line))
        floor.setdefault(lk, Line()).merge(line)
    shifts = [(key, sorted(parts)) for key, parts in sorted(by_shift.items(), key=lambda kv: (order[kv[0][0]], kv[0][1]))]
    return sorted(kinds.items()), shifts, sorted(floor.items())


def _figures(c: Collected, rows: Rows, g: Grains, out: tuple) -> None:
    """The rows of the four grains, appended to `out` (kinds, tables, shifts, floor: lists or
    rows.py's `RowFile`s); a gaming day at a time (its lines read then: days.py), the floor's
    longer scopes (the period, month to date, year to date) summed from its days' lines, which
    merge by adding."""
    cal, period = c.settings.calendar, c.settings.period
    order = {n: i for i, n in enumerate(cal.shift_names())}
    last = period.last
    month, year = last.replace(day=1), last.replace(month=1, day=1)
    # (scope, its first gaming day): the period's own scope only for a range
    scopes = ((("period", period.first),) if period.kind == "range" else ()) + \
        (("month_to_date", month), ("year_to_date", year))
    longer: dict = {name: {} for name, _ in scopes}
    for (day, *lk), line in c.before.items():  # before the period: month and year to date only
        for name, first in scopes:
            if day >= first:
                longer[name].setdefault(tuple(lk), Line()).merge(line)
    kind_rows, table_rows, shift_rows, floor_rows = out

    def floor_scope(name: str, lines) -> None:
        parts, ps = [], []
        for lk, line in lines:
            row = rows.line_row(lk, line)
            floor_rows.append({"scope": name, "wager": lk[0], "paytable": lk[1], "reading": lk[2], **row})
            parts.append((lk, line))
            ps.append(row["p_value"])
        floor_rows.append({"scope": name, "wager": "all", "paytable": "", "reading": "",
                           **rows.total_row(parts, ps)})

    for day in g.days:
        kinds, shifts, floor = _day(c, day, order)
        iso = day.isoformat()
        by_table: dict = {}
        for (table, lk), line in kinds:
            row = rows.line_row(lk, line, g.lattice_kinds)
            kind_rows.append({"gaming_day": iso, "table_id": table, "wager": lk[0], "paytable": lk[1],
                              "reading": lk[2], **row})
            by_table.setdefault(table, []).append((lk, line, row["p_value"]))
        for table, parts in sorted(by_table.items()):
            table_rows.append({"gaming_day": iso, "table_id": table,
                               **rows.total_row([(lk, line) for lk, line, _ in parts], [p for *_, p in parts])})
        for (shift, table), parts in shifts:
            ps = [rows.line_row(lk, line, g.lattice_shifts)["p_value"] for lk, line in parts]
            shift_rows.append({"gaming_day": iso, "shift": shift, "table_id": table, **rows.total_row(parts, ps)})
        floor_scope(f"day:{iso}", floor)
        for name, first in scopes:
            if day >= first:
                into = longer[name]
                for lk, line in floor:
                    into.setdefault(lk, Line()).merge(line)
    for name, _ in scopes:
        floor_scope(name, sorted(longer[name].items()))


def build_figures(c: Collected, provenance: dict, jobs: int = 1) -> dict:
    """The report from what the pass booked; with `jobs` > 1, where the lines' tails are long to
    compute (`shares_tails`), they are computed in that many processes first
    (`tails_in_processes`). The lattice's transforms are kept while the tails are computed
    (`spectra_kept`: many lines share them). Each grain's rows are a list, or past `ROWS_HELD`
    rows in all a `RowFile` (rows.py: the rows on disk, read back by each pass over them)."""
    g = grains(c)
    budget = [ROWS_HELD]
    out = tuple(RowFile(budget) for _ in range(4))
    with spectra_kept():
        tail = tails_in_processes(c, g, jobs) if jobs > 1 and shares_tails(g) else line_tail
        _figures(c, Rows(c, tail), g, out)
    kind_rows, table_rows, shift_rows, floor_rows = (grain.rows() for grain in out)
    s = c.settings
    cal, period = s.calendar, s.period
    start, end = c.start_ms, c.end_ms
    seen = c.seen

    def coverage(first_ms: int) -> dict:
        covered = seen.min_ts is not None and seen.min_ts <= first_ms
        return {"from": cal.iso(first_ms), "through": cal.iso(end),
                "history_from": cal.iso(seen.min_ts) if seen.min_ts is not None else None,
                "complete": covered}

    boards: dict = {}

    def board(record: dict) -> dict:
        """`board_of_record`, once a record (the pass keeps one record of each Rules Submission)."""
        known = boards.get(id(record))
        if known is None:
            known = boards[id(record)] = (record, board_of_record(record))
        return known[1]

    report = {
        "title": f"Side wagers: {period.label()}",
        "period": {"kind": period.kind, "first_gaming_day": period.first.isoformat(),
                   "last_gaming_day": period.last.isoformat(), "shift": period.shift,
                   "start": cal.iso(start), "end": cal.iso(end), "start_utc": utc_iso(start), "end_utc": utc_iso(end),
                   "start_ms": start, "end_ms": end, "hours": round((end - start) / 3_600_000, 2),
                   **cal.describe()},
        "investigate_at": s.investigate_at,
        "month_to_date": coverage(c.month_start_ms),
        "year_to_date": coverage(c.year_start_ms),
        "columns": {k: list(v) for k, v in COLUMNS.items()},
        "tables": table_rows, "kinds": kind_rows, "shifts": shift_rows, "floor": floor_rows,
        "exceptions": exceptions(c),
        # Each opening's Rules Submission, with the layouts' numbers and its paytables in words
        # (craps_streams/rules/board.py), as the floor view's pages say them.
        "rules_in_force": {t: [{"since": cal.iso(ts) if ts else None, "table_kind": kind,
                                "table_kind_words": table_kind_words(kind), "rules": r, "board": board(r)}
                               for ts, kind, r in opened]
                           for t, opened in sorted(c.rules.items()) if opened},
        "plots": plot_data(c),
        "provenance": provenance,
    }
    return report


def shares_tails(g: Grains) -> bool:
    """Whether the tails are worth computing in processes: a fork, and a pass over the figures to
    learn which lines they ask for, cost a report of a day or two about a tenth of a second of CPU
    and a month of 40 tables (27,000 lines, their tails nearly all Chernoff bounds) nearly a
    second, which only the lattice's lines repay: a day of 300 tables (4,941 of them, 1.2 s of
    tails) reported in 5.2 s with its tails shared and 5.6 s without; a day or two of 40 tables (a
    few hundred, 0.12 to 0.2 s of tails) and a month (only the floor's lines take the lattice)
    took more CPU shared and no less wall time."""
    # the floor's scopes (each day's, the period's, month and year to date): a line per wager kind
    # and paytable each, at most
    lattice = (len(g.days) + 3) * g.line_keys
    if g.lattice_kinds:
        lattice += g.kind_lines
    if g.lattice_shifts:
        lattice += g.lines
    return lattice >= SHARED_LATTICE_LINES


def tails_in_processes(c: Collected, g: Grains, jobs: int):
    """A `line_tail` answering from the tails of every line the report asks for, computed once each in
    `jobs` processes: the lines are those of a pass over the figures (the same grains) with a tail
    that only notes what it is asked (its rows are thrown away), so they are exactly the ones
    `build_figures` asks for."""
    asked: dict = {}

    def note(odds, stakes: dict, house_win_cents: int, lattice: bool = True) -> Tail:
        asked.setdefault((odds, tuple(sorted(stakes.items())), house_win_cents, lattice), None)
        return NO_TAIL

    _figures(c, _Noting(c, note), g, (Discarded(),) * 4)
    keys = list(asked)
    tails = dict(zip(keys, in_processes(_one_tail, keys, jobs)))

    def known(odds, stakes: dict, house_win_cents: int, lattice: bool = True) -> Tail:
        return tails[(odds, tuple(sorted(stakes.items())), house_win_cents, lattice)]

    return known


def _one_tail(odds, stakes: tuple, house_win_cents: int, lattice: bool) -> Tail:
    return line_tail(odds, dict(stakes), house_win_cents, lattice)


def _rejection(o, cal) -> dict:
    return {"id": o.id, "table_id": o.table_id, "seq": o.seq,
            "time": cal.iso(o.ts) if o.ts else None, "reason": o.reason, "message": o.message[:500]}


def _alert(o, cal) -> dict:
    return {"id": o.id, "table_id": o.table_id, "seq": o.seq, "time": cal.iso(o.ts), "alert": o.alert,
            "shooter_id": o.shooter_id, "message": o.message[:500]}


def exceptions(c: Collected) -> dict:
    """Everything in the period that is not money: rejections by reason (dated ones on their
    claimed gaming day; undated messages have no time and are listed as undated), alerts,
    sequence faults (gaps, resumptions, window overflows, duplicates, tables still suspended at
    the end), and the forged events among the rejections; each counted, the first `LISTED` of
    each listed (noted.py: what the pass kept of them). None of it is in the money: a rejected
    event never reaches the rules core."""
    cal = c.settings.calendar
    noted = c.noted if c.noted is not None else Noted.of(c.rejections, c.alerts, c.duplicates)
    dated, undated, alerts, sequence = noted.rejections, noted.undated, noted.alerts, noted.sequence
    return {
        "rejections": {"count": dated.count, "by_reason": dict(sorted(dated.by.items())),
                       "listed": [_rejection(o, cal) for o in dated.first()]},
        "undated_rejections": {"count": undated.count, "by_reason": dict(sorted(undated.by.items())),
                               "listed": [_rejection(o, cal) for o in undated.first()]},
        "alerts": {"count": alerts.count, "by_kind": dict(sorted(alerts.by.items())),
                   "listed": [_alert(a, cal) for a in alerts.first()]},
        "forged_events": {"count": noted.forged.count, "listed": [_rejection(o, cal) for o in noted.forged.first()]},
        "sequence_faults": {
            "gaps": sequence.by.get("sequence_gap", 0),
            "resumed": sequence.by.get("sequence_resumed", 0),
            "window_full": dated.by.get("sequence_window_full", 0),
            "duplicates": noted.duplicates.count,
            "listed": [_alert(a, cal) for a in sequence.first()],
            "duplicates_listed": [{"table_id": t, "seq": s, "time": cal.iso(ts)} for t, s, ts in noted.duplicates.first()],
            "suspended_at_end": [{"table_id": t, "held": n, "waiting_for_seq": w}
                                 for t, (n, w) in sorted(c.held.items())],
        },
        "replay": {"events_read": c.tally.read, "applied": c.tally.applied, "rejected": c.tally.rejected,
                   "duplicates": c.tally.duplicates, "held": c.tally.held, "untagged": c.tally.untagged},
    }


def plot_data(c: Collected) -> dict:
    """The plots' numbers (the HTML draws them; the JSON keeps them): each table's cumulative hold
    against theory with a 95 % band; handle by hour; outcomes against the exact odds."""
    cal = c.settings.calendar
    hold = {}
    for table, points in sorted(c.series.items()):
        hold[table] = [{"ts": ts, "time": cal.iso(ts), "handle_cents": h, "house_win_cents": w,
                        "hold_percent": percent(w, h), "theoretical_hold_percent": round(100 * e / h, 4) if h else None,
                        "band_percent": round(100 * 1.96 * v ** 0.5 / h, 4) if h else None}
                       for ts, h, w, e, v in points]
    hours = hours_of(c)
    by_hour = [0] * hours
    for cents in c.hourly.values():  # each table's: an array of the period's hours (build.py `add_hourly`)
        by_hour = [a + b for a, b in zip(by_hour, cents)]
    handle = {"hours": [cal.iso(c.start_ms + h * 3_600_000) for h in range(hours)],
              "labels": [cal.local_label(c.start_ms + h * 3_600_000, "%m-%d %H:%M") for h in range(hours)],
              "floor_cents": by_hour,
              "tables_cents": {table: list(cents) for table, cents in sorted(c.hourly.items())}}
    outcomes = []
    for lk, counts in sorted(c.outcomes.items()):
        unit = unit_distribution(c.odds[lk])
        n = sum(counts.values())
        values = sorted(set(unit.values) | set(counts))
        probs = dict(zip(unit.values, unit.probabilities))
        outcomes.append({"wager": lk[0], "paytable": lk[1], "reading": lk[2], "wagers": n,
                         "results": [{"house_per_unit": v, "label": _result_label(v), "observed": counts.get(v, 0),
                                      "expected": round(float(probs.get(v, 0) * n), 3),
                                      "probability": float(probs.get(v, 0))} for v in values]})
    return {"hold": hold, "handle_by_hour": handle, "outcomes": outcomes}


def _result_label(v: int) -> str:
    return "lost" if v == 1 else "push" if v == 0 else f"won {-v} to 1"
