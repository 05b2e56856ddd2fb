"""Replay: drive the rules core over a history and account for every input event.

The same step that runs live (craps_streams.settle.step: the rules core, then the hold books) settles
here, so a replay that disagrees with the live settlements is an audit finding. Every input ends
with a verdict (craps_streams.rules.verdict); the tally counts released events as applied and
undecodable ones as rejected. No storage code here: the sources (replay/sources.py, the archive
package) turn files and topics into items.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import partial
from typing import Iterable, Iterator

from craps_streams.accelerator.rules import RulesCore, chosen
from craps_streams.rules import ContractError, EventRejected, malformed, record_to_event
from craps_streams.rules.events import INPUT_TYPES
from craps_streams.rules.hold import HoldLedger, HoldLine
from craps_streams.rules.verdict import APPLIED, DUPLICATE, REJECTED, RELEASED
from craps_streams.codec.errors import RawMessage
from craps_streams.replay.jsonread import LineBatch
from craps_streams.settle.quiet import lane_run, quiet_run
from craps_streams.settle.step import settle_event, settled, undecodable_rejection
from craps_streams.surveillance import HoldWatch
from craps_streams.surveillance.native_watch import with_native_watch

EVENT_TYPES = frozenset(INPUT_TYPES.values())


@dataclass(slots=True)
class ReplayTally:
    read: int = 0
    applied: int = 0
    rejected: int = 0
    duplicates: int = 0
    rejections_by_reason: dict = field(default_factory=dict)
    hold: HoldLedger = field(default_factory=HoldLedger)
    held: int = 0  # arrived beyond a sequence gap: applied later, when the gap was filled
    untagged: int = 0  # let through without a tag (--accept-untagged: history from before tags)


class Replay:
    """Holds the state and hold book of every table seen; `feed` takes one input and returns its
    outputs: those of the rules core, then the hold alerts they raise (as the live worker does)."""

    def __init__(self, watch: HoldWatch | None = None, tags=None, core: RulesCore | None = None):
        """`tags`: the tag check every event passes before the core (`craps_streams.authenticity.TagCheck`);
        the replay and audit commands always give one, None is for tests of the rules alone.
        `watch`: its `table_watch` is replaced by the native watch where the native code is in use
        and it is the default (`TableWatch`); any other factory is kept (`lambda: TableWatch()`
        keeps the Python watch, for a test of that path). `core`: the rules core that settles
        (craps_streams/accelerator/rules.py); None: the one the command chose (`chosen()`)."""
        self.core = core or chosen()
        self.tags = tags
        self.tables: dict = {}
        self.books: dict = {}  # table id -> HoldBook
        watch = watch or HoldWatch()
        # The tables' surveillance kept natively where the native code is in use (the same alerts
        # and state as the Python `TableWatch`: craps_streams/surveillance/native_watch.py).
        self.watch = with_native_watch(watch)
        self._tally = ReplayTally()
        self._quiet = quiet_run(tags, self.watch)  # None: every event through `settle_event`
        self._lane = lane_run(tags, self.watch)  # None: a LineBatch read line by line (`LineBatch.items`)

    @property
    def tally(self) -> ReplayTally:
        """The counts so far; the hold is the tables' books (booked once, by `settle_event`)."""
        t = self._tally
        t.untagged = self.tags.untagged if self.tags is not None else 0
        t.hold = hold = HoldLedger()
        for table_id, book in self.books.items():
            for (wager, paytable), line in book.lines.items():
                hold.lines[(table_id, wager, paytable)] = settled = HoldLine()
                settled.merge(line)  # the settled money only, not the book's theory
        return t

    def feed_event(self, event) -> list:
        tally = self._tally
        tally.read += 1
        verdict, _, outputs = settle_event(self.tables, self.books, self.watch, event, self.tags, self.core.apply)
        if verdict is APPLIED or verdict is RELEASED:
            tally.applied += 1
        elif verdict is REJECTED:
            self._count_rejection(outputs[0])
        elif verdict is DUPLICATE:
            tally.duplicates += 1
        else:
            tally.held += 1
        return outputs

    def feed_record(self, record, source: str) -> list:
        """A contract record (or a torn line as str) from `source` (e.g. "file:line")."""
        try:
            if type(record) is str:
                raise ContractError("malformed", f"not a JSON object: {record[:200]!r}")
            event = record_to_event(record)
        except ContractError as e:
            self._tally.read += 1
            rejection = malformed(record, e, source)
            self._count_rejection(rejection)
            return [rejection]
        return self.feed_event(event)

    def feed_item(self, item, where) -> list:
        """Feed one history item that is not a checked core event: a contract record, a torn line
        (str), or an undecodable Kafka message (`RawMessage`), which becomes the rejection the
        worker writes for it (`undecodable_rejection`)."""
        if type(item) in EVENT_TYPES:
            return self.feed_event(item)
        if type(item) is RawMessage:
            self._tally.read += 1
            rejection = undecodable_rejection(item.topic, item.partition, item.offset, "undecodable", item.error)
            self._count_rejection(rejection)
            return [rejection]
        return self.feed_record(item, where)

    def feed_batch(self, items) -> list:
        """Feed a batch of history items: core events already checked (from an archive's fast
        path), or `(item, where)` tuples for anything else (see `feed_item`). The outputs of the
        whole batch, in order; the tally as if each item went through `feed_event`/`feed_item`.

        The replay's hot loop: `feed_event` with the lookups bound once and the counts summed per
        batch; with the native code in use, each run of quiet events (wagers placed, shooters
        changed: nothing to output) is settled in one native call (craps_streams/settle/quiet.py), and
        a `LineBatch` of raw JSON lines goes through the native lane (its throws booked and
        watched there too, their outputs appended to the batch's), every line it stops at read
        by `LineBatch.item` and settled here as any other item."""
        if type(items) is LineBatch:  # raw JSON lines: through the lane, each other line read here
            if self._lane is not None:
                return self._feed_lines(items)
            items = items.items()
        elif type(items) is not list:
            items = list(items)
        tables, books, watch, tags, apply, quiet = self.tables, self.books, self.watch, self.tags, self.core.apply, self._quiet
        out: list = []
        extend = out.extend
        events = applied = duplicates = held = 0
        i, n = 0, len(items)
        while i < n:
            verdict = None
            if quiet is not None:
                i, ran, untagged, thrown = quiet(tables, books, items, i, out)
                events += ran
                applied += ran
                if untagged:
                    tags.untagged += untagged
                if thrown is not None:  # the quiet run's throw: the event, its outputs if applied
                    event, outputs = thrown
                    i += 1
                    events += 1
                    if outputs is None:
                        verdict, _, outputs = settle_event(tables, books, watch, event, tags, apply)
                    else:
                        verdict, _, outputs = settled(tables, books, watch, event, tables[event.table_id],
                                                      outputs, APPLIED)
                elif i == n:
                    break
            if verdict is None:
                event = items[i]
                i += 1
                if type(event) is tuple:
                    extend(self.feed_item(*event))
                    continue
                events += 1
                verdict, _, outputs = settle_event(tables, books, watch, event, tags, apply)
            if outputs:
                extend(outputs)
            if verdict is APPLIED or verdict is RELEASED:
                applied += 1
            elif verdict is REJECTED:
                self._count_rejection(outputs[0])
            elif verdict is DUPLICATE:
                duplicates += 1
            else:
                held += 1
        tally = self._tally
        tally.read += events
        tally.applied += applied
        tally.duplicates += duplicates
        tally.held += held
        return out

    def _feed_lines(self, batch: LineBatch) -> list:
        """`feed_batch` of raw JSON lines through the lane: each run it settles (`feed_lane`, its
        throws' outputs appended in order), and each line it stops at settled here as an item."""
        out: list = []
        lines = batch.lines
        while True:
            stop, ran, event, outputs = self.feed_lane(lines, batch.at, out)
            if not batch.settled(ran, stop):
                break
            if event is not None:  # a throw the lane read: its outputs, or settled here
                batch.step()
                out.extend(outputs if outputs is not None else self.feed_event(event))
                continue
            item = batch.read()
            if item is not None:  # None: a blank line
                out.extend(self.feed_item(*item) if type(item) is tuple else self.feed_event(item))
        batch.close()
        return out

    def feed_lane(self, lines: list, start: int, out: list | None = None, until: int | None = None,
                  span: list | None = None) -> tuple[int, int, object, list | None]:
        """The native lane's run over raw JSON lines (a `LineBatch`'s) from `start`, for a caller that
        reads every other line itself (the report: craps_streams/report/build.py): `(stop, ran, event,
        outputs)`, `lines` and the offsets as the lane takes them (a list of str and indices, or a
        block of bytes and the offsets of lines' starts). The `ran` lines from `start` to `stop`
        were settled and counted: quiet lines and, with a list `out`, the throws the lane finished
        (booked and watched, as `feed_batch`'s lane finishes them), their outputs and alerts
        appended to `out` in order. `event` None: `lines[stop]` (if any)
        is untouched. Else `lines[stop]` was a throw, read as `event`: `outputs` its step's outputs
        when the lane applied it (the step finished and counted here, as `feed_batch` does), None
        when the caller must settle `event` itself (`feed_batch`). With `until`, the lane stops at a
        line whose time is past it (untouched); with `span` ([least, greatest] time, None before
        any), the times of the lines it settles widen it. Only where the lane is in use
        (`lane_in_use`)."""
        stop, ran, untagged, thrown = self._lane(self.tables, self.books, lines, start, out=out, until=until,
                                                 span=span)
        tally = self._tally
        tally.read += ran
        tally.applied += ran
        if untagged:
            self.tags.untagged += untagged
        if thrown is None:
            return stop, ran, None, None
        event, outputs = thrown
        if outputs is None:
            return stop, ran, event, None
        tally.read += 1
        tally.applied += 1  # `settled` keeps the verdict it is given
        _, _, outputs = settled(self.tables, self.books, self.watch, event, self.tables[event.table_id], outputs,
                                APPLIED)
        return stop, ran, event, outputs

    @property
    def lane_in_use(self) -> bool:
        """Whether raw JSON lines can go through the native lane (`feed_lane`)."""
        return self._lane is not None

    def _count_rejection(self, rejection: EventRejected) -> None:
        self._tally.rejected += 1
        by = self._tally.rejections_by_reason
        by[rejection.reason] = by.get(rejection.reason, 0) + 1


def merge_tallies(tallies) -> ReplayTally:
    """One tally of several replays of disjoint tables (the jobs of a parallel replay)."""
    total = ReplayTally()
    for t in tallies:
        total.read += t.read
        total.applied += t.applied
        total.rejected += t.rejected
        total.duplicates += t.duplicates
        total.held += t.held
        total.untagged += t.untagged
        for reason, n in t.rejections_by_reason.items():
            total.rejections_by_reason[reason] = total.rejections_by_reason.get(reason, 0) + n
        merge_hold(total.hold, t.hold)
    return total


def merge_hold(into: HoldLedger, other: HoldLedger) -> None:
    for key, line in other.lines.items():
        mine = into.lines.get(key)
        if mine is None:
            mine = into.lines[key] = HoldLine()
        mine.merge(line)


def json_lines(lines: Iterable[str], name: str) -> Iterator[tuple[object, str]]:
    """Records of a JSON Lines stream with their source; a line that is not JSON comes as str."""
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: hostile nesting, e.g. 2,000 '['
            record = line
        yield record, f"{name}:{n}"
