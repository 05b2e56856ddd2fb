"""The placed wager's lean checks (streams/rules/table.py, `_on_wager_placed`, issue 15) against the
plain checker they replaced, kept here as the reference: the same rejection (reason and message)
or the same acceptance, for generated events on generated tables. And `apply`'s inline placing of
an in-order wager (its fast path, no handler frame) against the handler: the same outputs, verdict
and state."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.rules import DiceThrown, ShooterChanged, TableOpened, TableState, WagerPlaced, apply, rules_from_record
from streams.rules.kinds import GROUP_OF, SPEC_OF, WAGER_KINDS
from streams.rules.table import (_WINDOW_OF_GROUP, _WINDOW_WHY, POSITIONS, _on_wager_placed, _stake_problem,
                                 _table_open_or_rejected, rejected)


def reference(state, event):
    """The checks as they were written before (commit b0dffd9), their order and messages."""
    problem = _table_open_or_rejected(state, event)
    if problem:
        return [problem]
    kind = event.wager
    if kind not in GROUP_OF:
        return [rejected(event, "unknown_wager_kind", f"wager kind {kind!r} is not one of {', '.join(WAGER_KINDS)}")]
    if event.position not in POSITIONS:
        return [rejected(event, "position_out_of_range", f"position {event.position} is not 1..16 (§ 623c.1(a)(2)(i))")]
    if event.wager_id in state.pending:
        return [rejected(event, "duplicate_wager_id", f"wager {event.wager_id!r} is already in action")]
    why = _stake_problem(state, event)
    if why:
        return [rejected(event, "stake_out_of_limits", why)]
    spec = SPEC_OF[kind]
    if spec.table_kinds is not None and state.table_kind not in spec.table_kinds:
        return [rejected(event, *spec.table_kind_rejection)]
    group = GROUP_OF[kind]
    if not _WINDOW_OF_GROUP[group](state):
        return [rejected(event, "out_of_window", _WINDOW_WHY[group])]
    return []


@st.composite
def table_and_wager(draw):
    limits = draw(st.sampled_from([None, {"fire": [200, 400]}, {"hot_roller": [500, 10000]}]))
    record = {"limits": limits} if limits else None
    state, _, _ = apply(None, TableOpened("T", 1, 0, draw(st.sampled_from(["live", "hybrid", "fully_automated"])),
                                          rules_from_record(record), record))
    if draw(st.booleans()):
        state, _, _ = apply(state, ShooterChanged("T", 2, 0, "S", 1, "table_open"))
    if draw(st.booleans()):
        state, _, _ = apply(state, WagerPlaced("T", state.last_seq + 1, 0, "w1", 2, "fire", 500))
    # Throws move every window: a point on or off, a seven-out (must pass), a fresh cycle or not.
    for d1, d2 in draw(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)), max_size=4)):
        state, _, _ = apply(state, DiceThrown("T", state.received_seq + 1, 0, d1, d2))
    if draw(st.booleans()):
        state.come_bets_only = draw(st.booleans())
    if draw(st.booleans()):
        state.closed = True
    # The next seq of the feed (a rejected throw's seq is received all the same).
    event = WagerPlaced("T", state.received_seq + 1, 0, draw(st.sampled_from(["w1", "w2"])),
                        draw(st.integers(-1, 18)), draw(st.sampled_from([*WAGER_KINDS, "keno"])),
                        draw(st.sampled_from([-100, 0, 1, 100, 150, 300, 500, 600, 5000, 20000])))
    return state, event


@settings(max_examples=600)
@given(table_and_wager())
def test_the_lean_checks_judge_as_the_plain_ones(case):
    state, event = case
    expected = reference(state, event)
    state, outputs, _ = apply(state, event)
    assert outputs == expected
    if not expected:
        assert state.pending[event.wager_id] == (event.wager_id, event.position, event.wager, event.amount_cents,
                                                 event.seq)
        assert type(state.pending[event.wager_id]) is tuple  # a wager in action (streams/rules/wager.py)


def _copy(state):
    """An independent copy of a table's state (the record round trip, the feed's cursor kept)."""
    copy = TableState.from_record(state.to_record())
    copy.received_seq = state.received_seq
    return copy


@settings(max_examples=600)
@given(table_and_wager())
def test_apply_places_inline_as_the_handler_does(case):
    state, event = case
    plain = _copy(state)
    plain_state, plain_outputs, plain_verdict = _on_wager_placed(plain, event)
    plain_state.received_seq = event.seq  # apply receives the seq after the handler judges
    assert event.seq == state.received_seq + 1 and not state.held  # apply's inline path is taken
    state, outputs, verdict = apply(state, event)
    assert (outputs, verdict) == (plain_outputs, plain_verdict)
    assert state.to_record() == plain_state.to_record()
    assert state.pending == plain_state.pending
    assert state.last_seq == plain_state.last_seq
