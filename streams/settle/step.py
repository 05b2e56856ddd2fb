"""One input through the rules core and the table's hold book: the step every message takes,
live (app/shell.py, after decoding the Kafka message) and in replay (replay/engine.py).

    decode -> [verify] -> settle_event: apply (state, outputs, verdict) -> book the hold, watch
           -> outputs to send

The live worker's shell and replay both settle here, so they cannot drift apart: the same outputs
(the core's, then the hold alerts their settlements raise) and the same verdict
(streams.rules.verdict). A check that must run before the core (an authentication tag) goes
before `settle_event` in the shells; a watch over the outputs goes where HoldWatch.watch is.

An input that is not an event at all becomes `undecodable_rejection`, the only place its
rejection is built (the worker writes it with the raw bytes; replay of an archive rebuilds it
from the archived bytes, so the ids match).
"""
from __future__ import annotations

from streams.rules import EventRejected, apply
from streams.rules.verdict import DUPLICATE
from streams.surveillance.hold_watch import HoldBook, HoldWatch

# What the message that failed to decode says when the decoder gave no reason.
NOT_AVRO = "not a decodable Avro message"


def settle_event(tables: dict, books: dict, watch: HoldWatch, event) -> tuple[str, object, list]:
    """-> (verdict, table state, outputs) of one event. `tables` (table id -> state) gets the new
    state; `books` (table id -> HoldBook) gains the table's book on its first output.

    The state is None only for an event of a table never opened (rejected)."""
    table_id = event.table_id
    state, outputs, verdict = apply(tables.get(table_id), event)
    if state is None:
        return verdict, None, outputs
    tables[table_id] = state
    if outputs and verdict is not DUPLICATE:
        book = books.get(table_id)
        if book is None:
            book = books[table_id] = HoldBook()
        alerts = watch.watch(book, state, outputs)
        if alerts:
            outputs = outputs + alerts
    return verdict, state, outputs


def undecodable_rejection(topic: str, partition: int, offset: int, reason: str, message: str) -> EventRejected:
    """The rejection of a message that is not an event, by its Kafka coordinates (the id
    `rejected/topic/partition/offset` is the same live and in replay)."""
    return EventRejected(f"rejected/{topic}/{partition}/{offset}", "", 0, 0, reason,
                         message[:1000] or NOT_AVRO, {})
