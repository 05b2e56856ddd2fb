"""Replay: drive the rules core over a history and account for every input event.

The same `apply` that runs live settles here, so a replay that disagrees with the live
settlements is an audit finding. Every input ends as applied, held (beyond a sequence gap, applied
when it is filled), rejected or duplicate.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from streams.replay.archive import RawMessage
from streams.rules import ContractError, EventRejected, WagerSettled, apply, malformed, record_to_event
from streams.rules.events import INPUT_TYPES
from streams.rules.hold import HoldLedger, HoldLine
from streams.surveillance import HoldBook, HoldWatch

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


class Replay:
    """Holds the state and hold book of every table seen; `feed` takes one input and returns its
    outputs: those of the rules core, then the hold alerts they raise (as the live worker does)."""

    def __init__(self, watch: HoldWatch | None = None):
        self.tables: dict = {}
        self.books: dict = {}  # table id -> HoldBook
        self.watch = watch or HoldWatch.from_settings(os.environ)
        self.tally = ReplayTally()

    def feed_event(self, event) -> list:
        tally = self.tally
        tally.read += 1
        tables = self.tables
        state = tables.get(event.table_id)
        before = state.duplicates if state is not None else 0
        state, outputs = apply(state, event)
        if state is None:  # an unknown table: only a rejection
            self._count_rejection(outputs[0])
            return outputs
        tables[event.table_id] = state
        if state.duplicates != before:
            tally.duplicates += 1
            return outputs
        if outputs:
            outputs = self._booked(state, outputs)
            hold = tally.hold
            for o in outputs:
                if type(o) is WagerSettled:
                    hold.add(o)
            if type(outputs[0]) is EventRejected and outputs[0].seq == event.seq:
                self._count_rejection(outputs[0])
                return outputs
        if state.held.get(event.seq) is event:
            tally.held += 1
        else:
            tally.applied += 1
        return outputs

    def _booked(self, state, outputs: list) -> list:
        """The outputs with the hold alerts their settlements raise (streams/surveillance)."""
        book = self.books.get(state.table_id)
        if book is None:
            book = self.books[state.table_id] = HoldBook()
        alerts = self.watch.watch(book, state, outputs)
        return outputs + alerts if alerts else outputs

    def feed_record(self, record, source: str) -> list:
        """A contract record (or a torn line as str) from `source` (e.g. "file:line")."""
        try:
            if type(record) is str:
                raise ContractError("malformed", f"not a JSON object: {record[:200]!r}")
            event = record_to_event(record)
        except ContractError as e:
            self.tally.read += 1
            rejection = malformed(record, e, source)
            self._count_rejection(rejection)
            return [rejection]
        return self.feed_event(event)

    def feed_item(self, item, where) -> list:
        """Feed one history item that is not a checked core event: a contract record, a torn line
        (str), or an undecodable Kafka message (`archive.RawMessage`), which becomes the rejection
        the worker writes for it (reason "undecodable", id "rejected/topic/partition/offset")."""
        if type(item) in EVENT_TYPES:
            return self.feed_event(item)
        if type(item) is RawMessage:
            self.tally.read += 1
            rejection = EventRejected(f"rejected/{item.topic}/{item.partition}/{item.offset}", "", 0, 0,
                                      "undecodable", item.error[:1000] or "not a decodable Avro message", {})
            self._count_rejection(rejection)
            return [rejection]
        return self.feed_record(item, where)

    def feed_batch(self, items) -> list:
        """Feed a batch of history items: core events already checked (from an archive's fast
        path), or `(item, where)` tuples for anything else (see `feed_item`). The outputs of the
        whole batch, in order; the tally as if each item went through `feed_event`/`feed_item`.

        The replay's hot loop: `feed_event` inlined, and the hold of the batch's settlements summed
        per (table, wager, paytable, outcome) before it enters the ledger (the same sums)."""
        tables = self.tables
        get = tables.get
        booked = self._booked
        out: list = []
        extend = out.extend
        sums: dict = {}
        sums_get = sums.get
        events = applied = duplicates = held = 0
        for event in items:
            if type(event) is tuple:
                extend(self.feed_item(*event))
                continue
            events += 1
            table_id = event.table_id
            state = get(table_id)
            if state is None:
                state, outputs = apply(None, event)
                if state is None:  # an unknown table: only a rejection
                    self._count_rejection(outputs[0])
                    extend(outputs)
                    continue
                tables[table_id] = state
            else:
                before = state.duplicates
                state, outputs = apply(state, event)
                tables[table_id] = state
                if state.duplicates != before:
                    duplicates += 1
                    if outputs:
                        extend(outputs)
                    continue
            if outputs:
                settled = False
                for o in outputs:
                    if type(o) is WagerSettled:
                        settled = True
                        key = (o.table_id, o.wager, o.paytable, o.outcome)
                        s = sums_get(key)
                        if s is None:
                            sums[key] = [1, o.stake_cents, o.won_cents]
                        else:
                            s[0] += 1
                            s[1] += o.stake_cents
                            s[2] += o.won_cents
                if settled:
                    outputs = booked(state, outputs)
                extend(outputs)
                first = outputs[0]
                if type(first) is EventRejected and first.seq == event.seq:
                    self._count_rejection(first)
                    continue
            if state.held.get(event.seq) is event:
                held += 1
            else:
                applied += 1
        tally = self.tally
        tally.read += events
        tally.applied += applied
        tally.duplicates += duplicates
        tally.held += held
        if sums:
            _add_sums(tally.hold, sums)
        return out

    def _count_rejection(self, rejection: EventRejected) -> None:
        self.tally.rejected += 1
        by = self.tally.rejections_by_reason
        by[rejection.reason] = by.get(rejection.reason, 0) + 1


def _add_sums(hold: HoldLedger, sums: dict) -> None:
    """Settlements summed per (table, wager, paytable, outcome) -> [count, stakes, won] into the
    ledger, as `HoldLedger.add` would have added them one by one."""
    lines = hold.lines
    for (table_id, wager, paytable, outcome), (count, stakes, won) in sums.items():
        key = (table_id, wager, paytable)
        line = lines.get(key)
        if line is None:
            line = lines[key] = HoldLine()
        line.settled += count
        line.handle_cents += stakes
        if outcome == "lose":
            line.collected_cents += stakes
            line.losses += count
        else:
            line.returned_cents += stakes
            line.won_cents += won
            if outcome == "win":
                line.wins += count
            else:
                line.pushes += count


def merge_tallies(tallies) -> ReplayTally:
    """One tally of several replays of disjoint tables (the jobs of a parallel replay)."""
    total = ReplayTally()
    for t in tallies:
        total.read += t.read
        total.applied += t.applied
        total.rejected += t.rejected
        total.duplicates += t.duplicates
        total.held += t.held
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
        except ValueError:
            record = line
        yield record, f"{name}:{n}"
