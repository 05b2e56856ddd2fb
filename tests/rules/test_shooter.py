"""Shooter continuation (§ 623a.10) and the carry-over of side wagers on a surrender
(§ 623a.11(a)(2), docs/rules.md "Shooter continuation")."""
import pytest

from .table_script import Script, assert_settled

KINDS = ("fire", "all_small", "all_tall", "all_or_nothing", "hot_roller", "hot_shooter")
STAKE = {"fire": 500, "all_small": 1000, "all_tall": 1000, "all_or_nothing": 1000,
         "hot_roller": 1000, "hot_shooter": 1000}


def table(kind="hybrid", rules=None):
    s = Script().open(kind, rules)
    s.shooter("ann", 1)
    return s


# ---------------------------------------------------------------- seven-out forces a pass


def test_seven_out_forces_a_pass_623a_10_a_1():
    """§ 623a.10(a)(1): the shooter passes the dice on a loser 7; her throws are invalid input."""
    s = table()
    s.throw(8, 7)
    assert s.state.must_pass and s.state.point == 0
    s.rejected("shooter_sevened_out", s.roll, 2, 3)
    s.rejected("shooter_sevened_out", s.roll, 2, 3, valid=False)
    s.rejected("reason_mismatch", s.shooter, "ann", 1, "voluntary")
    s.rejected("reason_mismatch", s.shooter, "bob", 2, "compulsory")
    s.rejected("reason_mismatch", s.shooter, "bob", 2, "table_open")
    assert s.shooter("bob", 2, "seven_out") == []
    assert (s.state.shooter_id, s.state.shooter_position, s.state.must_pass) == ("bob", 2, False)
    assert s.roll(2, 3) == [] and s.state.point == 5


def test_come_out_seven_is_not_a_seven_out_623a_10_a_1():
    s = table()
    s.throw(7, 7, 11)
    assert not s.state.must_pass
    s.rejected("reason_mismatch", s.shooter, "bob", 2, "seven_out")


def test_seven_out_change_needs_a_seven_out_623a_10_a():
    s = table()
    s.throw(6)
    s.rejected("reason_mismatch", s.shooter, "bob", 2, "seven_out")


def test_table_open_change_only_for_the_first_shooter_623a_10():
    s = Script().open("live")
    s.rejected("reason_mismatch", s.shooter, "ann", 1, "voluntary")
    s.rejected("reason_mismatch", s.shooter, "ann", 1, "seven_out")
    assert s.shooter("ann", 1, "table_open") == []
    s.rejected("reason_mismatch", s.shooter, "bob", 2, "table_open")


def test_shooter_change_unknown_reason_rejected_623a_10():
    s = table()
    s.rejected("unknown_reason", s.shooter, "bob", 2, "bored")


@pytest.mark.parametrize("pos", [0, 17])
def test_shooter_position_outside_1_to_16_rejected_623c_1_a_2_i(pos):
    s = table()
    s.rejected("position_out_of_range", s.shooter, "bob", pos, "voluntary")


def test_no_throw_before_a_shooter_is_announced_623a_10():
    s = Script().open("live")
    s.rejected("no_shooter", s.roll, 3, 3)


# ---------------------------------------------------------------- voluntary / compulsory


@pytest.mark.parametrize("reason", ["voluntary", "compulsory"])
def test_pass_after_any_throw_623a_10_a(reason):
    """§ 623a.10(a): the shooter may pass the dice after any roll; § 623a.10(a)(2): the boxperson
    may order it."""
    s = table()
    s.throw(11)
    assert s.shooter("bob", 2, reason) == []
    assert (s.state.shooter_id, s.state.shooter_throws, s.state.hand) == ("bob", 0, 2)


@pytest.mark.parametrize("reason", ["voluntary", "compulsory"])
def test_point_survives_a_change_of_shooter_rules_md_623a_10_c(reason):
    """docs/rules.md: on a voluntary or compulsory change the successor throws for the point; only a
    seven-out ends the hand."""
    s = table()
    s.wager("f", "fire", 500, 1)
    s.throw(6)
    s.shooter("bob", 2, reason)
    assert s.state.point == 6
    s.throw(6)                                   # bob makes the point
    assert s.state.point == 0
    s.throw(5, 5, 7, 8)                          # come-out 7 in between is not a seven-out
    assert not s.state.must_pass and s.state.point == 8
    s.throw(7)
    assert s.state.must_pass
    assert_settled(s, "f", "lose", 0, detail="points=2", seq=s.seq)


def test_successor_seven_with_the_point_on_is_a_seven_out_rules_md():
    s = table()
    s.throw(9)
    s.shooter("bob", 2, "voluntary")
    s.throw(7)
    assert s.state.must_pass
    s.rejected("shooter_sevened_out", s.roll, 1, 1)


def place_all(s, prefix, pos=1):
    for kind in KINDS:
        assert s.wager(f"{prefix}-{kind}", kind, STAKE[kind], pos) == [], kind


@pytest.mark.parametrize("reason", ["voluntary", "compulsory"])
def test_surrender_carries_every_side_wager_with_its_marks_623a_11_a_2(reason):
    """§ 623a.11(a)(2) and docs/rules.md (the same default for every side wager): pending wagers stay in
    action with the successor and settle on the successor's deciding throw, marks and counts kept."""
    s = table()
    place_all(s, "a")
    s.throw(4, 4, 5, 5, 6, 6)                     # ann: points 4, 5, 6 (Fire 3); combos 1-3, 1-4, 1-5
    s.roll(1, 1)
    s.roll(1, 2)                                  # totals 2..6 marked: All Small paid now
    assert_settled(s, "a-all_small", "win", 34 * 1000, seq=s.seq)
    s.roll(2, 2)
    s.roll(1, 3)                                  # 2-2: number 4 complete; point 4 made again
    s.roll(2, 3)
    s.roll(4, 1)                                  # 2-3: number 5 complete; point 5 made again
    s.roll(2, 6)                                  # point 8 on
    throws_ann = s.state.shooter_throws
    assert throws_ann == 13
    s.shooter("bob", 2, reason)
    assert s.settlements() == [s.settlement("a-all_small")], "nothing settles on a surrender"
    assert s.state.point == 8
    s.throw(9)
    out = s.roll(3, 5)                            # bob makes the 8: the Fire Bet's 4th point
    assert s.alerts("fire_bet_four_points", out)[0].shooter_id == "bob"
    s.throw(9, 7)                                 # point 9, bob sevens out
    assert_settled(s, "a-fire", "win", 24 * 500, seq=s.seq, detail="points=4")
    assert_settled(s, "a-all_tall", "lose", 0, seq=s.seq)
    assert_settled(s, "a-all_or_nothing", "lose", 0, seq=s.seq)
    assert_settled(s, "a-hot_roller", "win", 5 * 1000, seq=s.seq, detail="numbers=2")
    assert_settled(s, "a-hot_shooter", "win", 2 * 1000, seq=s.seq, detail="throws=17")


def test_wagers_for_the_successor_start_from_none_rules_md():
    """docs/rules.md, marks belong to the wagers that saw them."""
    s = table()
    s.wager("a-fire", "fire", 100, 1)
    s.throw(4, 4, 5, 5, 6, 6, 8)                  # three points made, point 8 on
    s.shooter("bob", 2, "voluntary")
    s.wager("b-fire", "fire", 100, 2)
    s.throw(8, 9, 9, 10, 7)
    assert_settled(s, "a-fire", "win", 24900, detail="points=5")
    assert_settled(s, "b-fire", "lose", 0, detail="points=2")


@pytest.mark.parametrize("kind", KINDS)
def test_surrender_push_configurable_623a_11_a_2_rules_md(kind):
    """docs/rules.md: configurable per wager to `push` instead: the wager in action is returned at the
    change's seq; the other kinds still carry."""
    s = table(rules={"surrender": {kind: "push"}})
    place_all(s, "a")
    s.throw(11, 6)                                # a natural, then point 6
    out = s.shooter("bob", 2, "voluntary")
    change = s.seq
    pushed = [o for o in out if o.__class__.__name__ == "WagerSettled"]
    assert [w.wager_id for w in pushed] == [f"a-{kind}"]
    assert_settled(s, f"a-{kind}", "push", 0, seq=change)
    for other in KINDS:
        if other != kind:
            assert f"a-{other}" in s.state.pending
    # the layout comes off when no wager is left on it (Bonus Craps kinds share one layout)
    alone = kind in ("fire", "hot_roller")
    assert [c.reason for c in s.cleared(out=out)] == (["surrendered"] if alone else [])


def test_surrender_push_all_bonus_kinds_clears_the_layout_rules_md():
    s = table(rules={"surrender": {"all_small": "push", "all_tall": "push", "all_or_nothing": "push"}})
    place_all(s, "a")
    s.throw(2, 8)                                 # totals 2 and 8 marked, point 8
    out = s.shooter("bob", 2, "compulsory")
    assert sorted(o.wager_id for o in out if o.__class__.__name__ == "WagerSettled") == [
        "a-all_or_nothing", "a-all_small", "a-all_tall"]
    assert [(c.layout, c.reason) for c in s.cleared(out=out)] == [("bonus_craps", "surrendered")]
    assert s.state.cohorts["bonus_craps"] == []


def test_surrender_push_leaves_wagers_still_in_their_window_rules_md():
    """A wager not yet in action (no throw since it was placed) is for the successor: it stays."""
    s = table(rules={"surrender": {"fire": "push", "hot_roller": "push"}})
    s.wager("f", "fire", 100, 1)
    s.wager("h", "hot_roller", 100, 1)
    assert s.shooter("bob", 2, "voluntary") == []
    assert {"f", "h"} <= set(s.state.pending)
    s.roll(1, 3)
    s.roll(1, 3)                                  # point 4 made by bob
    s.throw(6, 7)
    assert_settled(s, "f", "lose", 0, detail="points=1")
    assert_settled(s, "h", "lose", 0, detail="numbers=0")


def test_seven_out_is_not_a_surrender_push_623a_10_a_1():
    """The push alternative is for a surrender before a loser 7 only."""
    s = table(rules={"surrender": {"fire": "push"}})
    s.wager("f", "fire", 100, 1)
    s.throw(4, 7)
    s.shooter("bob", 2, "seven_out")
    assert_settled(s, "f", "lose", 0)


# ---------------------------------------------------------------- come-bets-only (§ 623a.10(b))


def cbo_table(kind="hybrid", rules=None):
    """ann made her point 6 (Fire: 1 point); wagers of every kind in action; the mode is on."""
    s = table(kind, rules)
    place_all(s, "a")
    s.roll(1, 5)
    s.roll(2, 4)                                  # point 6 made
    assert s.come_bets_only(True) == []
    assert s.state.come_bets_only
    return s


@pytest.mark.parametrize("setup, why", [
    ([], "no throw yet"),
    ([6], "point on"),
    ([6, 7], "sevened out"),
])
def test_come_bets_only_needs_a_shooter_who_has_thrown_point_off_623a_10_b(setup, why):
    """§ 623a.10(b): after the shooter makes the come-out point, with the point off."""
    s = table()
    s.throw(*setup)
    s.rejected("come_bets_only_not_allowed", s.come_bets_only, True)


def test_come_bets_only_without_shooter_rejected_623a_10_b():
    s = Script().open("live")
    s.rejected("come_bets_only_not_allowed", s.come_bets_only, True)


def test_come_bets_only_twice_or_off_when_off_rejected_623a_10_b():
    s = table()
    s.throw(11)
    s.rejected("come_bets_only_not_allowed", s.come_bets_only, False)
    s.come_bets_only(True)
    s.rejected("come_bets_only_not_allowed", s.come_bets_only, True)


def test_come_bets_only_no_point_is_established_623a_10_b():
    """§ 623a.10(b): the on/off marker stays off: 4..10 establish no point, so none can be made."""
    s = cbo_table()
    for t in (4, 5, 6, 8, 9, 10, 4):
        out = s.throw(t)
        assert s.state.point == 0
        assert s.markers("fire", out) == []
    assert all(s.unsettled(f"a-{k}") for k in ("fire", "hot_shooter", "hot_roller"))


def test_come_bets_only_seven_is_not_a_seven_out_623a_10_b():
    """Engine reading: a 7 in the mode is no loser 7: Bonus Craps lose, Hot Roller settles as on a
    come-out 7 (loses by default), Fire Bet and Hot Shooter stay in action, the shooter keeps the dice."""
    s = cbo_table()
    for pair in [(2, 2), (3, 1), (1, 4), (3, 2)]:
        s.roll(*pair)                             # numbers 4 and 5 complete, no point
    s.throw(7)
    seven = s.seq
    assert not s.state.must_pass
    assert_settled(s, "a-all_small", "lose", 0, seq=seven)
    assert_settled(s, "a-all_tall", "lose", 0, seq=seven)
    assert_settled(s, "a-all_or_nothing", "lose", 0, seq=seven)
    assert_settled(s, "a-hot_roller", "lose", 0, seq=seven, detail="come-out seven, numbers=2")
    assert s.unsettled("a-fire") and s.unsettled("a-hot_shooter")
    s.throw(5)                                    # the same shooter throws on
    assert s.state.point == 0
    s.come_bets_only(False)
    s.throw(8, 8, 9, 9, 10, 10, 4, 4, 5, 7)       # points 8, 9, 10, 4: with the 6, five points
    assert s.state.must_pass
    assert_settled(s, "a-fire", "win", 249 * 500, detail="points=5")
    assert_settled(s, "a-hot_shooter", "win", 2 * 1000, detail="throws=18")


def test_come_bets_only_hot_roller_pay_by_table_623c_1_g():
    """With hot_roller_come_out_seven = pay_by_table the mode's 7 pays by the table."""
    s = cbo_table(rules={"hot_roller_come_out_seven": "pay_by_table"})
    for pair in [(2, 2), (3, 1), (1, 4), (3, 2), (3, 4)]:
        s.roll(*pair)
    assert_settled(s, "a-hot_roller", "win", 5 * 1000, detail="numbers=2")


@pytest.mark.parametrize("kind", KINDS)
def test_come_bets_only_every_window_closed_623a_10_b(kind):
    s = cbo_table()
    s.rejected("out_of_window", s.wager, "late", kind, STAKE[kind], 3)
    s.throw(7)                                    # even after a 7 (fresh cycle, point off)
    s.rejected("out_of_window", s.wager, "late", kind, STAKE[kind], 3)


def test_come_bets_only_ended_by_off_623a_10_b():
    s = cbo_table()
    s.throw(7)
    assert s.come_bets_only(False) == []
    assert not s.state.come_bets_only
    assert s.wager("hr", "hot_roller", 100, 3) == []      # fresh cycle, point off
    assert s.wager("hs", "hot_shooter", 100, 3) == []
    s.rejected("out_of_window", s.wager, "f", "fire", 100, 3)   # same shooter: not her first throw
    s.throw(6)
    assert s.state.point == 6


@pytest.mark.parametrize("reason", ["voluntary", "compulsory"])
def test_come_bets_only_ended_by_a_shooter_change_623a_10_b(reason):
    s = cbo_table()
    s.throw(9)
    s.shooter("bob", 4, reason)
    assert not s.state.come_bets_only
    assert s.wager("f", "fire", 100, 3) == []
    s.throw(9)
    assert s.state.point == 9


def test_come_bets_only_invalid_roll_counts_for_nothing_623a_8():
    s = cbo_table()
    before = s.state.to_record()
    s.roll(3, 4, valid=False)
    after = s.state.to_record()
    assert after.pop("last_seq") == s.seq
    assert after.pop("received_seq") == s.seq
    before.pop("last_seq")
    before.pop("received_seq")
    assert after == before
