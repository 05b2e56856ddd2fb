"""Hot Roller (§ 623c.1)."""
import pytest

from craps_streams.rules.wager import POSITION

from .table_script import Script, assert_settled

PAYTABLE_A = "hot-roller-623c.1h-A"
COMBOS = {4: [(1, 3), (2, 2)], 5: [(1, 4), (2, 3)], 6: [(1, 5), (2, 4), (3, 3)],
          8: [(2, 6), (3, 5), (4, 4)], 9: [(3, 6), (4, 5)], 10: [(4, 6), (5, 5)]}


def roller_table(*wagers, rules=None):
    s = Script().open("live", rules)
    s.shooter("ann", 2)
    for wager_id, cents, pos in wagers:
        assert s.wager(wager_id, "hot_roller", cents, pos) == []
    return s


def roll_all(s, pairs):
    for d1, d2 in pairs:
        s.roll(d1, d2)


def complete(s, *numbers):
    """Throw every combination of these numbers; returns with the point where it lands."""
    roll_all(s, [c for n in numbers for c in COMBOS[n]])


def seven_out(s):
    """A loser 7: with the point off, first set point 4 with 1-3 (at most a lone combination, never
    completing a number the callers did not complete), then throw 3-4."""
    if s.state.point == 0:
        s.roll(1, 3)
    s.roll(3, 4)


def test_hot_roller_marker_on_each_combination_thrown_623c_1_d():
    """§ 623c.1(d): a marker button on the combination just thrown; the order of the dice does not
    matter (§ 623c.1(a)(2)(iii)); totals 2, 3, 11, 12 have no combination."""
    s = roller_table(("h", 500, 1))
    out = s.roll(3, 1)
    m, = s.markers("hot_roller", out)
    assert (m.marker, m.count, m.seq) == ("combo-1-3", 1, s.seq)
    assert s.markers(out=s.roll(1, 3)) == []          # same combination, other order
    for pair in [(1, 1), (1, 2), (5, 6), (6, 6), (6, 5)]:
        assert s.markers(out=s.roll(*pair)) == []


def test_hot_roller_number_complete_623c_1_f():
    """§ 623c.1(f) example: 1-3 then 2-2: a marker on the number 4."""
    s = roller_table(("h", 500, 1))
    s.roll(1, 3)
    out = s.roll(2, 2)
    assert [(m.marker, m.count) for m in s.markers("hot_roller", out)] == [
        ("combo-2-2", 2), ("number-4", 1)]


@pytest.mark.parametrize("numbers, outcome, odds", [
    ((), "lose", 0),
    ((4,), "lose", 0),
    ((4, 5), "win", 5),
    ((4, 5, 9), "win", 10),
    ((10, 8, 6, 5), "win", 20),
    ((4, 5, 6, 8, 9), "win", 50),
    ((4, 5, 6, 8, 9, 10), "win", 200),
])
def test_hot_roller_seven_out_pays_by_completed_numbers_623c_1_g_h(numbers, outcome, odds):
    """§ 623c.1(g),(h) Paytable A: 2 numbers 5 to 1 ... 6 numbers 200 to 1; fewer than 2 loses."""
    s = roller_table(("h1", 100, 1), ("h2", 700, 16))
    complete(s, *numbers)
    seven_out(s)
    assert s.state.must_pass, "the last 7 was a loser 7"
    for wid, stake in (("h1", 100), ("h2", 700)):
        assert_settled(s, wid, outcome, odds * stake, seq=s.seq, paytable=PAYTABLE_A,
                       detail=f"numbers={len(numbers)}")


def test_hot_roller_example_three_numbers_623c_1_g():
    """§ 623c.1(g) example: both ways of 4, 5 and 9 then a 7: paid for three numbers."""
    s = roller_table(("h", 1000, 4))
    roll_all(s, [(1, 3), (2, 2), (2, 3), (4, 1), (3, 6), (4, 5), (1, 5), (3, 4)])
    assert s.state.must_pass
    assert_settled(s, "h", "win", 10 * 1000, detail="numbers=3")


def test_hot_roller_come_out_seven_loses_literal_623c_1_g():
    """§ 623c.1(g), literal reading (default): a 7 on the come-out roll loses, whatever is marked."""
    s = roller_table(("h", 1000, 4))
    roll_all(s, [(1, 3), (2, 2), (2, 3), (4, 1), (3, 6), (4, 5)])  # 4, 5, 9 complete; point off
    assert s.state.point == 0
    out = s.roll(6, 1)
    assert_settled(s, "h", "lose", 0, seq=s.seq, detail="come-out seven, numbers=3")
    assert [c.reason for c in s.cleared("hot_roller", out)] == ["seven"]
    assert not s.state.must_pass


def test_hot_roller_first_come_out_seven_loses_623c_1_g():
    s = roller_table(("h", 1000, 4))
    s.roll(2, 5)
    assert_settled(s, "h", "lose", 0, detail="come-out seven, numbers=0")


def test_hot_roller_may_not_be_changed_until_resolved_623c_1_b():
    """§ 623c.1(b): may not be reduced, increased or removed until resolved."""
    s = roller_table(("h", 1000, 4))
    for cents in (500, 2000, 0):
        s.rejected("hot_roller_locked", s.change, "h", cents)
    s.roll(1, 3)
    s.rejected("hot_roller_locked", s.change, "h", 1)
    seven_out(s)
    s.rejected("unknown_wager", s.change, "h", 500)   # resolved: nothing left to change


@pytest.mark.parametrize("pos", [1, 8, 16])
def test_hot_roller_positions_1_to_16_623c_1_a_2_i(pos):
    s = roller_table(("h", 100, pos))
    assert s.state.pending["h"][POSITION] == pos


@pytest.mark.parametrize("pos", [0, -1, 17, 99])
def test_hot_roller_position_outside_1_to_16_rejected_623c_1_a_2_i(pos):
    s = roller_table()
    s.rejected("position_out_of_range", s.wager, "h", "hot_roller", 100, pos)


def test_hot_roller_each_cycle_its_own_layout_623c_1_d():
    """docs/rules.md: marks belong to the wagers that saw them: a wager made after a 7 starts from none."""
    s = roller_table(("old", 100, 1))
    complete(s, 4, 5)
    s.roll(5, 2)                                    # come-out 7: old loses (literal reading)
    assert s.wager("new", "hot_roller", 100, 2) == []
    complete(s, 6)
    seven_out(s)
    assert_settled(s, "new", "lose", 0, detail="numbers=1")


def test_hot_roller_carried_to_successor_keeps_markers_623a_11_a_2_rules_md():
    """docs/rules.md: a voluntary change before a loser 7 carries the wager with its markers."""
    s = roller_table(("h", 100, 1))
    complete(s, 4, 5)
    s.roll(1, 5)                                    # point 6
    s.shooter("bob", 3, "voluntary")
    complete(s, 9)
    s.roll(3, 4)                                    # bob sevens out
    assert_settled(s, "h", "win", 1000, detail="numbers=3")


def test_hot_roller_six_numbers_large_win_alert():
    """§ 623c.1(h) Paytable A: six numbers 200 to 1; a large win alerts surveillance (engine reading)."""
    s = roller_table(("h", 1000, 1))               # 200 * $10 = $2,000
    complete(s, 4, 5, 6, 8, 9, 10)
    out = s.roll(3, 4)
    assert s.state.must_pass
    assert s.settlement("h").won_cents == 200000
    assert [a.wager_ids for a in s.alerts("large_win", out)] == [("h",)]
