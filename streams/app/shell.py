"""One Kafka message in, the outputs to produce and the table state to store out.

No game logic: decode, apply the core, encode. Kept free of Faust so that it is tested without a
broker and shared by the worker and the benchmarks. It never raises on bad input: an undecodable
message becomes an EventRejected with its raw bytes, topic, partition and offset (a raised
exception inside a Faust agent would skip the offset, faust-streaming#527).
"""
from __future__ import annotations

import json
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
    apply,
    output_to_record,
    record_to_event,
)
from streams.topics import LAYOUT_MARKERS, REJECTIONS, SETTLEMENTS, SURVEILLANCE

TOPIC_OF = {
    WagerSettled: SETTLEMENTS,
    MarkerPlaced: LAYOUT_MARKERS,
    MarkerCleared: LAYOUT_MARKERS,
    SurveillanceAlerted: SURVEILLANCE,
    EventRejected: REJECTIONS,
}
APPLIED, REJECTED, DUPLICATE = "applied", "rejected", "duplicate"


@dataclass(slots=True)
class Handled:
    verdict: str  # applied | rejected | duplicate
    table_id: str
    outputs: list = field(default_factory=list)  # core output objects
    messages: list = field(default_factory=list)  # (topic, key bytes, value bytes)
    state: TableState | None = None  # to store when not None
    event: object = None  # the decoded event, when it could be decoded


def state_to_text(state: TableState) -> str:
    return json.dumps(state.to_record(), separators=(",", ":"), sort_keys=True)


def state_from_text(text: str) -> TableState:
    return TableState.from_record(json.loads(text))


def _messages(outputs: list) -> list:
    return [(TOPIC_OF[type(o)], o.table_id.encode(), encode_output(output_to_record(o))) for o in outputs]


class SettlementShell:
    """Holds the live states of the tables this worker owns; `load` reads a stored state (JSON text)
    when a table is not in memory yet (after a restart or a rebalance)."""

    def __init__(self, load):
        self.load = load
        self.states: dict[str, TableState] = {}

    def state_of(self, table_id: str) -> TableState | None:
        state = self.states.get(table_id)
        if state is None:
            stored = self.load(table_id)
            if stored is not None:
                state = self.states[table_id] = state_from_text(stored)
        return state

    def handle(self, value: bytes, topic: str, partition: int, offset: int) -> Handled:
        try:
            record = decode_event(value)
            event = record_to_event(record)
        except (CodecError, ContractError) as e:
            return self.undecodable(value, e, topic, partition, offset)
        state = self.state_of(event.table_id)
        before = state.duplicates if state is not None else 0
        state, outputs = apply(state, event)
        if state is not None and state.duplicates != before:
            return Handled(DUPLICATE, event.table_id, [], [], state, event)
        if outputs and type(outputs[0]) is EventRejected:
            return Handled(REJECTED, event.table_id, outputs, _messages(outputs), None, event)
        if state is not None:
            self.states[event.table_id] = state
        return Handled(APPLIED, event.table_id, outputs, _messages(outputs), state, event)

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
