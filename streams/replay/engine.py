"""Replay: drive the rules core over a history and account for every input event.

The same `apply` that runs live settles here, so a replay that disagrees with the live
settlements is an audit finding. Every input ends as applied, rejected or duplicate.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from streams.rules import ContractError, EventRejected, WagerSettled, apply, malformed, record_to_event
from streams.rules.hold import HoldLedger


@dataclass(slots=True)
class ReplayTally:
    read: int = 0
    applied: int = 0
    rejected: int = 0
    duplicates: int = 0
    rejections_by_reason: dict = field(default_factory=dict)
    hold: HoldLedger = field(default_factory=HoldLedger)


class Replay:
    """Holds the state of every table seen; `feed` takes one input and returns its outputs."""

    def __init__(self):
        self.tables: dict = {}
        self.tally = ReplayTally()

    def feed_event(self, event) -> list:
        tally = self.tally
        tally.read += 1
        tables = self.tables
        state = tables.get(event.table_id)
        before = state.duplicates if state is not None else 0
        state, outputs = apply(state, event)
        if state is not None:
            tables[event.table_id] = state
            if state.duplicates != before:
                tally.duplicates += 1
                return outputs
        if outputs and type(outputs[0]) is EventRejected:
            self._count_rejection(outputs[0])
            return outputs
        tally.applied += 1
        hold = tally.hold
        for o in outputs:
            if type(o) is WagerSettled:
                hold.add(o)
        return outputs

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

    def _count_rejection(self, rejection: EventRejected) -> None:
        self.tally.rejected += 1
        by = self.tally.rejections_by_reason
        by[rejection.reason] = by.get(rejection.reason, 0) + 1


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
