"""The placed wager's lean checks (streams/rules/table.py, `_on_wager_placed`, issue 15) against the
plain checker they replaced, kept here as the reference: the same rejection (reason and message)
or the same acceptance, for generated events on generated tables."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.rules import ShooterChanged, TableOpened, WagerPlaced, apply, rules_from_record
from streams.rules.kinds import GROUP_OF, SPEC_OF, WAGER_KINDS
from streams.rules.table import _WINDOW_OF_GROUP, _WINDOW_WHY, POSITIONS, _stake_problem, _table_open_or_rejected, rejected


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
    rules = rules_from_record({"limits": limits} if limits else None)
    state, _, _ = apply(None, TableOpened("T", 1, 0, draw(st.sampled_from(["live", "hybrid", "fully_automated"])),
                                          rules))
    if draw(st.booleans()):
        state, _, _ = apply(state, ShooterChanged("T", 2, 0, "S", 1, "table_open"))
    if draw(st.booleans()):
        state, _, _ = apply(state, WagerPlaced("T", state.last_seq + 1, 0, "w1", 2, "fire", 500))
    if draw(st.booleans()):
        state.closed = True
    event = WagerPlaced("T", state.last_seq + 1, 0, draw(st.sampled_from(["w1", "w2"])),
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
        assert type(state.pending[event.wager_id]).__name__ == "Wager"
