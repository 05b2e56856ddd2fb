"""One input event through the authenticity check, the rules core and the table's hold book, with
its verdict.

The live worker's shell and replay both judge events here, so they cannot drift apart: the same
outputs (the core's, then the hold alerts their settlements raise) and the same verdict. The tag
check (`streams.authenticity.TagCheck`, passed in by the shells) comes first: an event that fails
it never reaches the core.
"""
from __future__ import annotations

from streams.rules import EventRejected, apply
from streams.surveillance.hold_watch import HoldBook, HoldWatch

APPLIED, REJECTED, DUPLICATE, HELD = "applied", "rejected", "duplicate", "held"


def book_event(state, books: dict, watch: HoldWatch, event, tags=None):
    """-> (verdict, state, outputs). `state` is the table's (None if never opened); `books` maps
    table id -> HoldBook and gains the table's book on its first settled event; `tags` judges the
    event's authentication tag first (`problem(event)` -> None or (reason, message); see
    `streams.authenticity`), None for no check (the worker and replay always pass one).

    Verdicts: applied; held (beyond a sequence gap, applied when it is filled); duplicate; rejected
    (the table's state still returned when known: the feed received the seq; a forged event
    leaves it exactly as it was, the core never sees it)."""
    if tags is not None:
        problem = tags.problem(event)
        if problem is not None:
            return REJECTED, state, tags.rejection(event, *problem)
    before = state.duplicates if state is not None else 0
    state, outputs = apply(state, event)
    if state is None:  # an unknown table: only a rejection
        return REJECTED, None, outputs
    if state.duplicates != before:
        return DUPLICATE, state, outputs
    if outputs:
        book = books.get(event.table_id)
        if book is None:
            book = books[event.table_id] = HoldBook()
        alerts = watch.watch(book, state, outputs)
        if alerts:
            outputs = outputs + alerts
        # A gap's filling may release held events after this one: only the event's own rejection
        # (first, at its seq) makes it rejected; their settlements are booked all the same.
        first = outputs[0]
        if type(first) is EventRejected and first.seq == event.seq:
            return REJECTED, state, outputs
    return (HELD if state.held.get(event.seq) is event else APPLIED), state, outputs
