"""The Rules Submission (§ 601a.2): per-casino overrides in a TableOpened `rules` object."""
import pytest

from craps_streams.rules import (
    DEFAULT_RULES,
    ContractError,
    record_to_event,
    rules_from_record,
)
from craps_streams.rules.submission import RulesError

from .table_script import Script, assert_settled

COMBOS = [(1, 3), (2, 2), (1, 4), (2, 3), (1, 5), (2, 4), (3, 3), (2, 6), (3, 5), (4, 4), (3, 6), (4, 5),
          (4, 6), (5, 5)]


def started(rules=None, kind="hybrid"):
    s = Script().open(kind, rules)
    s.shooter("ann", 1)
    return s


def all_six_then_seven_out(s):
    for pair in COMBOS:
        s.roll(*pair)
    assert s.state.point != 0
    s.roll(3, 4)
    assert s.state.must_pass


# ---------------------------------------------------------------- Hot Roller paytables § 623c.1(h)


@pytest.mark.parametrize("rules, name, odds_six", [
    (None, "hot-roller-623c.1h-A", 200),
    ({}, "hot-roller-623c.1h-A", 200),
    ({"hot_roller_paytable": "A"}, "hot-roller-623c.1h-A", 200),
    ({"hot_roller_paytable": "standard"}, "hot-roller-623c.1h-A", 200),
    ({"hot_roller_paytable": "B"}, "hot-roller-623c.1h-B", 300),
    ({"hot_roller_paytable": "hot-roller-623c.1h-B"}, "hot-roller-623c.1h-B", 300),
])
def test_hot_roller_paytable_a_or_b_623c_1_h(rules, name, odds_six):
    """§ 623c.1(h): all six numbers 200 to 1 (A) or 300 to 1 (B); the rest is the same."""
    s = started(rules)
    s.wager("h", "hot_roller", 100, 1)
    all_six_then_seven_out(s)
    assert_settled(s, "h", "win", odds_six * 100, detail="numbers=6", paytable=name)


@pytest.mark.parametrize("paytable", ["A", "B"])
@pytest.mark.parametrize("numbers, odds", [(2, 5), (3, 10), (4, 20), (5, 50)])
def test_hot_roller_paytables_agree_below_six_623c_1_h(paytable, numbers, odds):
    s = started({"hot_roller_paytable": paytable})
    s.wager("h", "hot_roller", 100, 1)
    # numbers complete in order 4, 5, 6, 8, 9 (COMBOS order); end with the point on, then a 7
    by_number = {4: 2, 5: 4, 6: 7, 8: 10, 9: 12}
    for pair in COMBOS[:by_number[(4, 5, 6, 8, 9)[numbers - 1]]]:
        s.roll(*pair)
    if s.state.point == 0:
        s.roll(5, 6)
        s.roll(4, 6)            # point 10 (one combination of the 10 only)
    s.roll(3, 4)
    assert_settled(s, "h", "win", odds * 100, detail=f"numbers={numbers}")


def test_hot_roller_come_out_seven_pay_by_table_623c_1_g():
    """Configurable alternative to the literal § 623c.1(g): a come-out 7 pays by the table."""
    s = started({"hot_roller_come_out_seven": "pay_by_table"})
    s.wager("h", "hot_roller", 100, 1)
    s.wager("h2", "hot_roller", 100, 1)
    for pair in [(1, 3), (2, 2), (2, 3), (1, 4), (3, 6), (4, 5)]:   # 4, 5, 9 complete; point off
        s.roll(*pair)
    assert s.state.point == 0
    s.roll(1, 6)
    assert_settled(s, "h", "win", 1000, detail="numbers=3")
    s.wager("h3", "hot_roller", 100, 1)
    s.roll(1, 6)                                  # come-out 7 with nothing marked
    assert_settled(s, "h3", "lose", 0, detail="numbers=0")


def test_hot_roller_come_out_seven_lose_explicit_623c_1_g():
    s = started({"hot_roller_come_out_seven": "lose"})
    s.wager("h", "hot_roller", 100, 1)
    for pair in [(1, 3), (2, 2), (2, 3), (1, 4)]:
        s.roll(*pair)
    s.roll(1, 6)
    assert_settled(s, "h", "lose", 0)


# ---------------------------------------------------------------- Bonus Craps § 623a.5(h), § 623b.3


@pytest.mark.parametrize("rules, name, odds", [
    (None, "bonus-623a.5h", (34, 34, 175)),
    ({"bonus_paytable": "standard"}, "bonus-623a.5h", (34, 34, 175)),
    ({"bonus_paytable": "alternate"}, "bonus-623b.3", (30, 30, 150)),
    ({"bonus_paytable": "bonus-623b.3"}, "bonus-623b.3", (30, 30, 150)),
])
def test_bonus_paytable_standard_or_alternate_623b_3(rules, name, odds):
    """§ 623a.5(h): 34, 34, 175 to 1; § 623b.3 alternate: 30, 30, 150 to 1."""
    s = started(rules)
    for wid, kind in (("s", "all_small"), ("t", "all_tall"), ("a", "all_or_nothing")):
        s.wager(wid, kind, 200, 1)
    s.throw(2, 3, 4, 5, 6, 8, 9, 10, 11, 12)
    for wid, o in zip("sta", odds):
        assert_settled(s, wid, "win", o * 200, paytable=name)


# ---------------------------------------------------------------- Fire Bet § 623a.5


def test_fire_custom_paytable_rules_md():
    """docs/rules.md: the Fire Bet paytable is configurable (`fire_custom`, points -> odds)."""
    rules = {"fire_custom": {"3": 10, "4": 50, "6": 500}}
    results = {}
    for points in range(7):
        s = started(rules)
        s.wager("f", "fire", 100, 1)
        for p in (4, 5, 6, 8, 9, 10)[:points]:
            s.throw(p, p)
        s.throw(4 if points < 1 else 10, 7)
        w = s.settlement("f")
        assert w.paytable == "fire-custom-3x10-4x50-6x500"
        results[points] = (w.outcome, w.won_cents)
    assert results == {0: ("lose", 0), 1: ("lose", 0), 2: ("lose", 0), 3: ("win", 1000),
                       4: ("win", 5000), 5: ("win", 5000), 6: ("win", 50000)}


def test_fire_stake_limits_within_623a_11_b_1():
    """Table limits narrow the Fire Bet's $1..$5; they can never widen it (§ 623a.11(b)(1))."""
    s = started({"limits": {"fire": [200, 400]}})
    s.rejected("stake_out_of_limits", s.wager, "a", "fire", 100, 1)
    s.rejected("stake_out_of_limits", s.wager, "b", "fire", 500, 1)
    assert s.wager("c", "fire", 300, 1) == []
    w = started({"limits": {"fire": [100, 100000]}})
    w.rejected("stake_out_of_limits", w.wager, "d", "fire", 600, 1)


# ---------------------------------------------------------------- limits (docs/rules.md Stakes)


@pytest.mark.parametrize("kind", ["all_small", "all_tall", "all_or_nothing", "hot_roller", "hot_shooter"])
def test_table_limits_per_wager_rules_md(kind):
    """docs/rules.md Stakes: any positive cents unless the rules set table limits for that wager."""
    s = started({"limits": {kind: [500, 10000]}})
    s.rejected("stake_out_of_limits", s.wager, "lo", kind, 499, 1)
    s.rejected("stake_out_of_limits", s.wager, "hi", kind, 10001, 1)
    assert s.wager("min", kind, 500, 1) == [] and s.wager("max", kind, 10000, 1) == []
    other = "hot_roller" if kind != "hot_roller" else "all_small"
    assert s.wager("other", other, 1, 1) == []  # no limits for the other kinds: 1 cent is fine


def test_no_limits_any_positive_stake_rules_md():
    s = started()
    assert s.wager("a", "all_small", 1, 1) == []
    assert s.wager("b", "hot_shooter", 10**9, 1) == []


# ---------------------------------------------------------------- large wins, surrender


def test_large_win_threshold_configurable():
    """Rules Submission (§ 601a.2): large_win_alert_cents; a win at the threshold alerts."""
    s = started({"large_win_alert_cents": 5000})
    s.wager("h", "hot_roller", 1000, 1)          # 5 to 1 = 5000: at the threshold
    for pair in [(1, 3), (2, 2), (2, 3), (1, 4), (1, 5), (3, 4)]:
        s.roll(*pair)
    assert s.settlement("h").won_cents == 5000
    assert [a.wager_ids for a in s.alerts("large_win")] == [("h",)]


def test_large_win_alert_off_with_zero():
    """Rules Submission (§ 601a.2): large_win_alert_cents = 0 turns the large-win alert off."""
    s = started({"large_win_alert_cents": 0})
    s.wager("h", "hot_roller", 1000, 1)
    all_six_then_seven_out(s)
    assert s.settlement("h").won_cents == 200000 and s.alerts() == []


def test_large_win_just_below_threshold_no_alert():
    """Rules Submission (§ 601a.2): below large_win_alert_cents, no alert."""
    s = started({"large_win_alert_cents": 5001})
    s.wager("h", "hot_roller", 1000, 1)
    for pair in [(1, 3), (2, 2), (2, 3), (1, 4), (1, 5), (3, 4)]:
        s.roll(*pair)
    assert s.settlement("h").won_cents == 5000 and s.alerts() == []


def test_surrender_choice_parsed_per_kind_623a_11_a_2():
    r = rules_from_record({"surrender": {"fire": "push", "hot_roller": "carry"}})
    assert r.surrender_for("fire") == "push" and r.surrender_for("hot_roller") == "carry"
    assert r.surrender_for("all_small") == "carry", "docs/rules.md default: carry"


def test_defaults_are_rules_md():
    assert rules_from_record(None) == DEFAULT_RULES == rules_from_record({})
    r = DEFAULT_RULES
    assert r.fire.odds_for(3) is None and [r.fire.odds_for(n) for n in (4, 5, 6)] == [24, 249, 999]
    assert (r.bonus.all_small, r.bonus.all_tall, r.bonus.all_or_nothing) == (34, 34, 175)
    assert [r.hot_roller.odds_for(n) for n in range(1, 7)] == [None, 5, 10, 20, 50, 200]
    assert r.hot_roller_come_out_seven == "lose" and r.large_win_alert_cents == 100000


# ---------------------------------------------------------------- rules in force


def test_rules_in_force_are_the_latest_opening_601a_2():
    s = started({"hot_roller_paytable": "A"})
    s.wager("h1", "hot_roller", 100, 1)
    s.close()
    s.open("hybrid", {"hot_roller_paytable": "B"})
    s.shooter("bob", 2)
    s.wager("h2", "hot_roller", 100, 1)
    all_six_then_seven_out(s)
    assert_settled(s, "h1", "push", 0, paytable="hot-roller-623c.1h-A", detail="table closed")
    assert_settled(s, "h2", "win", 30000, paytable="hot-roller-623c.1h-B")
    assert s.state.to_record()["rules"] == {"hot_roller_paytable": "B"}


BAD_RULES = [
    "B", 3, [], {"nope": 1},
    {"fire_paytable": "fire-999"}, {"fire_paytable": 5},
    {"bonus_paytable": "extra"}, {"hot_roller_paytable": "C"}, {"hot_shooter_paytable": "big"},
    {"hot_roller_come_out_seven": "push"}, {"hot_roller_come_out_seven": True},
    {"surrender": ["fire"]}, {"surrender": {"fire": "refund"}}, {"surrender": {"craps": "push"}},
    {"limits": [100, 200]}, {"limits": {"fire": [0, 500]}}, {"limits": {"fire": [500, 100]}},
    {"limits": {"fire": [100]}}, {"limits": {"fire": [100, 200, 300]}}, {"limits": {"fire": [1.5, 200]}},
    {"limits": {"fire": "100-200"}}, {"limits": {"craps": [1, 2]}}, {"limits": {"fire": [True, 200]}},
    {"fire_custom": {}}, {"fire_custom": []}, {"fire_custom": {"7": 10}}, {"fire_custom": {"0": 10}},
    {"fire_custom": {"4": 0}}, {"fire_custom": {"4": 2.5}}, {"fire_custom": {"four": 10}},
    {"fire_custom": {"4": "10"}},
    {"large_win_alert_cents": -1}, {"large_win_alert_cents": "100"}, {"large_win_alert_cents": 1.5},
]


@pytest.mark.parametrize("rules", BAD_RULES, ids=repr)
def test_bad_rules_rejected_601a_2(rules):
    """A `rules` object that cannot be a Rules Submission: the TableOpened is rejected."""
    record = {"type": "TableOpened", "table_id": "T1", "seq": 1, "ts": 0, "table_kind": "live",
              "rules": rules}
    with pytest.raises(ContractError) as e:
        record_to_event(record)
    assert e.value.reason in ("invalid_rules", "malformed")
    if isinstance(rules, dict):
        assert e.value.reason == "invalid_rules"
        with pytest.raises(RulesError):
            rules_from_record(rules)


def test_rules_null_is_the_default():
    """Rules Submission (§ 601a.2): a null `rules` means the docs/rules.md defaults."""
    record = {"type": "TableOpened", "table_id": "T1", "seq": 1, "ts": 0, "table_kind": "live",
              "rules": None}
    assert record_to_event(record).rules == DEFAULT_RULES
