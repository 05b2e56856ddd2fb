"""Wager windows (docs/rules.md "Windows"): Fire Bet § 623a.11(a)(1), Bonus Craps § 623a.12(1),
Hot Roller § 623c.1(b), Hot Shooter § 623c.4(c); come-bets-only § 623a.10(b); invalid rolls § 623a.8."""
import pytest

from craps_streams.rules.wager import PLACED_SEQ

from .table_script import Script, assert_settled

STAKE = {"fire": 100, "all_small": 100, "all_tall": 100, "all_or_nothing": 100, "hot_roller": 100,
         "hot_shooter": 100}
KINDS = tuple(STAKE)


def _steps(*steps):
    """A scenario: a hybrid table, then steps: a total (a valid throw), ("invalid", d1, d2),
    ("shooter", reason) for the next shooter, ("cbo", active)."""
    def build():
        s = Script().open("hybrid")
        names = iter(["ann", "bob", "cy", "dee", "eve"])
        for step in steps:
            if isinstance(step, int):
                s.throw(step)
            elif step[0] == "invalid":
                assert s.roll(step[1], step[2], valid=False) == []
            elif step[0] == "shooter":
                assert s.shooter(next(names), 1 + len(s.outputs) % 16, step[1]) == []
            elif step[0] == "cbo":
                assert s.come_bets_only(step[1]) == []
        return s
    return build


SHOOTER = ("shooter", "table_open")
SEVEN_OUT = ("shooter", "seven_out")
VOLUNTARY = ("shooter", "voluntary")
COMPULSORY = ("shooter", "compulsory")

# scenario: (steps, Fire & Bonus open, Hot Roller open, Hot Shooter open)
SCENARIOS = {
    "table_opened_no_shooter_yet": (_steps(), True, True, True),
    "new_shooter_before_come_out": (_steps(SHOOTER), True, True, True),
    "after_come_out_natural_7": (_steps(SHOOTER, 7), False, True, True),
    "after_come_out_natural_11": (_steps(SHOOTER, 11), False, False, True),
    "after_come_out_craps": (_steps(SHOOTER, 2), False, False, True),
    "point_on": (_steps(SHOOTER, 6), False, False, False),
    "point_on_after_throws": (_steps(SHOOTER, 6, 8, 11), False, False, False),
    "point_made": (_steps(SHOOTER, 6, 6), False, False, True),
    "come_out_7_after_point_made": (_steps(SHOOTER, 6, 6, 7), False, True, True),
    "seven_out_before_shooter_change": (_steps(SHOOTER, 6, 7), True, True, True),
    "after_seven_out_shooter_change": (_steps(SHOOTER, 6, 7, SEVEN_OUT), True, True, True),
    "successor_with_point_on_voluntary": (_steps(SHOOTER, 6, VOLUNTARY), True, False, False),
    "successor_with_point_on_compulsory": (_steps(SHOOTER, 6, COMPULSORY), True, False, False),
    "successor_point_off_after_throws": (_steps(SHOOTER, 6, 6, 11, VOLUNTARY), True, True, True),
    "successor_after_first_throw": (_steps(SHOOTER, 6, VOLUNTARY, 11), False, False, False),
    "successor_made_the_point": (_steps(SHOOTER, 6, VOLUNTARY, 6), False, False, True),
    "invalid_roll_before_first_throw": (_steps(SHOOTER, ("invalid", 3, 4)), True, True, True),
    "invalid_roll_after_craps": (_steps(SHOOTER, 2, ("invalid", 3, 4)), False, False, True),
    "invalid_roll_point_on": (_steps(SHOOTER, 6, ("invalid", 1, 1)), False, False, False),
    "invalid_roll_after_seven_out": (_steps(SHOOTER, 6, 7, SEVEN_OUT, ("invalid", 1, 1)), True, True, True),
    "come_bets_only": (_steps(SHOOTER, 11, ("cbo", True)), False, False, False),
    "come_bets_only_after_7": (_steps(SHOOTER, 6, 6, ("cbo", True), 7), False, False, False),
    "come_bets_only_after_4": (_steps(SHOOTER, 6, 6, ("cbo", True), 4), False, False, False),
    "come_bets_only_ended_after_7": (_steps(SHOOTER, 11, ("cbo", True), 7, ("cbo", False)), False, True, True),
    "come_bets_only_ended_after_5": (_steps(SHOOTER, 11, ("cbo", True), 5, ("cbo", False)), False, False, True),
    "come_bets_only_ended_by_voluntary": (_steps(SHOOTER, 11, ("cbo", True), VOLUNTARY), True, True, True),
}

CASES = []
for name, (build, fb, hr, hs) in SCENARIOS.items():
    for kind in KINDS:
        is_open = hr if kind == "hot_roller" else hs if kind == "hot_shooter" else fb
        CASES.append(pytest.param(build, kind, is_open, id=f"{name}-{kind}-{'in' if is_open else 'out'}"))


@pytest.mark.parametrize("build, kind, is_open", CASES)
def test_window_623a_11_a_1_623a_12_1_623c_1_b_623c_4_c(build, kind, is_open):
    """docs/rules.md Windows: Fire/Bonus while the next valid throw is a shooter's first; Hot Roller with
    the point off and no valid throw since the last 7 or shooter change; Hot Shooter with the point
    off; none in come-bets-only mode; an invalid roll changes nothing."""
    s = build()
    if is_open:
        assert s.wager("w", kind, STAKE[kind], 5) == []
        assert s.state.pending["w"][PLACED_SEQ] == s.seq
        assert s.state.last_seq == s.seq
    else:
        s.rejected("out_of_window", s.wager, "w", kind, STAKE[kind], 5)
        assert "w" not in s.state.pending


def test_fire_placed_between_seven_out_and_change_is_for_the_successor_623a_11_a_1():
    """The window between a seven-out and the ShooterChanged is the next shooter's."""
    s = Script().open("live")
    s.shooter("ann", 1)
    s.throw(4, 4, 5, 5, 6, 6, 8, 7)               # ann: three points, seven-out
    s.wager("f", "fire", 100, 2)
    s.shooter("bob", 2, "seven_out")
    s.throw(9, 9, 7)                               # point 9 made; the come-out 7 is no loser 7
    assert s.unsettled("f")
    s.throw(10, 7)
    assert_settled(s, "f", "lose", 0, detail="points=1")


def test_hot_shooter_placed_between_seven_out_and_change_counts_successors_throws_623c_4_c():
    s = Script().open("fully_automated")
    s.shooter("ann", 1)
    s.throw(*[11] * 20, 6, 7)
    s.wager("h", "hot_shooter", 100, 2)
    s.shooter("bob", 2, "seven_out")
    s.throw(5, 7)
    assert_settled(s, "h", "lose", 0, detail="throws=2")


def test_window_reopens_with_a_new_layout_rules_md():
    """Wagers of one window share a layout; the next window starts another."""
    s = Script().open("hybrid")
    s.shooter("ann", 1)
    s.wager("a", "hot_roller", 100, 1)
    s.wager("b", "hot_roller", 100, 2)
    assert s.state.open_cohorts["hot_roller"] is not None
    s.throw(11)
    assert s.state.open_cohorts["hot_roller"] is None and len(s.state.cohorts["hot_roller"]) == 1
    s.throw(7)                                     # both lose; the window reopens
    s.wager("c", "hot_roller", 100, 3)
    s.throw(11)
    cohorts = s.state.cohorts["hot_roller"]
    assert [sorted(c.wagers) for c in cohorts] == [["c"]]
