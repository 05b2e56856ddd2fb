"""Fire Bet (§ 623a.11; paytable § 623a.5 as docs/rules.md states it)."""
import pytest

from craps_streams.rules.wager import AMOUNT_CENTS

from .table_script import Script, assert_settled

FIRE = "fire-623a.5"


def fire_table(*wagers, kind="live", rules=None):
    """A table with shooter ann at 3 and Fire Bets (id, cents, pos) placed before her come-out."""
    s = Script().open(kind, rules)
    s.shooter("ann", 3)
    for wager_id, cents, pos in wagers:
        assert s.wager(wager_id, "fire", cents, pos) == []
    return s


def make_points(s, *points):
    """Each point established on the come-out and made on the next throw."""
    for p in points:
        s.throw(p, p)


@pytest.mark.parametrize("points, outcome, odds", [
    ((), "lose", 0),
    ((4,), "lose", 0),
    ((4, 5, 6), "lose", 0),
    ((4, 5, 6, 8), "win", 24),
    ((10, 9, 8, 6, 5), "win", 249),
    ((4, 5, 6, 8, 9, 10), "win", 999),
])
def test_fire_settles_by_distinct_points_at_the_loser_7_623a_11_a_5(points, outcome, odds):
    """§ 623a.11(a)(5), § 623a.5: 4 points 24 to 1, 5 points 249 to 1, 6 points 999 to 1, fewer lose."""
    s = fire_table(("f1", 100, 3), ("f2", 500, 7))
    make_points(s, *points)
    assert s.settlements() == []
    s.throw(6, 7)  # point 6, loser 7
    seven_out = s.seq
    for wid, stake in (("f1", 100), ("f2", 500)):
        assert_settled(s, wid, outcome, odds * stake, seq=seven_out, detail=f"points={len(points)}",
                       paytable=FIRE)
    # the 6 set as a point before the loser 7 was not made: it does not count
    assert s.state.must_pass


def test_fire_repeated_point_does_not_increment_623a_11_b_2():
    """§ 623a.11(b)(2): a point made more than once counts once."""
    s = fire_table(("f1", 500, 1))
    make_points(s, 4, 4, 5, 4, 6, 5, 6)
    s.throw(8, 7)
    assert_settled(s, "f1", "lose", 0, detail="points=3")
    assert [(m.marker, m.count) for m in s.markers("fire")] == [("point-4", 1), ("point-5", 2),
                                                                 ("point-6", 3)]


def test_fire_marker_inscribed_with_running_count_623a_11_a_4():
    """§ 623a.11(a)(4): with each new point made, a marker with the number of different points."""
    s = fire_table(("f1", 200, 1))
    out = s.throw(9, 9)
    m, = s.markers("fire", out)
    assert (m.marker, m.count, m.seq) == ("point-9", 1, s.seq)
    assert m.id == f"T1/{s.seq}/0"
    s.throw(10)                      # point 10 established: no marker
    assert s.markers("fire", s.last) == []
    out = s.throw(10)
    assert [(m.marker, m.count) for m in s.markers("fire", out)] == [("point-10", 2)]
    assert s.throw(7) == []          # a come-out 7: the Fire Bet stays, markers too
    s.throw(5, 7)                    # loser 7: settled, markers cleared
    assert [(c.layout, c.reason) for c in s.cleared("fire", s.last)] == [("fire", "seven_out")]


def test_fire_points_in_any_order_623a_11_b_3():
    """§ 623a.11(b)(3): the points need not be made in any order."""
    a = fire_table(("f1", 100, 1))
    make_points(a, 10, 4, 8, 5)
    a.throw(6, 7)
    b = fire_table(("f1", 100, 1))
    make_points(b, 5, 8, 4, 10)
    b.throw(6, 7)
    assert a.settlement("f1").won_cents == b.settlement("f1").won_cents == 2400


def test_fire_not_settled_before_the_loser_7_even_at_six_points_623a_11_a_5():
    """§ 623a.11(a)(5): collected or paid upon the loser 7 only; a come-out 7 is not a loser 7."""
    s = fire_table(("f1", 500, 1))
    make_points(s, 4, 5, 6, 8, 9, 10)
    s.throw(7, 11, 2, 7)            # come-out naturals and craps
    assert s.settlements() == [] and "f1" in s.state.pending
    s.throw(4, 7)
    w = assert_settled(s, "f1", "win", 999 * 500, detail="points=6")
    assert w.seq == s.seq


def test_fire_point_established_but_not_made_does_not_count_623a_11_a_4():
    """§ 623a.11(a)(4): only a point made counts."""
    s = fire_table(("f1", 100, 1))
    s.throw(4, 5, 6, 8, 9, 10, 7)
    assert_settled(s, "f1", "lose", 0, detail="points=0")
    assert s.markers("fire") == []


def test_fire_four_points_alerts_surveillance_623a_11_a_6():
    """§ 623a.11(a)(6): at four different points surveillance is notified, once per hand, naming the
    table, the shooter and every Fire Bet in action."""
    s = fire_table(("f1", 100, 3), ("f2", 500, 9))
    make_points(s, 4, 5, 6)
    assert s.alerts() == []
    out = s.throw(8, 8)
    alert, = s.alerts(out=out)
    assert alert.alert == "fire_bet_four_points"
    assert alert.shooter_id == "ann" and alert.table_id == "T1" and alert.seq == s.seq
    assert set(alert.wager_ids) == {"f1", "f2"}
    assert "T1" in alert.message and "ann" in alert.message
    assert alert.id.startswith(f"T1/{s.seq}/")
    # the alert comes with (after) the fourth marker
    assert out.index(alert) > out.index(s.markers("fire", out)[0])
    make_points(s, 9, 10, 4)
    assert len(s.alerts("fire_bet_four_points")) == 1, "once per hand"
    s.throw(5, 7)
    assert s.settlement("f1").won_cents == 999 * 100


def test_fire_four_points_alert_again_in_next_hand_623a_11_a_6():
    """§ 623a.11(a)(6): a new shooter's hand is a new hand."""
    s = fire_table(("f1", 100, 3))
    make_points(s, 4, 5, 6, 8)
    s.throw(5, 7)
    s.shooter("bob", 4, "seven_out")
    s.wager("f2", "fire", 100, 4)
    make_points(s, 10, 9, 8, 6)
    alerts = s.alerts("fire_bet_four_points")
    assert len(alerts) == 2 and alerts[1].shooter_id == "bob" and alerts[1].wager_ids == ("f2",)


def test_fire_four_points_alert_once_per_hand_across_a_voluntary_change_623a_11_a_6():
    """docs/rules.md: the alert goes out once per hand, and "only a seven-out ends the hand" (the point
    and the hand survive a voluntary or compulsory change of shooter)."""
    s = fire_table(("f1", 100, 3))
    make_points(s, 4, 5, 6, 8)                   # ann: four points, the hand's alert
    assert len(s.alerts("fire_bet_four_points")) == 1
    s.throw(9)
    s.shooter("bob", 4, "voluntary")              # the same hand goes on with bob
    s.wager("f2", "fire", 100, 4)
    s.throw(9)                                    # bob makes ann's point 9
    make_points(s, 10, 4, 5)                      # bob's Fire Bet reaches four points too
    assert s.settlements() == [] and len(s.markers("fire")) == 4 + 6
    assert len(s.alerts("fire_bet_four_points")) == 1, "once per hand"
    s.throw(6, 7)                                 # the seven-out ends the hand
    assert_settled(s, "f1", "win", 999 * 100, detail="points=6")
    assert_settled(s, "f2", "win", 24 * 100, detail="points=4")


def test_fire_no_alert_without_fire_bets_623a_11_a_6():
    """§ 623a.11(a)(6): the alert confirms Fire Bets; with none in action there is none."""
    s = fire_table()
    make_points(s, 4, 5, 6, 8)
    assert s.alerts() == []


@pytest.mark.parametrize("cents", [100, 200, 300, 400, 500])
def test_fire_stake_one_to_five_dollars_accepted_623a_11_b_1(cents):
    """§ 623a.11(b)(1): $1..$5 in $1 increments."""
    s = fire_table()
    assert s.wager("f", "fire", cents, 1) == []
    assert s.state.pending["f"][AMOUNT_CENTS] == cents


@pytest.mark.parametrize("cents", [0, -100, 1, 99, 150, 250, 499, 501, 600, 1000])
def test_fire_stake_outside_one_to_five_dollars_rejected_623a_11_b_1(cents):
    """§ 623a.11(b)(1): anything else is rejected."""
    s = fire_table()
    s.rejected("stake_out_of_limits", s.wager, "f", "fire", cents, 1)


def test_fire_placed_before_new_shooters_come_out_only_623a_11_a_1():
    """§ 623a.11(a)(1): prior to a new shooter's initial come-out roll."""
    s = fire_table(("f1", 100, 1))
    s.throw(11)
    s.rejected("out_of_window", s.wager, "f2", "fire", 100, 2)


def test_fire_carried_to_successor_keeps_its_points_623a_11_a_2():
    """§ 623a.11(a)(2): on a voluntary or compulsory surrender before a loser 7 the pending Fire Bet
    settles on the successor's loser 7, with the points already made."""
    s = fire_table(("f1", 100, 1))
    make_points(s, 4, 5, 6)
    s.throw(9)                                  # point 9 on
    assert s.shooter("bob", 4, "voluntary") == []
    s.wager("f2", "fire", 100, 2)               # a Fire Bet for bob starts from none
    out = s.throw(9)                            # bob makes ann's point: a new distinct point
    old, new = (f"fire-{s.placed[w]['seq']}" for w in ("f1", "f2"))
    assert [(m.cohort, m.marker, m.count) for m in s.markers("fire", out)] == [
        (old, "point-9", 4), (new, "point-9", 1)]
    alert, = s.alerts("fire_bet_four_points", out)
    assert alert.shooter_id == "bob" and set(alert.wager_ids) == {"f1", "f2"}
    s.throw(8, 7)
    assert_settled(s, "f1", "win", 2400, seq=s.seq, detail="points=4")
    assert_settled(s, "f2", "lose", 0, seq=s.seq, detail="points=1")


def test_fire_large_win_alerts_surveillance():
    """docs/rules.md (engine reading): a win at or above large_win_alert_cents (default $1,000) also
    alerts surveillance; § 623a.11(a)(6) asks surveillance to confirm Fire payouts."""
    s = fire_table(("big", 500, 2), ("small", 100, 5))
    make_points(s, 4, 5, 6, 8, 9)
    out = s.throw(10, 7)
    large = s.alerts("large_win", out)
    assert [a.wager_ids for a in large] == [("big",)]  # 249*500 = 124500 >= 100000; 24900 is not
    assert large[0].seq == s.seq
    assert s.settlement("big").won_cents == 124500


def test_fire_several_bets_one_layout_623a_11_a_3():
    """§ 623a.11(a)(3): all Fire Bets of the hand on one layout: one marker per point, not per bet."""
    s = fire_table(*((f"f{i}", 100, 1 + i % 16) for i in range(40)))
    out = s.throw(4, 4)
    assert len(s.markers("fire", out)) == 1
    s.throw(5, 7)
    assert len(s.settlements()) == 40
    assert len(s.cleared("fire", s.last)) == 1
