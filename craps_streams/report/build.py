"""A report's figures from a history, in one streamed pass through the settling step.

The history (any source `craps_streams.replay.sources` reads: an archive directory, the table-events
topic, JSON Lines or Avro files) goes through `craps_streams.replay.engine.Replay`, the step the live
worker settles with (craps_streams/settle/step.py), so the report's money is the settlements' money.
As the replay's time slice does (`craps_streams.replay.sources.Slice`), every event up to the period's
end is fed (a table's state is its whole history) and the outputs are booked by their deciding
event's time: settlements on the gaming day and shift they were decided, inside the period into
the report's lines, before it into the month-to-date and year-to-date lines.

Memory is bounded by the floor, not the history: the tables' states, the lines per (gaming day,
shift, table, wager kind, paytable) of the shifts the pass is in (once it holds more than
`SPILL_LINES`, those of the shifts it has left behind are written out: craps_streams/report/days.py),
one per (gaming day, wager kind, paytable) before the period, the period's exceptions, and a
thinned series per table for the plots.

Two kinds of input are fed one at a time, so what became of them is known exactly: a table's
opening (the Rules Submission it puts in force, read from the table's state) and an event whose
seq does not follow the highest seen for its table (a duplicate is told by the replay's count of
duplicates; it has no output of its own). Everything else goes through in batches.
"""
from __future__ import annotations

import bisect
from array import array
from dataclasses import dataclass, field
from datetime import date

from craps_streams.accelerator.report import report_book
from craps_streams.replay.engine import EVENT_TYPES, Replay
from craps_streams.replay.agreement import settled_of
from craps_streams.replay.jsonread import LineBatch
from craps_streams.replay.sources import Slice
from craps_streams.report.books import SURRENDER_DETAIL_END, TABLE_CLOSED_DETAIL, Line, book_group, unit_result
from craps_streams.report.calendar import GamingCalendar, Period
from craps_streams.report.days import KEPT_MS, SPILL_LINES, LeftDays, by_day
from craps_streams.report.noted import Noted
from craps_streams.rules import EventRejected, SurveillanceAlerted, TableOpened, WagerSettled
from craps_streams.rules.hold import HoldLine
from craps_streams.report.statistics import INVESTIGATION_LEVEL, odds_of

HOUR_MS = 3_600_000
# The core events `ReportPass._feed_items` looks at inline (an opening is fed alone); the bounds of
# its least and greatest time before any (event times are epoch ms that fit Avro's long).
_INLINE = frozenset(EVENT_TYPES - {TableOpened})
_NO_LOW, _NO_HIGH = 1 << 64, -(1 << 64)
SERIES_POINTS = 300  # points per table in a period's hold series (thinned by time)


def hours_of(c: "Collected") -> int:
    """The hours of the period, the last one begun."""
    return (c.end_ms - c.start_ms + HOUR_MS - 1) // HOUR_MS


def add_hourly(c: "Collected", table: str, hour: int, cents: int) -> None:
    """`cents` more of a table's handle in an hour of the period: each table's hours are 64-bit
    integers in a row (an array, eight bytes an hour: a year of 300 tables is 21 MB, where a dict
    by (table, hour) was half a gigabyte), a list of ints once a sum would not fit 64 bits."""
    row = c.hourly.get(table)
    if row is None:
        row = c.hourly[table] = array("q", bytes(8 * hours_of(c)))
    try:
        row[hour] += cents
    except OverflowError:
        row = c.hourly[table] = list(row)
        row[hour] += cents


@dataclass
class ReportSettings:
    calendar: GamingCalendar
    period: Period
    investigate_at: float = INVESTIGATION_LEVEL  # two-sided tail probability at or below which a line is flagged
    tables: frozenset | None = None  # None: every table


@dataclass
class HistorySeen:
    """What the pass saw of the history itself (for the provenance block)."""

    items: int = 0
    min_ts: int | None = None
    max_ts: int | None = None
    offsets: dict = field(default_factory=dict)  # (topic, partition) -> [first, last] offset read


@dataclass
class Collected:
    """Everything the pass books; `craps_streams.report.figures` turns it into the report."""

    settings: ReportSettings
    start_ms: int
    end_ms: int
    month_start_ms: int
    year_start_ms: int
    lines: dict = field(default_factory=dict)  # (day, shift, table, wager, paytable, reading) -> Line, held
    left: LeftDays | None = None  # the lines written out (days.py): the period's are `lines` and these
    before: dict = field(default_factory=dict)  # (day, wager, paytable, reading) -> Line, this year
    odds: dict = field(default_factory=dict)  # (wager, paytable, reading) -> WagerOdds
    outcomes: dict = field(default_factory=dict)  # (wager, paytable, reading) -> {unit result: wagers}
    hourly: dict = field(default_factory=dict)  # table -> handle cents by hour of the period (`add_hourly`)
    series: dict = field(default_factory=dict)  # table -> [[ts, handle, house win, expected, variance]]
    noted: Noted | None = None  # the period's exceptions, as a pass keeps them (noted.py)
    alerts: list = field(default_factory=list)  # else (the ledger's) these
    rejections: list = field(default_factory=list)
    duplicates: list = field(default_factory=list)  # (table, seq, ts) of duplicates in the period
    rules: dict = field(default_factory=dict)  # table -> [(ts, table_kind, rules record)] openings
    held: dict = field(default_factory=dict)  # table -> (events held, first missing seq) at the end
    seen: HistorySeen = field(default_factory=HistorySeen)
    tally: object = None  # the replay's ReplayTally


class ReportPass:
    """Feed the history's batches (`feed`), then `finish()` -> `Collected`.

    The booking (`_book`, `_settled`) is the specification; where the accelerator is in use the
    same books are kept natively (native/src/report.rs `ReportBook`, handed the calendar's shifts,
    the kinds' theory and the outcomes' words from here), unless `native_books` is False.
    tests/report/test_native_books.py holds the two equal line by line."""

    def __init__(self, settings: ReportSettings, tags=None, topic_offsets: bool = False, watch=None,
                 native_books: bool = True, settled=None, left: LeftDays | None = None,
                 spill_lines: int | None = None):
        """`settled`: told of each batch's settlements besides the books (a list of WagerSettled; the
        audit riding on the pass, craps_streams/replay/agreement.py `SettlementLines`). `left`:
        where the lines of the shifts left behind are written once more than `spill_lines` are
        held (days.py; None: a directory of the pass's own, made when first needed; `spill_lines`
        None: `SPILL_LINES`)."""
        cal, period = settings.calendar, settings.period
        self.settled = settled
        # Tables some of whose items the slice did not feed (after the period), and whether a later
        # item of one was fed: what an audit riding on the pass needs to know (report/parallel.py).
        self.cut: set = set()
        self.interleaved = False
        self.cal = cal
        self.replay = Replay(watch, tags=tags)
        start, end = period.bounds(cal)
        last = period.last
        self.c = Collected(settings, start, end, cal.day_bounds(last.replace(day=1))[0],
                           cal.day_bounds(date(last.year, 1, 1))[0])
        self.c.left = left if left is not None else LeftDays()
        self.c.noted = Noted()
        self.spill_lines = SPILL_LINES if spill_lines is None else spill_lines
        self.slice = Slice(settings.tables, None, end - 1)
        self.topic_offsets = topic_offsets
        self.max_seq: dict = {}
        self.laned = False  # whether the lane has fed lines (then a table's cursor counts as fed)
        self.rules_of: dict = {}  # table -> the RulesSubmission in force
        self._records: dict = {}  # RulesSubmission -> its record (`_rules_opened`)
        self.kinds: dict = {}  # (table, wager) -> (line key, house edge, variance) under its rules
        self.segments: list = []  # sorted [start, end, day, shift] of the shifts met so far
        self.starts: list = []
        self.last_segment = None  # the segment `locate` found last
        self.earliest = min(self.c.start_ms, self.c.year_start_ms)  # the first instant booked
        self.cum: dict = {}  # table -> [handle, house win, expected, variance] in the period
        span = end - start
        self.bucket_ms = max(300_000, span // SERIES_POINTS)
        self.book = report_book(
            (start, end, self.earliest, self.bucket_ms, HOUR_MS),
            (WagerSettled, "lose", "win", "push", TABLE_CLOSED_DETAIL, SURRENDER_DETAIL_END),
            self.segment, self._kind, self._other, (SurveillanceAlerted, EventRejected)) if native_books else None
        self._out: list = []  # the outputs of the throws the lane finishes, booked after each run

    # ------------------------------------------------------------ where an instant belongs

    def locate(self, ts: int) -> tuple:
        """(gaming day, shift) of an instant, by the shifts' bounds met so far (computed once per
        gaming day); the last shift found first (a history comes in time order, mostly)."""
        seg = self.last_segment
        if seg is not None and seg[0] <= ts < seg[1]:
            return seg[2], seg[3]
        seg = self.segment(ts)
        return seg[2], seg[3]

    def segment(self, ts: int) -> tuple:
        """`(start, end, gaming day, shift, the day's ordinal)` of the shift an instant is in."""
        i = bisect.bisect_right(self.starts, ts) - 1
        if i >= 0:
            seg = self.segments[i]
            if ts < seg[1]:
                self.last_segment = seg
                return seg
        d = self.cal.gaming_day(ts)
        for name in self.cal.shift_names():
            s, e = self.cal.shift_bounds(d, name)
            if s < e:
                j = bisect.bisect_left(self.starts, s)
                if j >= len(self.starts) or self.starts[j] != s:
                    self.starts.insert(j, s)
                    self.segments.insert(j, (s, e, d, name, d.toordinal()))
        i = bisect.bisect_right(self.starts, ts) - 1
        seg = self.last_segment = self.segments[i]
        return seg

    # ------------------------------------------------------------ feeding

    def feed(self, batches) -> None:
        """Feed the history's batches: lists of items, or `LineBatch`es of raw JSON lines (through
        the native lane where it is in use, `_feed_lines`)."""
        look = self._look
        # Raw lines go through the lane where it is in use and every table is reported.
        lane = self.replay.lane_in_use and self.slice.tables is None
        for items in batches:
            if self.held() > self.spill_lines:
                self._leave()
            if type(items) is LineBatch:
                if lane:
                    self._feed_lines(items)
                    continue
                items = items.items()
            elif type(items) is not list:
                items = list(items)
            self.c.seen.items += len(items)
            if not self.topic_offsets and not self.laned:
                self._feed_items(items)
                continue
            piece: list = []
            for it in items:
                looked = look(it)
                if looked is None:
                    continue
                if not looked[4]:
                    piece.append(it)
                    continue
                if piece:
                    self._book(self.replay.feed_batch(piece))
                    piece = []
                self._alone(it, *looked[:4])
            if piece:
                self._book(self.replay.feed_batch(piece))

    def held(self) -> int:
        """How many of the period's lines the books hold."""
        return self.book.held() if self.book is not None else len(self.c.lines)

    def _leave(self) -> None:
        """Write out the lines of the shifts more than `KEPT_MS` from the latest one booked (days.py),
        and raise the bound to twice what is still held, so a floor whose shifts in hand hold more
        than it is not written out batch after batch."""
        if self.book is not None:
            latest = self.book.current()
        else:
            latest = self.last_segment[0] if self.last_segment is not None else None
        if latest is None:
            return
        low, high = latest - KEPT_MS, latest + KEPT_MS
        if self.book is not None:
            pairs = [(key, Line(HoldLine(*money), *decisions, stakes))
                     for key, money, decisions, stakes in self.book.take_lines(low, high)]
        else:
            starts = {(d, name): start for start, _, d, name, _ in self.segments}
            lines = self.c.lines
            pairs = [(key, line) for key, line in lines.items() if not low <= starts[key[:2]] < high]
            for key, _ in pairs:
                del lines[key]
        self.c.left.write_days(by_day(pairs))
        self.spill_lines = max(self.spill_lines, 2 * self.held())

    def _feed_items(self, items: list) -> None:
        """`feed`'s loop over a batch of items where no topic offset is kept and the lane has fed
        nothing (an archive, Avro files): each core event but an opening looked at inline, as
        `_look` looks at it (its time seen; fed when the slice feeds it; alone when its seq is not
        above its table's highest), for a replay's worth of events; anything else by `_look`."""
        seen, max_seq, look, book, feed_batch = self.c.seen, self.max_seq, self._look, self._book, self.replay.feed_batch
        tables, until = self.slice.tables, self.slice.until
        low = _NO_LOW if seen.min_ts is None else seen.min_ts
        high = _NO_HIGH if seen.max_ts is None else seen.max_ts
        piece: list = []
        for it in items:
            if type(it) in _INLINE:
                ts = it.ts
                if ts < low:
                    low = ts
                if ts > high:
                    high = ts
                table = it.table_id
                if (until is not None and ts > until) or (tables is not None and table not in tables):
                    self.cut.add(table)
                    continue
                if self.cut and table in self.cut:
                    self.interleaved = True
                seq = it.seq
                if seq > max_seq.get(table, 0):
                    max_seq[table] = seq
                    piece.append(it)
                    continue
                alone = (table, seq, ts, False)
            else:
                seen.min_ts = None if low == _NO_LOW else low
                seen.max_ts = None if high == _NO_HIGH else high
                looked = look(it)
                low = _NO_LOW if seen.min_ts is None else seen.min_ts
                high = _NO_HIGH if seen.max_ts is None else seen.max_ts
                if looked is None:
                    continue
                if not looked[4]:
                    piece.append(it)
                    continue
                alone = looked[:4]
            if piece:
                book(feed_batch(piece))
                piece = []
            self._alone(it, *alone)
        if piece:
            book(feed_batch(piece))
        seen.min_ts = None if low == _NO_LOW else low
        seen.max_ts = None if high == _NO_HIGH else high

    def _look(self, it) -> tuple | None:
        """An item seen (its time, its offset): `(table, seq, ts, opening, alone)`, or None when the
        slice does not feed it. `alone`: an opening, or a seq not above the highest fed for its
        table (the highest the pass saw, or the table's cursor where the lane fed it)."""
        ev = it[0] if type(it) is tuple else it
        kind = type(ev)
        if kind in EVENT_TYPES:
            table, seq, ts, opening = ev.table_id, ev.seq, ev.ts, kind is TableOpened
        elif kind is dict:
            table, seq, ts = ev.get("table_id"), ev.get("seq"), ev.get("ts")
            opening = ev.get("type") == "TableOpened"
        else:
            table = seq = ts = None
            opening = False
        if self.topic_offsets and type(it) is tuple and it[1]:
            self._offset(it[1])
        seen = self.c.seen
        if type(ts) is int:
            if seen.min_ts is None or ts < seen.min_ts:
                seen.min_ts = ts
            if seen.max_ts is None or ts > seen.max_ts:
                seen.max_ts = ts
        # (a record's table id may be anything; every one that is no string counts as one)
        whose = table if type(table) is str else None
        if not self.slice.feeds(ev):
            self.cut.add(whose)
            return None
        if self.cut and whose in self.cut:
            self.interleaved = True
        alone = opening
        if type(seq) is int and type(table) is str:
            top = self.max_seq.get(table, 0)
            if self.laned:
                state = self.replay.tables.get(table)
                if state is not None and state.received_seq > top:
                    top = state.received_seq
            if seq <= top:
                alone = True
            else:
                self.max_seq[table] = seq
        return table, seq, ts, opening, alone

    def _feed_lines(self, batch: LineBatch) -> None:
        """A batch of raw JSON lines: each run the lane settles (`Replay.feed_lane`: quiet lines, and
        the throws it finishes, their outputs booked in order before the next line; nothing else of
        theirs to book but their count and times) up to a line past the period's end, which the
        slice does not feed; each throw it applied booked; every other line read (`LineBatch.item`)
        and fed as `feed` feeds an item."""
        self.laned = True
        lines, replay, seen, look, out = batch.lines, self.replay, self.c.seen, self._look, self._out
        span = [None, None]  # the least and greatest time of the lines the lane settles (64-bit ints)
        until = self.slice.until
        while True:
            stop, ran, event, outputs = replay.feed_lane(lines, batch.at, out, until, span)
            if out:  # the throws the lane finished (booked and watched): in order, before the next line
                self._book(out)
                out.clear()
            seen.items += ran
            if not batch.settled(ran, stop):
                break
            if event is None:
                it = batch.read()
                if it is None:  # a blank line
                    continue
            else:
                batch.step()
                it = event
                if outputs is not None:  # a throw the lane applied: in sequence
                    seen.items += 1
                    ts = event.ts
                    if span[0] is None or ts < span[0]:
                        span[0] = ts
                    if span[1] is None or ts > span[1]:
                        span[1] = ts
                    if event.seq > self.max_seq.get(event.table_id, 0):
                        self.max_seq[event.table_id] = event.seq
                    self._book(outputs)
                    continue
            seen.items += 1
            looked = look(it)
            if looked is None:
                continue
            if looked[4]:
                self._alone(it, *looked[:4])
            else:
                self._book(replay.feed_batch([it]))
        batch.close()
        low, high = span
        if low is not None and (seen.min_ts is None or low < seen.min_ts):
            seen.min_ts = low
        if high is not None and (seen.max_ts is None or high > seen.max_ts):
            seen.max_ts = high

    def _offset(self, where: str) -> None:
        topic, _, rest = where.rpartition("/")
        topic, _, partition = topic.rpartition("/")
        try:
            key, offset = (topic, int(partition)), int(rest)
        except ValueError:
            return
        got = self.c.seen.offsets.get(key)
        if got is None:
            self.c.seen.offsets[key] = [offset, offset]
        else:
            got[0], got[1] = min(got[0], offset), max(got[1], offset)

    def _alone(self, it, table, seq, ts, opening: bool) -> None:
        replay = self.replay
        state = replay.tables.get(table) if type(table) is str else None
        before = state.duplicates if state is not None else None
        outputs = replay.feed_batch([it])
        # A duplicate has no output: the table's own count of duplicates tells it (the core's).
        state = replay.tables.get(table) if type(table) is str else None
        if (before is not None and state is not None and state.duplicates > before and type(ts) is int
                and self.c.start_ms <= ts < self.c.end_ms):
            self.c.noted.duplicate((table, seq, ts))
        if opening and type(table) is str:
            state = replay.tables.get(table)
            own = outputs and type(outputs[0]) is EventRejected and outputs[0].seq == seq
            if state is not None and not own:
                rules = state.rules
                if self.rules_of.get(table) is not rules:
                    self.rules_of[table] = rules
                    self.kinds = {k: v for k, v in self.kinds.items() if k[0] != table}
                    if self.book is not None:
                        self.book.forget(table)
                    self._rules_opened(table, ts, state.table_kind, rules)
        self._book(outputs)

    def _rules_opened(self, table: str, ts: int, table_kind: str, rules) -> None:
        """Keep the openings that may be in force in the period: the last one before it and those in it."""
        opened = self.c.rules.setdefault(table, [])
        if opened and opened[-1][0] < self.c.start_ms and ts <= self.c.start_ms:
            opened.pop()
        # One record of each Rules Submission, however many openings put it in force (a floor that
        # opens its tables every gaming day: 110,000 openings a year of 300 tables).
        record = self._records.get(rules)
        if record is None:
            record = self._records[rules] = rules.to_record()
        opened.append((ts, table_kind, record))

    # ------------------------------------------------------------ booking

    def _book(self, outputs: list) -> None:
        if not outputs:
            return
        if self.settled is not None:
            settled = settled_of(outputs)
            if settled:
                self.settled(settled)
        if self.book is not None:
            self.book.book(outputs)
            return
        groups: dict = {}
        for o in outputs:
            kind = type(o)
            if kind is WagerSettled:
                key = (o.table_id, o.seq, o.wager, o.paytable)
                group = groups.get(key)
                if group is None:
                    groups[key] = [o]
                else:
                    group.append(o)
            elif kind is SurveillanceAlerted or kind is EventRejected:
                self._other(o)
        for group in groups.values():
            self._settled(group)

    def _other(self, o) -> None:
        """An output that is not a settlement: the period's alerts and rejections kept."""
        kind = type(o)
        if kind is SurveillanceAlerted:
            if self.c.start_ms <= o.ts < self.c.end_ms:
                self.c.noted.alerted(o)
        elif kind is EventRejected:
            if o.ts == 0 or not o.table_id or self.c.start_ms <= o.ts < self.c.end_ms:
                self.c.noted.rejected(o)

    def _kind(self, table: str, wager: str, paytable: str) -> tuple:
        rules = self.rules_of.get(table)
        if rules is None:
            rules = self.rules_of[table] = self.replay.tables[table].rules
        odds = odds_of(wager, rules)
        lk = (wager, paytable, odds.reading)
        if lk not in self.c.odds:
            self.c.odds[lk] = odds
        known = self.kinds[(table, wager)] = (lk, float(odds.house_edge), float(odds.variance))
        return known

    def _settled(self, group: list) -> None:
        c = self.c
        s = group[0]
        ts = s.ts
        # A range may begin before the last day's year does (a report across the New Year): its early days
        # are the period's, though not that year's to date.
        if ts < self.earliest or ts >= c.end_ms:
            return
        table = s.table_id
        known = self.kinds.get((table, s.wager))
        if known is None or known[0][1] != s.paytable:
            known = self._kind(table, s.wager, s.paytable)
        lk, edge, variance = known
        day, shift = self.locate(ts)
        if ts < c.start_ms:
            key = (day, *lk)
            line = c.before.get(key)
            if line is None:
                line = c.before[key] = Line()
            book_group(line, group)
            return
        key = (day, shift, table, *lk)
        line = c.lines.get(key)
        if line is None:
            line = c.lines[key] = Line()
        dice, handle, win = book_group(line, group)
        stake_squares = 0
        if dice:
            # outcomes against the odds, per wager decided by the dice
            counts = c.outcomes.get(lk)
            if counts is None:
                counts = c.outcomes[lk] = {}
            stake = 0
            for x in dice:
                stake += x.stake_cents
                v = unit_result(x)
                counts[v] = counts.get(v, 0) + 1
            stake_squares = stake * stake
        add_hourly(c, table, (ts - c.start_ms) // HOUR_MS, handle)
        # the table's hold through the period, against theory and its band
        cum = self.cum.get(table)
        if cum is None:
            cum = self.cum[table] = [0, 0, 0.0, 0.0]
        cum[0] += handle
        cum[1] += win
        cum[2] += edge * handle
        cum[3] += variance * stake_squares
        points = c.series.get(table)
        if points is None:
            points = c.series[table] = []
        point = [ts, cum[0], cum[1], cum[2], cum[3]]
        bucket = self.bucket_ms
        if points and (points[-1][0] - c.start_ms) // bucket == (ts - c.start_ms) // bucket:
            points[-1] = point
        else:
            points.append(point)

    # ------------------------------------------------------------ the end

    def finish(self) -> Collected:
        c = self.c
        if self.book is not None:
            self._native_rows()
        c.tally = self.replay.tally
        for table, state in self.replay.tables.items():
            held = getattr(state, "held", None)
            if held:
                c.held[table] = (len(held), state.received_seq + 1)
        for table, opened in c.rules.items():
            # only the openings in force in the period: the last before it, and those in it
            c.rules[table] = [o for i, o in enumerate(opened)
                              if o[0] < c.end_ms and (i + 1 == len(opened) or opened[i + 1][0] > c.start_ms)]
        return c


    def _native_rows(self) -> None:
        """The native books' rows into the collected lines (`ReportBook.rows`: each in the order
        first met, as the Python books fill them)."""
        c = self.c
        lines, before, outcomes, hourly, series = self.book.rows()
        for into, rows in ((c.lines, lines), (c.before, before)):
            for key, money, decisions, stakes in rows:
                line = Line(HoldLine(*money), *decisions, stakes)
                known = into.get(key)
                if known is None:
                    into[key] = line
                else:
                    known.merge(line)
        c.outcomes.update(outcomes)
        for table, cents in hourly:  # bytes of 64-bit ints (an array's), or ints past 64 bits
            c.hourly[table] = array("q", cents) if type(cents) is bytes else cents
        c.series.update(series)
