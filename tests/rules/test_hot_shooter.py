"""Hot Shooter jackpot (§ 623c.4)."""
import pytest

from .table_script import Script, assert_settled

PAYTABLE = "hot-shooter-623c.4e"


def shooter_table(*wagers, kind="hybrid", rules=None):
    s = Script().open(kind, rules)
    s.shooter("ann", 7)
    for wager_id, cents in wagers:
        assert s.wager(wager_id, "hot_shooter", cents, 7) == []
    return s


def hand_of(s, n):
    """n valid throws from the come-out roll through the seven-out, both included (n >= 2):
    come-out 4 (point), n-2 elevens, a loser 7."""
    assert n >= 2
    s.throw(4, *([11] * (n - 2)), 7)
    assert s.state.must_pass


@pytest.mark.parametrize("n, outcome, odds", [
    (2, "lose", 0), (7, "lose", 0),
    (8, "push", 0), (15, "push", 0),
    (16, "win", 2), (23, "win", 2),
    (24, "win", 4), (31, "win", 4),
    (32, "win", 6), (39, "win", 6),
    (40, "win", 11), (44, "win", 11),
    (45, "win", 29), (49, "win", 29),
    (50, "win", 99), (73, "win", 99),
])
def test_hot_shooter_pays_by_throws_to_the_seven_out_623c_4_d_e(n, outcome, odds):
    """§ 623c.4(d),(e): N <= 7 loses, 8..15 push, 16..23 2 to 1, 24..31 4 to 1, 32..39 6 to 1,
    40..44 11 to 1, 45..49 29 to 1, 50 or more 99 to 1."""
    s = shooter_table(("h", 300))
    hand_of(s, n)
    assert_settled(s, "h", outcome, odds * 300, seq=s.seq, detail=f"throws={n}", paytable=PAYTABLE)


@pytest.mark.parametrize("kind", ["hybrid", "fully_automated"])
def test_hot_shooter_offered_on_electronic_and_hybrid_tables_623c_4_a(kind):
    s = shooter_table(("h", 100), kind=kind)
    assert "h" in s.state.pending


def test_hot_shooter_rejected_on_a_live_table_623c_4_a():
    s = shooter_table(kind="live")
    s.rejected("hot_shooter_live_table", s.wager, "h", "hot_shooter", 100, 1)


def test_hot_shooter_placed_before_the_come_out_roll_623c_4_c():
    """§ 623c.4(c): prior to the come-out roll that establishes a point."""
    s = shooter_table(("h", 100))
    s.throw(6)
    s.rejected("out_of_window", s.wager, "late", "hot_shooter", 100, 1)
    s.throw(6)                                 # point made: come-out again
    assert s.wager("next", "hot_shooter", 100, 1) == []


def test_hot_shooter_come_out_seven_does_not_settle_623c_4_d():
    """§ 623c.4(d): settled by the seven-out only; a come-out 7 is one more throw."""
    s = shooter_table(("h", 100))
    s.throw(7, 11, 7, 2)
    assert s.settlements() == []
    s.throw(5, 7)
    assert_settled(s, "h", "lose", 0, detail="throws=6")


def test_hot_shooter_counts_from_the_come_out_after_placing_623c_4_d():
    """A wager placed at a later come-out counts from that come-out roll."""
    s = shooter_table(("first", 100))
    s.throw(*([12] * 10), 6, 6)               # 12 throws, point made
    s.wager("second", "hot_shooter", 100, 2)
    s.throw(9, 7)
    assert_settled(s, "first", "push", 0, detail="throws=14")
    assert_settled(s, "second", "lose", 0, detail="throws=2")


def test_hot_shooter_invalid_rolls_do_not_count_623a_8():
    s = shooter_table(("h", 100))
    s.roll(2, 2)
    for _ in range(10):
        s.roll(5, 5, valid=False)
    s.throw(7)
    assert_settled(s, "h", "lose", 0, detail="throws=2")


def test_hot_shooter_carried_to_successor_keeps_count_623a_11_a_2_rules_md():
    """docs/rules.md: on a voluntary change the wager stays with the successor with its count."""
    s = shooter_table(("h", 100))
    s.throw(4, *[11] * 10)                     # 11 throws, point 4 on
    s.shooter("bob", 8, "voluntary")
    s.throw(*[11] * 4, 7)                      # bob: 5 throws through the seven-out
    assert_settled(s, "h", "win", 200, detail="throws=16")


def test_hot_shooter_large_win_alert():
    """§ 623c.4(e): 50 or more throws 99 to 1; a large win alerts surveillance (engine reading)."""
    s = shooter_table(("h", 2000))             # 99 * $20 = $1,980
    hand_of(s, 50)
    assert s.settlement("h").won_cents == 198000
    assert [a.wager_ids for a in s.alerts("large_win")] == [("h",)]


def test_hot_shooter_places_no_markers():
    """§ 623c.4: the wager counts throws; there are no layout markers to place or clear."""
    s = shooter_table(("h", 100))
    hand_of(s, 20)
    assert s.markers() == [] and s.cleared() == []
