"""One input event through the rules core, the table's hold book and its surveillance, with its verdict.

The live worker's shell and replay both judge events here, so they cannot drift apart: the same
outputs (the core's, then the surveillance alerts their throws and settlements raise) and the same
verdict.
"""
from __future__ import annotations

from streams.rules import DiceThrown, EventRejected, TableOpened, apply
from streams.surveillance.hold_watch import HoldBook, HoldWatch
from streams.surveillance.table_watch import observe

APPLIED, REJECTED, DUPLICATE, HELD = "applied", "rejected", "duplicate", "held"


def book_event(state, books: dict, watch: HoldWatch, event):
    """-> (verdict, state, outputs). `state` is the table's (None if never opened); `books` maps
    table id -> HoldBook (with the table's surveillance) and gains the table's book on its first
    applied event.

    Verdicts: applied; held (beyond a sequence gap, applied when it is filled); duplicate; rejected
    (the table's state still returned when known: the feed received the seq)."""
    before = state.duplicates if state is not None else 0
    # Events held beyond a gap that this one may release (applied in seq order after it).
    waiting = dict(state.held) if state is not None and state.held else None
    state, outputs = apply(state, event)
    if state is None:  # an unknown table: only a rejection
        return REJECTED, None, outputs
    if state.duplicates != before:
        return DUPLICATE, state, outputs
    verdict = HELD if state.held.get(event.seq) is event else APPLIED
    if outputs:
        # A gap's filling may release held events after this one: only the event's own rejection
        # (first, at its seq) makes it rejected; their settlements are booked all the same.
        first = outputs[0]
        if type(first) is EventRejected and first.seq == event.seq:
            verdict = REJECTED
    if verdict is HELD:
        return verdict, state, outputs
    book = books.get(event.table_id)
    if book is None:
        book = books[event.table_id] = HoldBook()
    if outputs:
        watch.watch(book, state, outputs)
    kind = type(event)
    if not waiting and kind is not DiceThrown and kind is not TableOpened:
        # Surveillance reads throws and what they decide (and a table's opening): a wager, a
        # shooter change or a close alone gives it nothing to see (the hot path: most events).
        return verdict, state, outputs
    applied = [] if verdict is REJECTED else [event]
    if waiting:
        rejected = {o.seq for o in outputs if type(o) is EventRejected}
        held = state.held
        applied += [e for seq, e in sorted(waiting.items()) if seq not in held and seq not in rejected]
    alerts = observe(watch.thresholds, book.watch, state, applied, outputs)
    if alerts:
        outputs = outputs + alerts
    return verdict, state, outputs
