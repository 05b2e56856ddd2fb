"""The table's feed: events are applied in `seq` order, never from an incomplete history.

A table's controller numbers every event it sends, 1, 2, 3, ... (the event contract). The feed
keeps a cursor, `received_seq`: the last seq of the unbroken run received so far, whether the event
was applied or rejected (a rejected event was still received: its seq is used, docs/rules.md, Bad input).

- seq at or below the last applied seq: a duplicate, counted, never applied (docs/rules.md, Duplicates).
- seq above the last applied one but at or below the cursor: a re-send of an event that was
  rejected; it is judged again, in place.
- seq = cursor + 1: applied, then every held event that now follows without a gap.
- seq beyond cursor + 1: an out-of-order arrival. It is held, up to `SEQUENCE_WINDOW` events per
  table, and the table is suspended: no event after a gap is applied, so no wager is ever settled
  from an incomplete history (docs/rules.md, The table's feed). The first held event raises a
  `sequence_gap` surveillance alert; filling the gap applies the held events in order and raises
  `sequence_resumed`. An arrival that would overflow the window is rejected
  (`sequence_window_full`) with the event, so nothing is lost: the floor re-sends it.

Held events are part of the table's state (serialized with it), so a worker that restarts or takes
over the table resumes the same suspension, and replay of the same history gives the same outputs.
"""
from __future__ import annotations

from craps_streams.rules.contract import event_to_record
from craps_streams.rules.events import EventRejected, SurveillanceAlerted
from craps_streams.rules.verdict import APPLIED, DUPLICATE, HELD, REJECTED, RELEASED

# Per table: ~10 minutes of a busy table's events. Bounded so a table whose feed lost an event for
# good cannot grow its state without limit; beyond it arrivals are rejected, not dropped.
SEQUENCE_WINDOW = 256


def receive(state, event, dispatch):
    """Route one event of a known, sequenced table (`state.received_seq` set) through the feed:
    -> (state, outputs, verdict).

    `dispatch(state, event) -> (state, outputs)` judges one in-order event (the game rules)."""
    seq = event.seq
    if seq <= state.last_seq:
        state.duplicates += 1
        return state, [], DUPLICATE
    cursor = state.received_seq
    if seq <= cursor:
        state, out = _judged(state, event, dispatch)  # a re-send of a rejected event
        return state, out, _own_verdict(event, out, APPLIED)
    held = state.held
    if seq > cursor + 1:
        if seq in held:
            state.duplicates += 1
            return state, [], DUPLICATE
        if len(held) >= SEQUENCE_WINDOW:
            return state, [EventRejected(
                f"{event.table_id}/{seq}/rejected", event.table_id, seq, event.ts, "sequence_window_full",
                f"seq {seq} arrived while the table waits for seq {cursor + 1}; {len(held)} events are "
                f"already held (the window is {SEQUENCE_WINDOW}): re-send it after the gap is filled",
                event_to_record(event))], REJECTED
        alerts = [] if held else [_gap_alert(state, event, cursor + 1, seq - 1)]
        held[seq] = event
        return state, alerts, HELD

    state, out = _judged(state, event, dispatch)
    state.received_seq = seq
    if not held:
        return state, out, _own_verdict(event, out, APPLIED)
    verdict = _own_verdict(event, out, RELEASED)
    out = list(out)
    drained = 0
    while state.received_seq + 1 in held:
        state, more = _judged(state, held.pop(state.received_seq + 1), dispatch)
        state.received_seq += 1
        drained += 1
        out.extend(more)
    if held:
        if drained:  # the held run stopped at a further gap: still suspended, for a new reason
            out.append(_gap_alert(state, event, state.received_seq + 1, min(held) - 1))
    else:
        out.append(SurveillanceAlerted(
            f"{event.table_id}/{seq}/sequence_resumed", event.table_id, seq, event.ts, "sequence_resumed",
            state.shooter_id or "", f"table {event.table_id}: the gap is filled by seq {seq}; held events "
            f"applied up to seq {state.received_seq}, settlement resumed", ()))
    return state, out, (verdict if drained else _own_verdict(event, out, APPLIED))


def _own_verdict(event, out: list, otherwise: str) -> str:
    """rejected if the event's own rejection is the first output, else `otherwise`."""
    first = out[0] if out else None
    return REJECTED if type(first) is EventRejected and first.seq == event.seq else otherwise


def _judged(state, event, dispatch):
    """Judge an in-order event; a table reopened under new rules keeps its feed."""
    new_state, out = dispatch(state, event)
    if new_state is not state:
        new_state.received_seq = state.received_seq
        new_state.held = state.held
    return new_state, out


def _gap_alert(state, event, first_missing: int, last_missing: int) -> SurveillanceAlerted:
    missing = f"seq {first_missing}" if first_missing == last_missing else \
        f"seq {first_missing}..{last_missing}"
    return SurveillanceAlerted(
        f"{event.table_id}/{event.seq}/sequence_gap", event.table_id, event.seq, event.ts, "sequence_gap",
        state.shooter_id or "", f"table {event.table_id} suspended: {missing} missing; later events "
        f"are held (at most {SEQUENCE_WINDOW}) until the floor re-sends it", ())
