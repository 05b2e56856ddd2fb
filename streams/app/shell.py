"""One Kafka message in, the outputs to produce and the table state to store out.

No game logic: decode, apply the core, encode. Kept free of Faust so that it is tested without a
broker and shared by the worker and the benchmarks. It never raises on bad input: an undecodable
message becomes an EventRejected with its raw bytes, topic, partition and offset (a raised
exception inside a Faust agent would skip the offset, faust-streaming#527).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from streams.codec import CodecError, decode_event, encode_output
from streams.rules import (
    ContractError,
    EventRejected,
    MarkerCleared,
    MarkerPlaced,
    SurveillanceAlerted,
    TableState,
    WagerSettled,
    output_to_record,
    record_to_event,
)
from streams.surveillance import HoldBook, HoldWatch
from streams.surveillance.booking import REJECTED, book_event
from streams.surveillance.table_watch import TableWatch
from streams.topics import LAYOUT_MARKERS, REJECTIONS, SETTLEMENTS, SURVEILLANCE

TOPIC_OF = {
    WagerSettled: SETTLEMENTS,
    MarkerPlaced: LAYOUT_MARKERS,
    MarkerCleared: LAYOUT_MARKERS,
    SurveillanceAlerted: SURVEILLANCE,
    EventRejected: REJECTIONS,
}


@dataclass(slots=True)
class Handled:
    verdict: str  # applied | rejected | duplicate | held (beyond a gap, applied when it is filled)
    table_id: str
    outputs: list = field(default_factory=list)  # core output objects
    messages: list = field(default_factory=list)  # (topic, key bytes, value bytes)
    state: TableState | None = None  # to store when not None
    event: object = None  # the decoded event, when it could be decoded


def state_to_text(state: TableState, book: HoldBook | None = None) -> str:
    """What the changelog stores for a table: its state, its hold book and its surveillance (dice,
    hold tails, positions), in one record."""
    book = book or HoldBook()
    record = {"table": state.to_record(), "hold": book.to_record(), "watch": book.watch.to_record()}
    return json.dumps(record, separators=(",", ":"), sort_keys=True)


def state_from_text(text: str) -> tuple[TableState, HoldBook]:
    record = json.loads(text)
    if "table" not in record:  # stored before the hold book joined the table's record
        return TableState.from_record(record), HoldBook()
    book = HoldBook.from_record(record["hold"])
    book.watch = TableWatch.from_record(record.get("watch"))  # absent: stored before issue 14
    return TableState.from_record(record["table"]), book


def _messages(outputs: list) -> list:
    return [(TOPIC_OF[type(o)], o.table_id.encode(), encode_output(output_to_record(o))) for o in outputs]


class SettlementShell:
    """Holds the live states of the tables this worker owns; `load` reads a stored state (JSON text)
    when a table is not in memory yet (after a restart or a rebalance)."""

    def __init__(self, load, watch: HoldWatch | None = None):
        self.load = load
        self.watch = watch or HoldWatch.from_settings(os.environ)
        self.states: dict[str, TableState] = {}
        self.books: dict[str, HoldBook] = {}  # table id -> its hold book, beside its state

    def state_of(self, table_id: str) -> TableState | None:
        state = self.states.get(table_id)
        if state is None:
            stored = self.load(table_id)
            if stored is not None:
                state, self.books[table_id] = state_from_text(stored)
                self.states[table_id] = state
        return state

    def stored_text(self, table_id: str) -> str:
        """The record to store for a table (its state and hold book), as of the last event."""
        return state_to_text(self.states[table_id], self.books.get(table_id))

    def handle(self, value: bytes, topic: str, partition: int, offset: int) -> Handled:
        try:
            record = decode_event(value)
            event = record_to_event(record)
        except (CodecError, ContractError) as e:
            return self.undecodable(value, e, topic, partition, offset)
        verdict, state, outputs = book_event(self.state_of(event.table_id), self.books, self.watch, event)
        if state is not None:
            self.states[event.table_id] = state
        return Handled(verdict, event.table_id, outputs, _messages(outputs), state, event)

    @staticmethod
    def undecodable(value: bytes, error, topic: str, partition: int, offset: int) -> Handled:
        source = f"{topic}/{partition}/{offset}"
        reason = getattr(error, "reason", "undecodable")
        record = {
            "type": "EventRejected", "id": f"rejected/{source}", "table_id": "", "seq": 0, "ts": 0,
            "reason": reason if isinstance(error, ContractError) else "undecodable",
            "message": str(error)[:1000], "event_json": None, "raw": bytes(value or b""),
            "topic": topic, "partition": partition, "offset": offset,
        }
        rejection = EventRejected(record["id"], "", 0, 0, record["reason"], record["message"], {})
        return Handled(REJECTED, "", [rejection], [(REJECTIONS, b"", encode_output(record))], None)
