"""The layouts' facts and the paytables' words from the Rules Submission in force
(craps_streams/rules/board.py) and the codes in words (craps_streams/rules/wording.py)."""
import json

import pytest

from craps_streams.odds import model as odds_model
from craps_streams.odds.bonus_craps import TARGETS
from craps_streams.rules import DEFAULT_RULES, rules_from_record
from craps_streams.rules.board import band_words, board_facts, board_of_record, paytable_words
from craps_streams.rules.paytables import HOT_SHOOTER_STANDARD
from craps_streams.rules.table import POINT_NUMBERS
from craps_streams.rules.wording import cleared_words, detail_words, marker_words, table_kind_words
from craps_streams.sim import floor as sim_floor

CUSTOM = {"fire_custom": {"3": 10, "4": 50, "6": 500}, "bonus_paytable": "alternate",
          "hot_roller_paytable": "B", "hot_roller_come_out_seven": "pay_by_table"}


def test_the_facts_are_the_rules_own():
    """The odds and the simulator take the point numbers and totals from the rules package."""
    assert odds_model.POINTS is POINT_NUMBERS and sim_floor.POINTS is POINT_NUMBERS
    facts = board_facts(DEFAULT_RULES)
    assert facts["points"] == [4, 5, 6, 8, 9, 10]
    assert facts["bonus_totals"] == [2, 3, 4, 5, 6, 8, 9, 10, 11, 12]
    assert facts["bonus_needs"] == {w: list(t) for w, t in TARGETS.items()}
    # § 623c.1(a)(2)(iii): 14 combinations, the order of the dice not mattering
    assert facts["combinations"] == ["1-3", "2-2", "1-4", "2-3", "1-5", "2-4", "3-3", "2-6", "3-5", "4-4",
                                     "3-6", "4-5", "4-6", "5-5"]


def test_default_paytables_in_words():
    """docs/rules.md defaults: § 623a.5 Fire, § 623a.5(h) Bonus, § 623c.1(h) A, § 623c.4(e)."""
    words = paytable_words(DEFAULT_RULES)
    assert words["fire"] == "fewer than 4 points lose; 4 points 24 to 1; 5 points 249 to 1; 6 points 999 to 1"
    assert words["all_small"] == words["all_tall"] == "34 to 1" and words["all_or_nothing"] == "175 to 1"
    assert words["hot_roller"].endswith("6 complete numbers 200 to 1; a come-out 7 loses")
    assert words["hot_roller"].startswith("fewer than 2 complete numbers lose; 2 complete numbers 5 to 1")
    assert words["hot_shooter"] == ("fewer than 8 throws lose; 8-15 throws push; 16-23 throws 2 to 1; "
                                    "24-31 throws 4 to 1; 32-39 throws 6 to 1; 40-44 throws 11 to 1; "
                                    "45-49 throws 29 to 1; 50 throws or more 99 to 1")
    lines = board_facts(DEFAULT_RULES)["words"]
    assert "Pays from 4 points, at the seven-out" in lines["fire"]
    assert "All Small needs 2-6 (34 to 1); All Tall needs 8-12 (34 to 1); All or Nothing needs all 10 (175 to 1)" \
        in lines["bonus"]
    assert "Pays at the seven-out from 2 complete numbers" in lines["hot_roller"]
    assert "Pushes at 8-15 throws, pays from 16 throws" in lines["hot_shooter"]


def test_custom_paytables_in_words():
    """A Rules Submission's own Fire paytable (§ 601a.2) and the alternates are said as they are."""
    rules = rules_from_record(CUSTOM)
    words = paytable_words(rules)
    assert words["fire"] == "fewer than 3 points lose; 3 points 10 to 1; 4-5 points 50 to 1; 6 points 500 to 1"
    assert words["all_small"] == "30 to 1" and words["all_or_nothing"] == "150 to 1"  # § 623b.3
    assert "6 complete numbers 300 to 1; a come-out 7 pays by the same table" in words["hot_roller"]
    lines = board_facts(rules)["words"]
    assert "Pays from 3 points, at the seven-out" in lines["fire"] and "4 points" not in lines["fire"].split(":")[0]
    assert "All Small needs 2-6 (30 to 1)" in lines["bonus"]
    assert board_of_record(CUSTOM)["words"] == lines
    assert board_of_record(None) == board_facts(DEFAULT_RULES)


@pytest.mark.parametrize("custom, said", [
    ({"1": 3}, "no points loses; 1-6 points 3 to 1"),
    ({"6": 2000}, "fewer than 6 points lose; 6 points 2000 to 1"),
    ({"2": 1, "5": 7}, "fewer than 2 points lose; 2-4 points 1 to 1; 5-6 points 7 to 1"),
])
def test_fire_bands_in_words(custom, said):
    assert paytable_words(rules_from_record({"fire_custom": custom}))["fire"] == said


def test_a_push_band_without_end_is_said():
    from craps_streams.rules.paytables import PUSH, Paytable

    assert band_words(Paytable("x", ((8, PUSH),)), "hot_shooter") == ["fewer than 8 throws lose",
                                                                       "8 throws or more push"]
    assert band_words(HOT_SHOOTER_STANDARD, "hot_shooter")[1] == "8-15 throws push"


def test_codes_in_words():
    assert marker_words("hot_roller", "combo-1-3", 1) == "Hot Roller: 1-3 thrown (1 of 14 combinations)"
    assert marker_words("hot_roller", "number-4", 2) == "Hot Roller: 4 complete (2 numbers complete)"
    assert marker_words("fire", "point-6", 3) == "Fire Bet: point 6 made (3 distinct)"
    assert marker_words("bonus_craps", "total-11", 5) == "Bonus Craps: 11 rolled (5 of 10 totals marked)"
    assert marker_words("<b>x</b>", "odd-code", 1) == "<b>x</b>: odd-code (1)"  # unknown: as it is
    assert cleared_words("fire", "seven_out") == "Fire Bet: cleared at the seven-out"
    assert cleared_words("bonus_craps", "seven") == "Bonus Craps: cleared by a 7"
    assert cleared_words("fire", "new_reason") == "Fire Bet: cleared (new_reason)"
    assert table_kind_words("fully_automated") == "fully automated electronic"
    assert table_kind_words(None) == ""
    assert detail_words("points=5") == "5 distinct points"
    assert detail_words("numbers=3") == "3 numbers complete at the seven-out"
    assert detail_words("come-out seven, numbers=2") == "come-out 7 with 2 numbers complete"
    assert detail_words("throws=12") == "12 throws, come-out to seven-out"
    assert detail_words("all_small complete") == "All Small complete"
    assert detail_words("seven with 4,6 marked") == "7 with 4, 6 marked"
    assert detail_words("table closed") == "table closed"


def test_rules_that_cannot_be_read_are_never_shown_as_the_defaults():
    board = board_of_record({"fire_custom": {"9": 10}})
    assert board["points"] == [4, 5, 6, 8, 9, 10]
    assert all(w.startswith("this table's Rules Submission could not be read") for w in board["paytables"].values())
    assert "24 to 1" not in json.dumps(board)
