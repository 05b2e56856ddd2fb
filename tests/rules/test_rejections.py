"""Bad input: a clear rejection, and nothing lost (docs/rules.md, last section).

Every rule break yields one EventRejected with a stable reason code and the offending event, and
leaves `state.to_record()` exactly as it was; a record that cannot be an event raises ContractError
from `record_to_event` (the shell turns it into a rejection with `malformed`)."""
import pytest

from craps_streams.rules import (
    ContractError,
    EventRejected,
    TableState,
    WagerSettled,
    apply,
    event_to_record,
    malformed,
    record_to_event,
)

from .table_script import Script, snapshot


def mid_game(kind="hybrid", rules=None):
    """Wagers of every kind in action, marks on every layout, point 8 on."""
    s = Script().open(kind, rules)
    s.shooter("ann", 3)
    for wid, w, cents in [("f", "fire", 500), ("s", "all_small", 100), ("t", "all_tall", 100),
                          ("a", "all_or_nothing", 100), ("h", "hot_roller", 100)]:
        assert s.wager(wid, w, cents, 3) == []
    if kind != "live":
        assert s.wager("j", "hot_shooter", 100, 3) == []
    s.roll(1, 3)
    s.roll(2, 2)          # point 4 made; number 4 complete
    s.roll(2, 6)          # point 8 on
    return s


def sevened_out():
    s = mid_game()
    s.throw(7)
    assert s.state.must_pass
    return s


def seven_out_with(kind="hybrid", rules=None):
    """Every window open: the shooter sevened out, no wager left in action but the carried ones."""
    s = mid_game(kind, rules)
    s.throw(7)
    s.shooter("bob", 4, "seven_out")
    return s


def closed():
    s = mid_game()
    s.close()
    return s


# (name, table builder, action(s), expected reason)
CASES = [
    # a wager out of its window (§ 623a.11(a)(1), § 623a.12(1), § 623c.1(b), § 623c.4(c))
    ("fire_out_of_window_623a_11_a_1", mid_game, lambda s: s.wager("x", "fire", 100, 1), "out_of_window"),
    ("bonus_out_of_window_623a_12_1", mid_game, lambda s: s.wager("x", "all_tall", 100, 1), "out_of_window"),
    ("hot_roller_out_of_window_623c_1_b", mid_game, lambda s: s.wager("x", "hot_roller", 100, 1), "out_of_window"),
    ("hot_shooter_out_of_window_623c_4_c", mid_game, lambda s: s.wager("x", "hot_shooter", 100, 1), "out_of_window"),
    # a stake out of limits (§ 623a.11(b)(1); docs/rules.md Stakes)
    ("fire_stake_150_623a_11_b_1", sevened_out, lambda s: s.wager("x", "fire", 150, 1), "stake_out_of_limits"),
    ("fire_stake_600_623a_11_b_1", sevened_out, lambda s: s.wager("x", "fire", 600, 1), "stake_out_of_limits"),
    ("zero_stake_rules_md", sevened_out, lambda s: s.wager("x", "all_small", 0, 1), "stake_out_of_limits"),
    ("negative_stake_rules_md", sevened_out, lambda s: s.wager("x", "hot_roller", -5, 1), "stake_out_of_limits"),
    ("stake_over_table_limit_rules_md", lambda: seven_out_with(rules={"limits": {"hot_roller": [100, 200]}}),
     lambda s: s.wager("x", "hot_roller", 201, 1), "stake_out_of_limits"),
    ("stake_under_table_limit_rules_md", lambda: seven_out_with(rules={"limits": {"all_tall": [100, 900]}}),
     lambda s: s.wager("x", "all_tall", 99, 1), "stake_out_of_limits"),
    # a position outside 1..16 (§ 623c.1(a)(2)(i))
    ("wager_position_0_623c_1_a_2_i", sevened_out, lambda s: s.wager("x", "fire", 100, 0), "position_out_of_range"),
    ("wager_position_17_623c_1_a_2_i", sevened_out, lambda s: s.wager("x", "hot_roller", 100, 17), "position_out_of_range"),
    ("shooter_position_17_623c_1_a_2_i", sevened_out, lambda s: s.shooter("bob", 17, "seven_out"), "position_out_of_range"),
    ("shooter_position_0_623c_1_a_2_i", mid_game, lambda s: s.shooter("bob", 0, "voluntary"), "position_out_of_range"),
    # a die outside 1..6 (§ 623a.8; even on an invalid roll)
    ("die_0_623a_8", mid_game, lambda s: s.roll(0, 3), "die_out_of_range"),
    ("die_7_623a_8", mid_game, lambda s: s.roll(3, 7), "die_out_of_range"),
    ("die_negative_623a_8", mid_game, lambda s: s.roll(-1, 1), "die_out_of_range"),
    ("invalid_roll_die_9_623a_8", mid_game, lambda s: s.roll(9, 1, valid=False), "die_out_of_range"),
    # a throw by a shooter who sevened out (§ 623a.10(a)(1))
    ("throw_after_seven_out_623a_10_a_1", sevened_out, lambda s: s.roll(4, 4), "shooter_sevened_out"),
    ("invalid_roll_after_seven_out_623a_10_a_1", sevened_out, lambda s: s.roll(4, 4, valid=False),
     "shooter_sevened_out"),
    # a change to a Hot Roller wager (§ 623c.1(b))
    ("hot_roller_increase_623c_1_b", mid_game, lambda s: s.change("h", 200), "hot_roller_locked"),
    ("hot_roller_reduce_623c_1_b", mid_game, lambda s: s.change("h", 50), "hot_roller_locked"),
    ("hot_roller_remove_623c_1_b", mid_game, lambda s: s.change("h", 0), "hot_roller_locked"),
    ("fire_change_623a_11_a_3", mid_game, lambda s: s.change("f", 100), "wager_locked"),
    ("change_unknown_wager", mid_game, lambda s: s.change("nope", 100), "unknown_wager"),
    # a Hot Shooter wager on a live table (§ 623c.4(a))
    ("hot_shooter_on_live_table_623c_4_a", lambda: seven_out_with("live"),
     lambda s: s.wager("x", "hot_shooter", 100, 1), "hot_shooter_live_table"),
    # other breaks
    ("unknown_wager_kind", mid_game, lambda s: s.wager("x", "big_red", 100, 1), "unknown_wager_kind"),
    ("wager_id_already_in_action", mid_game, lambda s: s.wager("f", "hot_roller", 100, 1), "duplicate_wager_id"),
    ("table_already_open", mid_game, lambda s: s.open("live").last, "table_already_open"),
    ("throw_on_closed_table", closed, lambda s: s.roll(1, 1), "table_closed"),
    ("wager_on_closed_table", closed, lambda s: s.wager("x", "fire", 100, 1), "table_closed"),
    ("shooter_on_closed_table", closed, lambda s: s.shooter("bob", 1, "voluntary"), "table_closed"),
    ("close_closed_table", closed, lambda s: s.close(), "table_closed"),
    ("change_on_closed_table", closed, lambda s: s.change("h", 1), "table_closed"),
    ("cbo_on_closed_table", closed, lambda s: s.come_bets_only(True), "table_closed"),
    ("throw_without_shooter_623a_10", lambda: Script().open("live"), lambda s: s.roll(1, 1), "no_shooter"),
    ("shooter_reason_mismatch_623a_10", mid_game, lambda s: s.shooter("bob", 1, "seven_out"), "reason_mismatch"),
    ("shooter_unknown_reason_623a_10", mid_game, lambda s: s.shooter("bob", 1, "lunch"), "unknown_reason"),
    ("come_bets_only_point_on_623a_10_b", mid_game, lambda s: s.come_bets_only(True), "come_bets_only_not_allowed"),
]


@pytest.mark.parametrize("build, action, reason",
                         [pytest.param(b, a, r, id=n) for n, b, a, r in CASES])
def test_rejected_with_reason_and_state_unchanged(build, action, reason):
    """docs/rules.md, Bad input: a rejection record with the reason and the offending event; the state exactly as it was."""
    s = build()
    last_seq = s.state.last_seq
    r = s.rejected(reason, action, s)
    assert r.id == f"T1/{r.seq}/rejected"
    assert s.state.last_seq == last_seq, "a rejected event does not advance last_seq"


@pytest.mark.parametrize("build, action, reason",
                         [pytest.param(b, a, r, id=n) for n, b, a, r in CASES])
def test_rejected_event_leaves_the_rest_of_the_game_unchanged(build, action, reason):
    """docs/rules.md, Bad input: Nothing lost: the game after a rejection plays as if it had never been sent."""
    s, t = build(), build()
    s.rejected(reason, action, s)

    def finish(x):
        if x.state.closed:
            x.open("hybrid")
            x.shooter("zed", 9)
        for hand in range(3):
            if x.state.must_pass:
                x.shooter(f"z{hand}", 9, "seven_out")
            for kind in ("fire", "all_small", "hot_roller", "hot_shooter"):
                x.wager(f"{kind}-{hand}", kind, 100, 9)      # in or out of window: alike on both
            x.throw(4, 4, 5, 5, 6, 6, 8, 7)
        x.close()

    finish(s)
    finish(t)

    def strip(outs):
        return [(type(o).__name__, getattr(o, "wager_id", None), getattr(o, "outcome", None),
                 getattr(o, "won_cents", None), getattr(o, "marker", None), getattr(o, "reason", None))
                for o in outs]

    rejection = s.outputs.index(next(o for o in s.outputs if type(o) is EventRejected and o.reason == reason))
    assert strip(s.outputs[:rejection] + s.outputs[rejection + 1:]) == strip(t.outputs)
    assert any(type(o) is WagerSettled for o in t.outputs)


def test_rejected_seq_can_be_reused_by_the_corrected_event():
    """docs/rules.md, Duplicates (a seq at or below the last *applied* seq): a rejected event does
    not advance last_seq, so the corrected event with the same seq applies."""
    s = mid_game()
    bad = s.record("DiceThrown", die1=7, die2=1, valid=True)
    s.rejected("die_out_of_range", s.send, bad)
    good = dict(bad, die1=3, die2=5)
    s.send(good)
    assert s.state.last_seq == good["seq"] and s.state.duplicates == 0
    assert s.state.point == 0, "the 3-5 made point 8"


@pytest.mark.parametrize("record", [
    {"type": "TableOpened", "table_kind": "live"},
    {"type": "ShooterChanged", "shooter_id": "ann", "position": 1, "reason": "table_open"},
    {"type": "DiceThrown", "die1": 1, "die2": 2},
    {"type": "WagerPlaced", "wager_id": "x", "position": 1, "wager": "fire", "amount_cents": 100},
    {"type": "WagerChangeRequested", "wager_id": "x", "amount_cents": 100},
    {"type": "ComeBetsOnly", "active": True},
    {"type": "TableClosed"},
], ids=lambda r: r["type"])
def test_unknown_table_rejected(record):
    """docs/rules.md: an event for a table never opened is rejected (`unknown_table`), except the opening."""
    s = Script("ghost")
    full = s.record(record.pop("type"), **record)
    out = s.send(full)
    if full["type"] == "TableOpened":
        assert out == [] and s.state is not None
        return
    r, = out
    assert type(r) is EventRejected and r.reason == "unknown_table"
    assert r.table_id == "ghost" and r.event == event_to_record(record_to_event(full))
    assert s.state is None


MALFORMED = [
    ("not_an_object", ["DiceThrown"], "malformed"),
    ("no_type", {"table_id": "T1", "seq": 1, "ts": 0}, "unknown_event_type"),
    ("unknown_type", {"type": "DiceRolled", "table_id": "T1", "seq": 1, "ts": 0}, "unknown_event_type"),
    ("type_not_string", {"type": 3, "table_id": "T1", "seq": 1, "ts": 0}, "unknown_event_type"),
    ("no_table_id", {"type": "TableClosed", "seq": 1, "ts": 0}, "malformed"),
    ("empty_table_id", {"type": "TableClosed", "table_id": "", "seq": 1, "ts": 0}, "malformed"),
    ("table_id_number", {"type": "TableClosed", "table_id": 7, "seq": 1, "ts": 0}, "malformed"),
    ("seq_zero", {"type": "TableClosed", "table_id": "T1", "seq": 0, "ts": 0}, "malformed"),
    ("seq_string", {"type": "TableClosed", "table_id": "T1", "seq": "5", "ts": 0}, "malformed"),
    ("seq_bool", {"type": "TableClosed", "table_id": "T1", "seq": True, "ts": 0}, "malformed"),
    ("seq_float", {"type": "TableClosed", "table_id": "T1", "seq": 5.0, "ts": 0}, "malformed"),
    ("no_ts", {"type": "TableClosed", "table_id": "T1", "seq": 1}, "malformed"),
    ("ts_negative", {"type": "TableClosed", "table_id": "T1", "seq": 1, "ts": -1}, "malformed"),
    ("dice_missing_die2", {"type": "DiceThrown", "table_id": "T1", "seq": 1, "ts": 0, "die1": 3}, "malformed"),
    ("die_string", {"type": "DiceThrown", "table_id": "T1", "seq": 1, "ts": 0, "die1": "3", "die2": 4}, "malformed"),
    ("die_float", {"type": "DiceThrown", "table_id": "T1", "seq": 1, "ts": 0, "die1": 3.0, "die2": 4}, "malformed"),
    ("valid_not_bool", {"type": "DiceThrown", "table_id": "T1", "seq": 1, "ts": 0, "die1": 3, "die2": 4,
                        "valid": 1}, "malformed"),
    ("extra_field", {"type": "DiceThrown", "table_id": "T1", "seq": 1, "ts": 0, "die1": 3, "die2": 4,
                     "total": 7}, "malformed"),
    ("wager_amount_float", {"type": "WagerPlaced", "table_id": "T1", "seq": 1, "ts": 0, "wager_id": "x",
                            "position": 1, "wager": "fire", "amount_cents": 1.5}, "malformed"),
    ("wager_no_id", {"type": "WagerPlaced", "table_id": "T1", "seq": 1, "ts": 0, "position": 1,
                     "wager": "fire", "amount_cents": 100}, "malformed"),
    ("wager_position_string", {"type": "WagerPlaced", "table_id": "T1", "seq": 1, "ts": 0, "wager_id": "x",
                               "position": "1", "wager": "fire", "amount_cents": 100}, "malformed"),
    ("shooter_no_reason", {"type": "ShooterChanged", "table_id": "T1", "seq": 1, "ts": 0, "shooter_id": "a",
                           "position": 1}, "malformed"),
    ("cbo_active_missing", {"type": "ComeBetsOnly", "table_id": "T1", "seq": 1, "ts": 0}, "malformed"),
    ("cbo_active_null", {"type": "ComeBetsOnly", "table_id": "T1", "seq": 1, "ts": 0, "active": None}, "malformed"),
    ("unknown_table_kind", {"type": "TableOpened", "table_id": "T1", "seq": 1, "ts": 0,
                            "table_kind": "virtual"}, "unknown_table_kind"),
    ("rules_not_object", {"type": "TableOpened", "table_id": "T1", "seq": 1, "ts": 0, "table_kind": "live",
                          "rules": "B"}, "malformed"),
    ("rules_unknown_key", {"type": "TableOpened", "table_id": "T1", "seq": 1, "ts": 0, "table_kind": "live",
                           "rules": {"hot_roller": "B"}}, "invalid_rules"),
]


@pytest.mark.parametrize("record, reason", [pytest.param(r, c, id=n) for n, r, c in MALFORMED])
def test_malformed_record_raises_contract_error(record, reason):
    """docs/rules.md: a malformed message is rejected with a reason; nothing is silently dropped."""
    with pytest.raises(ContractError) as e:
        record_to_event(record)
    assert e.value.reason == reason and e.value.message
    r = malformed(record, e.value, "input.jsonl:7")
    assert type(r) is EventRejected and r.reason == reason and r.id == "rejected/input.jsonl:7"
    assert r.event == (record if type(record) is dict else {"raw": repr(record)})


def test_well_formed_records_round_trip_through_the_contract():
    """docs/rules.md, Bad input: a rejection carries the offending event, so events and records must convert both ways."""
    s = mid_game()
    for record in s.records:
        assert event_to_record(record_to_event(record)) == record


def test_restored_state_rejects_the_same_way():
    """docs/rules.md, Bad input: a state restored from its record rejects alike and stays unchanged."""
    s = mid_game()
    restored = TableState.from_record(s.state.to_record())
    bad = s.record("DiceThrown", die1=0, die2=0, valid=True)
    _, out1, _ = apply(s.state, record_to_event(bad))
    _, out2, _ = apply(restored, record_to_event(bad))
    assert out1 == out2 and out1[0].reason == "die_out_of_range"
    assert snapshot(restored) == snapshot(s.state)
