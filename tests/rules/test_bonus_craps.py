"""Bonus Craps: All Small, All Tall, All Or Nothing At All (§ 623a.12; paytable § 623a.5(h))."""
import pytest

from .table_script import Script, assert_settled

BONUS = "bonus-623a.5h"
SMALL = (2, 3, 4, 5, 6)
TALL = (8, 9, 10, 11, 12)


def bonus_table(*wagers, rules=None):
    """Shooter ann; wagers (id, kind, cents) placed before her initial come-out roll."""
    s = Script().open("live", rules)
    s.shooter("ann", 5)
    for wager_id, kind, cents in wagers:
        assert s.wager(wager_id, kind, cents, 5) == []
    return s


@pytest.mark.parametrize("kind, totals, odds", [
    ("all_small", SMALL, 34),
    ("all_small", (6, 5, 4, 3, 2), 34),
    ("all_tall", TALL, 34),
    ("all_tall", (12, 9, 11, 8, 10), 34),
    ("all_or_nothing", SMALL + TALL, 175),
    ("all_or_nothing", (12, 2, 11, 3, 10, 4, 9, 5, 8, 6), 175),
])
def test_bonus_paid_the_moment_its_numbers_are_marked_623a_12_4_and_6(kind, totals, odds):
    """§ 623a.12(4),(6), § 623a.5(h): paid as soon as every number is marked, in any order."""
    s = bonus_table(("b", kind, 1000))
    for t in totals[:-1]:
        s.throw(t)
    assert s.settlements() == []
    s.throw(totals[-1])
    assert_settled(s, "b", "win", odds * 1000, seq=s.seq, paytable=BONUS)


def test_bonus_example_all_small_paid_all_or_nothing_stays_623a_12_4():
    """§ 623a.12(4) example: All Small and All Or Nothing; 2..6 thrown: All Small paid, the markers
    stay until the All Or Nothing wager is decided."""
    s = bonus_table(("small", "all_small", 500), ("aon", "all_or_nothing", 500))
    out = s.throw(*SMALL)
    assert_settled(s, "small", "win", 34 * 500, seq=s.seq)
    assert "aon" in s.state.pending and s.cleared("bonus_craps", out) == []
    s.throw(8, 9, 10)
    out = s.throw(7)                 # point 10 on: seven-out (any 7 would do)
    assert_settled(s, "aon", "lose", 0, seq=s.seq)
    assert [c.reason for c in s.cleared("bonus_craps", out)] == ["seven"]


def test_bonus_seven_on_the_come_out_loses_every_wager_623a_12_5():
    """§ 623a.12(5): a 7 at any time, including the come-out roll, collects every Bonus Craps wager
    and clears the markers."""
    s = bonus_table(("s", "all_small", 100), ("t", "all_tall", 100), ("a", "all_or_nothing", 100))
    s.throw(2, 3, 12, 11)            # come-out craps and naturals: no point
    assert s.state.point == 0
    out = s.throw(7)                 # a come-out 7
    for w in "sta":
        assert_settled(s, w, "lose", 0, seq=s.seq)
    cleared, = s.cleared("bonus_craps", out)
    assert cleared.reason == "seven"
    assert s.state.pending == {}


def test_bonus_seven_out_loses_623a_12_5():
    s = bonus_table(("s", "all_small", 100))
    s.throw(2, 3, 4, 5, 7)           # point 4 established, then the 5, then a loser 7
    assert_settled(s, "s", "lose", 0, seq=s.seq)


def test_bonus_marker_once_per_total_623a_12_3():
    """§ 623a.12(3): a marker button on each total thrown; a repeated total adds none; no marker
    on a 7."""
    s = bonus_table(("a", "all_or_nothing", 100))
    s.throw(4)
    s.throw(4)                      # point made: still the same total, no new marker
    s.throw(11, 11, 2)
    assert [(m.marker, m.count) for m in s.markers("bonus_craps")] == [
        ("total-4", 1), ("total-11", 2), ("total-2", 3)]
    assert all(m.layout == "bonus_craps" and m.cohort == f"bonus_craps-{s.placed['a']['seq']}"
               for m in s.markers())


def test_bonus_one_or_more_wagers_per_player_623a_12_1():
    """§ 623a.12(1): a player may place one or more of the wagers."""
    s = bonus_table(("s1", "all_small", 100), ("s2", "all_small", 300), ("t", "all_tall", 200),
                    ("a", "all_or_nothing", 100))
    s.throw(*SMALL)
    assert s.settlement("s1").won_cents == 3400 and s.settlement("s2").won_cents == 10200
    s.throw(*TALL)
    assert s.settlement("t").won_cents == 6800 and s.settlement("a").won_cents == 17500
    # every wager of the layout settled: markers come off
    assert [c.reason for c in s.cleared("bonus_craps", s.last)] == ["settled"]


def test_bonus_placed_before_new_shooters_come_out_only_623a_12_1():
    s = bonus_table(("s", "all_small", 100))
    s.throw(2)
    for kind in ("all_small", "all_tall", "all_or_nothing"):
        s.rejected("out_of_window", s.wager, "late", kind, 100, 1)


def test_bonus_carried_to_successor_keeps_markers_623a_11_a_2_rules_md():
    """docs/rules.md (§ 623a.11(a)(2) applied to every side wager): on a voluntary surrender the wager
    stays in action with its markers; a wager placed for the successor starts from none."""
    s = bonus_table(("old", "all_small", 100))
    s.throw(2, 3, 4)                # point 4 on
    s.shooter("bob", 6, "compulsory")
    s.wager("new", "all_small", 100, 6)
    s.throw(5, 6)
    assert_settled(s, "old", "win", 3400, seq=s.seq)
    assert "new" in s.state.pending
    s.throw(2, 3)
    assert s.unsettled("new")       # its layout saw 5, 6, 2, 3: the 4 was only the old layout's
    s.throw(4)
    assert_settled(s, "new", "win", 3400, seq=s.seq)


def test_bonus_win_large_alert():
    """§ 623a.5(h): All Or Nothing 175 to 1; engine reading: a win at or above
    large_win_alert_cents (default $1,000) also alerts surveillance (large_win)."""
    s = bonus_table(("a", "all_or_nothing", 1000))  # 175 * $10 = $1,750
    out = s.throw(*SMALL, *TALL)
    assert s.settlement("a").won_cents == 175000
    alert, = s.alerts("large_win", out)
    assert alert.wager_ids == ("a",) and alert.shooter_id == "ann"


def test_a_seven_s_detail_names_the_totals_marked():
    from craps_streams.rules.bonus_craps import seven_detail

    assert seven_detail(0) == "seven with nothing marked"
    assert seven_detail((1 << 4) | (1 << 11)) == "seven with 4,11 marked"
    assert seven_detail(sum(1 << t for t in (2, 3, 4, 5, 6, 8, 9, 10, 11, 12))) == \
        "seven with 2,3,4,5,6,8,9,10,11,12 marked"
