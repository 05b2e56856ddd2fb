"""A long simulated floor, settled by the core, agrees with the exact odds (craps_streams.odds).

Outcomes are counted per cohort decision (one table, one deciding throw, one wager kind, one
count), not per wager: the wagers of a cohort share their markers, so they are one trial.
Voluntary passes and come-bets-only mode are off here, because the odds describe the plain game.
"""
from __future__ import annotations

import math
import re
from collections import Counter

import pytest

from craps_streams.odds import wager_odds
from craps_streams.replay.engine import Replay
from craps_streams.rules import DEFAULT_RULES, WagerSettled, record_to_event
from craps_streams.sim.floor import floor_events

pytestmark = pytest.mark.slow
Z_LIMIT = 5.0


@pytest.fixture(scope="module")
def decisions() -> dict[str, Counter]:
    replay = Replay()
    seen = set()
    by_wager: dict[str, Counter] = {}
    for record in floor_events(24, 40, seed=99, come_bets_only_rate=0.0, voluntary_rate=0.0):
        for o in replay.feed_event(record_to_event(record)):
            if type(o) is WagerSettled and o.detail != "table closed":
                key = (o.table_id, o.seq, o.wager, o.detail)
                if key not in seen:
                    seen.add(key)
                    by_wager.setdefault(o.wager, Counter())[o.detail] += 1
    assert replay.tally.rejected == 0
    return by_wager


def check(observed: Counter, expected: dict[str, float]) -> None:
    n = sum(observed.values())
    assert n > 500
    assert set(observed) <= set(expected), set(observed) - set(expected)
    for label, p in expected.items():
        mean = n * p
        if mean < 20:
            continue  # too rare for a normal approximation in this run
        z = (observed[label] - mean) / math.sqrt(n * p * (1 - p))
        assert abs(z) < Z_LIMIT, f"{label}: observed {observed[label]}, expected {mean:.1f} (z = {z:.2f})"


def test_fire_bet_points_distribution_matches_odds_623a_11(decisions):
    odds = wager_odds("fire", DEFAULT_RULES)
    check(decisions["fire"], {f"points={int(o.label.split()[0])}": float(o.probability) for o in odds.outcomes})


@pytest.mark.parametrize("wager", ["all_small", "all_tall", "all_or_nothing"])
def test_bonus_craps_win_rate_matches_odds_623a_12(decisions, wager):
    p_win = float(next(o.probability for o in wager_odds(wager, DEFAULT_RULES).outcomes if o.label == "win"))
    observed = Counter()
    for detail, count in decisions[wager].items():
        observed["win" if "complete" in detail else "lose"] += count
    check(observed, {"win": p_win, "lose": 1 - p_win})


def test_hot_roller_distribution_matches_odds_623c_1(decisions):
    expected = {}
    for o in wager_odds("hot_roller", DEFAULT_RULES).outcomes:
        if o.label == "come-out 7":
            continue
        k = int(o.label.split(", ")[1].split()[0])
        expected[f"numbers={k}"] = float(o.probability)
    observed = Counter()
    come_out = 0
    for detail, count in decisions["hot_roller"].items():
        if detail.startswith("come-out seven"):
            come_out += count
        else:
            observed[detail] += count
    observed["come-out"] = come_out
    expected["come-out"] = float(next(o.probability for o in wager_odds("hot_roller", DEFAULT_RULES).outcomes
                                      if o.label == "come-out 7"))
    check(observed, expected)


def test_hot_shooter_throw_bands_match_odds_623c_4(decisions):
    bands = wager_odds("hot_shooter", DEFAULT_RULES).outcomes
    expected = {o.label: float(o.probability) for o in bands}

    def band(n: int) -> str:
        for o in bands:  # "N = 8..15" or "N >= 50"
            numbers = [int(x) for x in re.findall(r"\d+", o.label)]
            low, high = (numbers[0], math.inf) if ">=" in o.label else numbers
            if low <= n <= high:
                return o.label
        raise AssertionError(n)

    observed = Counter()
    for detail, count in decisions["hot_shooter"].items():
        observed[band(int(detail.split("=")[1]))] += count
    check(observed, expected)
