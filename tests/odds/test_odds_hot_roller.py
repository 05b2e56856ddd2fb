"""Hot Roller (§ 623c.1): the exact distribution of craps_streams.odds against independent checks.

* smaller games (only some numbers tracked) solved here by brute force over (every combination
  thrown, point), throw by throw over the 36 ordered dice outcomes;
* the pay-by-table marginal (completed numbers at the first 7, whatever the point) by
  inclusion-exclusion over the combinations, and P(the first 7 is a come-out 7) by a point-only chain;
* a seeded Monte Carlo simulation of 200,000 hands of the full game.
"""
from __future__ import annotations

import math
import random
from fractions import Fraction
from itertools import combinations

import pytest
from msgspec.structs import replace

from craps_streams.odds import wager_odds
from craps_streams.odds.hot_roller import COMBINATIONS, seven_distribution
from craps_streams.rules.paytables import HOT_ROLLER_A, HOT_ROLLER_B
from craps_streams.rules.submission import DEFAULT_RULES
from tests.odds.exact_solve import solve

DICE = [(a, b) for a in range(1, 7) for b in range(1, 7)]
POINT_NUMBERS = (4, 5, 6, 8, 9, 10)
# Written out again from § 623c.1, not taken from the library.
NUMBER_COMBOS = {
    4: ["1-3", "2-2"], 5: ["1-4", "2-3"], 6: ["1-5", "2-4", "3-3"],
    8: ["2-6", "3-5", "4-4"], 9: ["3-6", "4-5"], 10: ["4-6", "5-5"],
}


def combo_of(a: int, b: int) -> str:
    return f"{min(a, b)}-{max(a, b)}"


def combo_ways(combo: str) -> int:
    return sum(1 for a, b in DICE if combo_of(a, b) == combo)


def test_combinations_match_the_regulation():
    library = {n: sorted(f"{a}-{b}" for a, b in combos) for n, combos in COMBINATIONS.items()}
    assert library == {n: sorted(c) for n, c in NUMBER_COMBOS.items()}
    assert sum(combo_ways(c) for cs in NUMBER_COMBOS.values() for c in cs) == 24


def brute_force(tracked: tuple[int, ...]) -> dict[tuple[str, int], Fraction]:
    """State (thrown combinations of the tracked numbers, point); solved per set, largest first."""
    combos = [c for n in tracked for c in NUMBER_COMBOS[n]]
    states = [None, *POINT_NUMBERS]
    keys = [(kind, k) for kind in ("come_out", "seven_out") for k in range(len(tracked) + 1)]

    def complete(mask: int) -> int:
        return sum(all(mask >> combos.index(c) & 1 for c in NUMBER_COMBOS[n]) for n in tracked)

    value: dict[int, list[list[Fraction]]] = {}
    for mask in range((1 << len(combos)) - 1, -1, -1):
        matrix = [[Fraction(int(i == j)) for j in range(7)] for i in range(7)]
        rhs = [[Fraction(0)] * len(keys) for _ in range(7)]
        for i, point in enumerate(states):
            for a, b in DICE:
                total = a + b
                if total == 7:
                    kind = "come_out" if point is None else "seven_out"
                    rhs[i][keys.index((kind, complete(mask)))] += Fraction(1, 36)
                    continue
                if point is None:
                    new_point = total if total in POINT_NUMBERS else None
                else:
                    new_point = None if total == point else point
                j = states.index(new_point)
                combo = combo_of(a, b)
                if combo in combos and not mask >> combos.index(combo) & 1:
                    later = value[mask | 1 << combos.index(combo)][j]
                    for k in range(len(keys)):
                        rhs[i][k] += later[k] / 36
                else:
                    matrix[i][j] -= Fraction(1, 36)
        value[mask] = solve(matrix, rhs)
    return {key: p for key, p in zip(keys, value[0][0]) if p}


@pytest.mark.parametrize("tracked", [(4,), (6,), (4, 10), (6, 8), (5, 9, 6), (4, 6, 9)])
def test_exact_method_on_smaller_games(tracked):
    exact = {k: p for k, p in seven_distribution(tracked).items() if p}
    assert exact == brute_force(tracked)


def test_pay_by_table_marginal_by_inclusion_exclusion():
    """Ignoring the point, each combination races the 7: P(every combination of a set of numbers
    before the first 7) = sum over subsets B of those combinations (-1)^|B| 6 / (6 + ways(B))."""

    def all_complete(numbers) -> Fraction:
        poly = {0: 1}  # product of (1 - x^ways) over the combinations
        for n in numbers:
            for c in NUMBER_COMBOS[n]:
                w = combo_ways(c)
                new = dict(poly)
                for s, coef in poly.items():
                    new[s + w] = new.get(s + w, 0) - coef
                poly = new
        return sum((Fraction(6 * coef, 6 + s) for s, coef in poly.items()), Fraction(0))

    at_least = {}  # sum over sets T of size t of P(all of T complete)
    for t in range(7):
        at_least[t] = sum((all_complete(T) for T in combinations(POINT_NUMBERS, t)), Fraction(0))
    exactly = {k: sum((-1) ** (t - k) * math.comb(t, k) * at_least[t] for t in range(k, 7))
               for k in range(7)}
    dist = seven_distribution()
    for k in range(7):
        assert dist[("come_out", k)] + dist[("seven_out", k)] == exactly[k]
    odds = wager_odds("hot_roller", replace(DEFAULT_RULES, hot_roller_come_out_seven="pay_by_table"))
    assert [o.probability for o in odds.outcomes] == [exactly[k] for k in range(7)]


def test_come_out_seven_probability():
    # x = P(first 7 comes on a come-out | come-out); y_p = P(same | point p) = w_p/(w_p+6) x.
    # x = 6/36 + (6/36) x + sum_p (w_p/36) y_p.
    ways = {p: 6 - abs(p - 7) for p in POINT_NUMBERS}
    x = Fraction(6, 36) / (1 - Fraction(6, 36) - sum(Fraction(w, 36) * Fraction(w, w + 6)
                                                      for w in ways.values()))
    odds = wager_odds("hot_roller")
    assert odds.outcomes[0].label == "come-out 7"
    assert odds.outcomes[0].probability == x
    assert sum(p for (kind, _), p in seven_distribution().items() if kind == "come_out") == x


def simulate(hands: int, seed: int) -> dict[tuple[str, int], int]:
    rng = random.Random(seed)
    number_of = {c: n for n, cs in NUMBER_COMBOS.items() for c in cs}
    counts: dict[tuple[str, int], int] = {}
    for _ in range(hands):
        thrown: set[str] = set()
        point = None
        while True:
            a, b = rng.randint(1, 6), rng.randint(1, 6)
            total = a + b
            if total == 7:
                done = sum(all(c in thrown for c in cs) for cs in NUMBER_COMBOS.values())
                key = ("come_out" if point is None else "seven_out", done)
                counts[key] = counts.get(key, 0) + 1
                break
            combo = combo_of(a, b)
            if combo in number_of:
                thrown.add(combo)
            if point is None:
                if total in POINT_NUMBERS:
                    point = total
            elif total == point:
                point = None
    return counts


def test_monte_carlo_200k_hands():
    hands = 200_000
    counts = simulate(hands, seed=623)
    exact = seven_distribution()
    assert set(counts) <= set(exact)
    for key, p in exact.items():
        se = math.sqrt(float(p * (1 - p)) / hands)
        assert abs(counts.get(key, 0) / hands - float(p)) < 4.5 * se, key
    for paytable in (HOT_ROLLER_A, HOT_ROLLER_B):
        for reading in ("lose", "pay_by_table"):
            odds = wager_odds("hot_roller", replace(DEFAULT_RULES, hot_roller=paytable,
                                                    hot_roller_come_out_seven=reading))

            def net(kind: str, k: int) -> int:
                if kind == "come_out" and reading == "lose":
                    return -1
                pays = paytable.odds_for(k)
                return -1 if pays is None else pays

            mean = sum(net(*key) * n for key, n in counts.items()) / hands
            se = odds.std_dev / math.sqrt(hands)
            assert abs(mean + float(odds.house_edge)) < 4 * se, (paytable.name, reading)


def test_the_kept_distribution_is_the_computed_one():
    """`seven_distribution()` reads the wager's distribution from `hot_roller_sevens` (kept to
    spare every process the computation): it must be exactly what the computation gives, every
    key, in the same order."""
    from craps_streams.odds.hot_roller import POINTS, computed_seven_distribution

    kept, computed = seven_distribution(), computed_seven_distribution(POINTS)
    assert list(kept.items()) == list(computed.items())
    assert all(type(p) is Fraction for p in kept.values())
