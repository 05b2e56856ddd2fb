"""One input through the rules core, the table's hold book and its surveillance: the step every
message takes, live (app/shell.py, after decoding the Kafka message) and in replay
(replay/engine.py).

    decode -> settle_event: verify the tag -> apply (state, outputs, verdict) -> book the hold,
           watch the table (craps_streams.surveillance.table_watch) -> outputs to send

The live worker's shell and replay both settle here, so they cannot drift apart: the same outputs
(the core's, then the surveillance alerts their throws and settlements raise) and the same
verdict (craps_streams.rules.verdict). The authentication tag (craps_streams.authenticity) is checked first:
an event that fails it is rejected with a forged_event alert and never reaches the core (nor the
surveillance of the table), so its table's state and money stay exactly as they were. A watch over
the outputs goes where HoldWatch.watch is.

An input that is not an event at all becomes `undecodable_rejection`, the only place its
rejection is built (the worker writes it with the raw bytes; replay of an archive rebuilds it
from the archived bytes, so the ids match).
"""
from __future__ import annotations

from collections.abc import Callable

from craps_streams.rules import DiceThrown, EventRejected, TableOpened
from craps_streams.rules import apply as python_apply
from craps_streams.rules.verdict import DUPLICATE, HELD, REJECTED
from craps_streams.surveillance.hold_watch import HoldBook, HoldWatch
from craps_streams.surveillance.native_watch import table_watch_of
from craps_streams.surveillance.table_watch import TableWatch, observe, settled_groups

# What the message that failed to decode says when the decoder gave no reason.
NOT_AVRO = "not a decodable Avro message"


def settle_event(tables: dict, books: dict, watch: HoldWatch, event, tags=None,
                 apply: Callable = python_apply) -> tuple[str, object, list]:
    """-> (verdict, table state, outputs) of one event. `tables` (table id -> state) gets the new
    state; `books` (table id -> HoldBook, with the table's surveillance) gains the table's book on
    its first applied event; `tags` (a `craps_streams.authenticity.TagCheck`: `problem(event)` -> None or
    (reason, message), `rejection`) judges the event's tag before the core: the worker, replay and
    audit always pass one; None (no check) is for tests of the rules alone. `apply`: the rules
    core's, chosen by the command that runs (craps_streams/accelerator/rules.py `rules_core`) and
    handed down by the worker's shell and the replay; the Python core's (the specification) for
    tests of the rules alone.

    The state is None only for an event of a table never opened (rejected)."""
    table_id = event.table_id
    state = tables.get(table_id)
    if tags is not None:
        problem = tags.problem(event)
        if problem is not None:  # not authentic: the core never sees it, the table is untouched
            return REJECTED, state, tags.rejection(event, *problem)
    # Events held beyond a gap that this one may release (applied in seq order after it).
    waiting = dict(state.held) if state is not None and state.held else None
    state, outputs, verdict = apply(state, event)
    return settled(tables, books, watch, event, state, outputs, verdict, waiting)


def settled(tables: dict, books: dict, watch: HoldWatch, event, state, outputs: list, verdict: str,
            waiting: dict | None = None) -> tuple[str, object, list]:
    """The rest of `settle_event` once the core has applied an authentic `event` (-> `state`,
    `outputs`, `verdict`; `waiting`: the events its table held before it): the table filed, the
    settlements booked, the table watched. Also where the JSON Lines lane
    (craps_streams/settle/quiet.py `lane_run`) hands over a throw it authenticated and applied
    and could not finish itself.

    Where the table's surveillance is the native watch, a watched event's settlements are booked
    and watched by it in one call (`book_observe`, native/src/watch.rs: `watch.watch`, then the
    watch's `observe`, over one reading of the outputs; held to the two in lockstep,
    tests/native/test_lockstep.py `watch`); the lane makes the same call for its throws."""
    table_id = event.table_id
    if state is None:
        return verdict, None, outputs
    tables[table_id] = state
    if verdict is DUPLICATE or verdict is HELD:
        return verdict, state, outputs
    book = books.get(table_id)
    if book is None:
        book = books[table_id] = HoldBook(watch=watch.table_watch())
    table = book.watch
    kind = type(event)
    # Surveillance reads throws and what they decide (and a table's opening): a wager, a shooter
    # change or a close alone gives it nothing to see (the hot path: most events).
    watched = waiting or kind is DiceThrown or kind is TableOpened
    if watched:
        applied = [] if verdict is REJECTED else [event]
        if waiting:
            rejected = {o.seq for o in outputs if type(o) is EventRejected}
            held = state.held
            applied += [e for seq, e in sorted(waiting.items()) if seq not in held and seq not in rejected]
        if type(table) is not TableWatch and type(watch) is HoldWatch:
            # The native watch books and watches in one reading of the outputs (`book_observe`:
            # `watch.watch`, then `observe`, below); None: declined, nothing booked or changed.
            alerts = table.book_observe(book.lines, watch.new_line, state, applied, outputs)
            if alerts is not None:
                return verdict, state, outputs + alerts if alerts else outputs
    # The settlements grouped by decision once, for the hold book and the surveillance both.
    groups: dict = {}
    if outputs:
        groups = settled_groups(outputs)
        watch.watch(book, state, outputs, groups)
    if not watched:
        return verdict, state, outputs
    if type(table) is TableWatch:
        alerts = observe(watch.thresholds, table, state, applied, outputs, groups)
    else:  # the native watch (craps_streams/surveillance/native_watch.py): the same alerts and state
        alerts = table.observe(state, applied, outputs)
        if alerts is None:  # declined, nothing changed: the Python watch takes the table over
            book.watch = table = table_watch_of(table)
            alerts = observe(watch.thresholds, table, state, applied, outputs, groups)
    if alerts:
        outputs = outputs + alerts
    return verdict, state, outputs


def undecodable_rejection(topic: str, partition: int, offset: int, reason: str, message: str) -> EventRejected:
    """The rejection of a message that is not an event, by its Kafka coordinates (the id
    `rejected/topic/partition/offset` is the same live and in replay)."""
    return EventRejected(f"rejected/{topic}/{partition}/{offset}", "", 0, 0, reason,
                         message[:1000] or NOT_AVRO, {})
