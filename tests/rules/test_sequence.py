"""The table's feed (craps_streams/rules/sequence.py): events applied in seq order, duplicates counted,
out-of-order arrivals reordered within a bounded window, and a gap suspending the table with a
surveillance alert until it is filled, so no wager is settled from an incomplete history."""
from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.exploration import examples

from craps_streams.rules import (
    EventRejected,
    SurveillanceAlerted,
    TableState,
    WagerSettled,
    apply,
    output_to_record,
    record_to_event,
)
from craps_streams.rules.sequence import SEQUENCE_WINDOW
from craps_streams.sim.floor import TableSimulation, table_kind_for, FLOOR_EPOCH_MS

from .table_script import Script, snapshot

SEQUENCE_ALERTS = ("sequence_gap", "sequence_resumed")


def table_history(seed: int, hours: float = 2.0) -> list[dict]:
    """One simulated table's clean history, seq 1, 2, 3, ..."""
    sim = TableSimulation("T7", table_kind_for(1), seed, FLOOR_EPOCH_MS,
                          FLOOR_EPOCH_MS + int(hours * 3_600_000))
    return list(sim.events())


def run(records, state=None):
    outputs = []
    for r in records:
        state, out, _ = apply(state, record_to_event(r))
        outputs.extend(out)
    return state, outputs


def without_sequence_alerts(outputs):
    return [output_to_record(o) for o in outputs
            if not (type(o) is SurveillanceAlerted and o.alert in SEQUENCE_ALERTS)]


def game(state):
    record = snapshot(state)
    record.pop("duplicates")
    return record


def test_a_gap_suspends_settlement_and_alerts_until_it_is_filled():
    s = Script().open("live")
    s.shooter("ann", 3)
    s.wager("f", "fire", 500, 3)
    missing = s.record("DiceThrown", die1=1, die2=3, valid=True)       # 4: the point
    later = [s.record("DiceThrown", die1=2, die2=2, valid=True),         # 4: point made
             s.record("DiceThrown", die1=3, die2=4, valid=True)]         # come-out 7
    out = s.send(later[0])
    assert [(type(o), o.alert) for o in out] == [(SurveillanceAlerted, "sequence_gap")]
    assert f"seq {missing['seq']} missing" in out[0].message
    assert s.send(later[1]) == []                                      # held: no second alert
    assert s.state.point == 0 and s.state.shooter_throws == 0          # nothing applied
    assert sorted(s.state.held) == [later[0]["seq"], later[1]["seq"]]

    out = s.send(missing)
    assert [o.alert for o in out if type(o) is SurveillanceAlerted] == ["sequence_resumed"]
    assert out[-1].alert == "sequence_resumed" and out[-1].seq == missing["seq"]
    assert not s.state.held and s.state.received_seq == later[1]["seq"] == s.state.last_seq
    assert s.state.shooter_throws == 3 and s.state.point == 0


def test_reordered_within_the_window_settles_as_in_order():
    in_order = table_history(seed=3)
    shuffled = list(in_order)
    i = 40
    shuffled[i], shuffled[i + 1], shuffled[i + 2] = in_order[i + 2], in_order[i], in_order[i + 1]
    state_a, out_a = run(in_order)
    state_b, out_b = run(shuffled)
    assert without_sequence_alerts(out_b) == without_sequence_alerts(out_a)
    assert snapshot(state_b) == snapshot(state_a)
    alerts = [o.alert for o in out_b if type(o) is SurveillanceAlerted and o.alert in SEQUENCE_ALERTS]
    assert alerts == ["sequence_gap", "sequence_resumed"]


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 10_000), block=st.integers(2, 12), shuffle_seed=st.integers(0, 2**32))
def test_any_bounded_reordering_gives_the_same_settlements_and_state(seed, block, shuffle_seed):
    """Property: events displaced by less than the window (here, shuffled within blocks) produce
    exactly the outputs and the state of the in-order history, apart from the gap alerts."""
    in_order = table_history(seed, hours=1.0)
    rng = random.Random(shuffle_seed)
    shuffled = in_order[:1]
    for k in range(1, len(in_order), block):
        chunk = in_order[k:k + block]
        rng.shuffle(chunk)
        shuffled.extend(chunk)
    state_a, out_a = run(in_order)
    state_b, out_b = run(shuffled)
    assert without_sequence_alerts(out_b) == without_sequence_alerts(out_a)
    assert snapshot(state_b) == snapshot(state_a)
    gaps = sum(1 for o in out_b if type(o) is SurveillanceAlerted and o.alert == "sequence_gap")
    resumed = sum(1 for o in out_b if type(o) is SurveillanceAlerted and o.alert == "sequence_resumed")
    assert resumed <= gaps and not state_b.held


def test_a_duplicate_of_a_held_event_is_counted_not_held_twice():
    s = Script().open("live")
    s.shooter("ann", 3)
    s.seq += 1
    ahead = s.record("DiceThrown", die1=1, die2=3, valid=True)
    s.send(ahead)
    before = snapshot(s.state)
    assert s.send(dict(ahead)) == []
    after = snapshot(s.state)
    assert after.pop("duplicates") == before.pop("duplicates") + 1
    assert after == before


def test_an_arrival_beyond_the_window_is_rejected_with_the_event_and_can_be_resent():
    s = Script().open("live")
    s.shooter("ann", 3)
    gap_seq = s.seq + 1
    s.seq += 1
    for _ in range(SEQUENCE_WINDOW):
        s.roll(1, 1, valid=False)
    assert len(s.state.held) == SEQUENCE_WINDOW
    overflow = s.record("DiceThrown", die1=2, die2=2, valid=True)
    before = snapshot(s.state)
    out = s.send(overflow)
    assert [type(o) for o in out] == [EventRejected] and out[0].reason == "sequence_window_full"
    assert out[0].event == overflow and snapshot(s.state) == before
    out = s.send(s.record("DiceThrown", seq=gap_seq, die1=1, die2=1, valid=False))
    assert out[-1].alert == "sequence_resumed" and s.state.received_seq == overflow["seq"] - 1
    assert s.send(overflow) == []                         # the floor re-sends it: applied in order
    assert s.state.point == 4 and s.state.last_seq == overflow["seq"]


def test_a_rejected_event_uses_its_seq_so_the_next_one_is_no_gap():
    s = Script().open("live")
    s.shooter("ann", 3)
    s.rejected("stake_out_of_limits", s.wager, "f", "fire", 50, 3)
    assert s.throw(4) == []                               # applied at once, nothing held
    assert s.state.point == 4 and not s.state.held


def test_a_suspended_table_survives_serialization():
    history = table_history(seed=11)
    cut = 30
    ahead = history[cut + 1:cut + 6]
    state, _ = run(history[:cut] + ahead)
    assert sorted(state.held) == [r["seq"] for r in ahead]
    restored = TableState.from_record(json.loads(json.dumps(state.to_record())))
    assert restored.to_record() == state.to_record()
    rest = history[cut:cut + 1] + history[cut + 6:]
    live_state, live_out = run(rest, state)
    replay_state, replay_out = run(rest, restored)
    assert [output_to_record(o) for o in replay_out] == [output_to_record(o) for o in live_out]
    assert replay_state.to_record() == live_state.to_record()


def test_a_reopened_table_keeps_its_feed():
    s = Script().open("live")
    s.shooter("ann", 3)
    s.close()
    s.seq += 1
    ahead = s.record("ShooterChanged", shooter_id="bob", position=4, reason="table_open")
    assert s.send(ahead)[0].alert == "sequence_gap"
    out = s.send(s.record("TableOpened", seq=ahead["seq"] - 1, table_kind="hybrid"))
    assert out[-1].alert == "sequence_resumed"
    assert s.state.table_kind == "hybrid" and s.state.shooter_id == "bob" and not s.state.held


def test_no_settlement_is_decided_by_an_event_after_a_gap():
    """Whatever is missing, every settlement's deciding seq is within the unbroken run."""
    history = table_history(seed=5)
    for drop in (20, 57, 90):
        state, outputs = run(history[:drop] + history[drop + 1:])
        decided = [o.seq for o in outputs if type(o) is WagerSettled]
        assert decided and max(decided) < history[drop]["seq"]
        assert state.received_seq == history[drop]["seq"] - 1
