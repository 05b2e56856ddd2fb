"""Tail probabilities against brute force: exact enumeration with Fractions on small cases; the
Chernoff bound is never below the exact probability; binomial tails and their floors. The native
Chernoff minimum is held to `chernoff_minimum` bit for bit in tests/native/test_lockstep.py."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
from tests.exploration import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from craps_streams.odds import wager_odds
from craps_streams.rules.submission import DEFAULT_RULES
from craps_streams.surveillance.tails import (
    UnitDistribution,
    binomial_tail,
    binomial_tail_floor,
    chernoff_edge,
    chernoff_lower_tail,
    exact_distribution,
    house_win_tail,
    lower_tail_of,
    unit_distribution,
)

KINDS = ("fire", "all_small", "all_or_nothing", "hot_roller", "hot_shooter")


def brute_force(unit: UnitDistribution, stakes: list[int], h: int) -> Fraction:
    """P(sum of stake x Y <= h), every combination of outcomes enumerated exactly."""
    total = Fraction(0)
    for combo in itertools.product(range(len(unit.values)), repeat=len(stakes)):
        if sum(unit.values[i] * s for i, s in zip(combo, stakes)) <= h:
            p = Fraction(1)
            for i in combo:
                p *= unit.probabilities[i]
            total += p
    return total


def histogram(stakes: list[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for s in stakes:
        out[s] = out.get(s, 0) + 1
    return out


def test_the_unit_distribution_is_the_exact_odds_house_side():
    unit = unit_distribution(wager_odds("fire", DEFAULT_RULES))
    assert unit.values == (-999, -249, -24, 1)
    assert sum(unit.probabilities) == 1
    assert math.isclose(unit.mean, float(wager_odds("fire", DEFAULT_RULES).house_edge), rel_tol=1e-12)
    hs = unit_distribution(wager_odds("hot_shooter", DEFAULT_RULES))
    assert 0 in hs.values and -99 in hs.values  # push and the top band


@settings(max_examples=examples(60), deadline=None)
@given(kind=st.sampled_from(KINDS), stakes=st.lists(st.sampled_from((100, 200, 500, 1000)), min_size=1, max_size=4),
       quantile=st.floats(0, 1))
@example(kind="fire", stakes=[500, 500, 500], quantile=0.0)
@example(kind="hot_roller", stakes=[500, 1000], quantile=0.01)
def test_exact_tail_equals_brute_force_and_the_bound_is_above_it(kind, stakes, quantile):
    unit = unit_distribution(wager_odds(kind, DEFAULT_RULES))
    # h among the sums the dice can produce (so ties at h count), chosen by quantile.
    sums = sorted({sum(unit.values[i] * s for i, s in zip(c, stakes))
                   for c in itertools.product(range(len(unit.values)), repeat=len(stakes))})
    h = sums[min(len(sums) - 1, int(quantile * len(sums)))]
    truth = brute_force(unit, stakes, h)
    dist = exact_distribution(unit, histogram(stakes))
    assert dist is not None
    assert math.isclose(lower_tail_of(dist, h), float(truth), rel_tol=1e-9, abs_tol=1e-300)
    bound = chernoff_lower_tail(unit, histogram(stakes), h)
    assert bound >= float(truth) * (1 - 1e-9)
    p, exact = house_win_tail(unit, histogram(stakes), h)
    if exact:
        assert math.isclose(p, float(truth), rel_tol=1e-9, abs_tol=1e-300)
    else:  # the support estimate said the convolution was too big: the bound
        assert p == bound


def test_the_exact_convolution_matches_on_a_larger_lattice_and_gives_up_beyond_its_limit():
    unit = unit_distribution(wager_odds("all_small", DEFAULT_RULES))  # values -34, 1
    stakes = {100: 40, 500: 7}
    dist = exact_distribution(unit, stakes)
    # Two binomials: wins among the 40 $1 decisions and the 7 $5 ones.
    p = unit.probabilities[0]
    for h in (-20000, -5000, 0, 1000, 4000):
        truth = sum(math.comb(40, a) * math.comb(7, b) * p ** (a + b) * (1 - p) ** (47 - a - b)
                    for a in range(41) for b in range(8)
                    if 100 * (40 - 35 * a) + 500 * (7 - 35 * b) <= h)
        assert math.isclose(lower_tail_of(dist, h), float(truth), rel_tol=1e-9, abs_tol=1e-300)
    fire = unit_distribution(wager_odds("fire", DEFAULT_RULES))
    assert exact_distribution(fire, {100: 300, 200: 200, 300: 100, 500: 300}) is None


@pytest.mark.parametrize("kind", KINDS)
def test_the_chernoff_bound_is_conservative_against_the_exact_tail_on_long_lines(kind):
    """Where the convolution is still possible but big: the bound at every decile of H is at or
    above the exact probability (and not absurdly far in the far tail)."""
    unit = unit_distribution(wager_odds(kind, DEFAULT_RULES))
    stakes = {100: 14, 500: 6}
    dist = exact_distribution(unit, stakes, limit=400_000)
    assert dist is not None
    xs = sorted(dist)
    for q in (0.0, 0.001, 0.01, 0.1, 0.3, 0.5):
        h = xs[int(q * (len(xs) - 1))]
        exact = lower_tail_of(dist, h)
        bound = chernoff_lower_tail(unit, stakes, h)
        assert bound >= exact * (1 - 1e-9), (h, exact, bound)


def test_chernoff_limits():
    unit = unit_distribution(wager_odds("fire", DEFAULT_RULES))
    assert chernoff_lower_tail(unit, {500: 3}, -3 * 500 * 999 - 1) == 0.0  # below every outcome
    assert chernoff_lower_tail(unit, {500: 3}, 1500) == 1.0  # at or above the mean
    floor = chernoff_lower_tail(unit, {500: 3}, -3 * 500 * 999)  # every hand a six-point Fire
    assert floor >= float(unit.probabilities[0]) ** 3 * (1 - 1e-9)


@settings(max_examples=examples(80), deadline=None)
@given(n=st.integers(1, 120), p=st.sampled_from((1 / 6, 0.03, 0.5, 0.0003, 0.97)), frac=st.floats(0, 1),
       lower=st.booleans())
@example(n=114, p=1 / 6, frac=0.0, lower=True)
def test_binomial_tail_equals_the_exact_sum_and_its_floor_is_below_it(n, p, frac, lower):
    x = round(frac * n)
    P = Fraction(p)
    ks = range(0, x + 1) if lower else range(x, n + 1)
    truth = sum(math.comb(n, k) * P ** k * (1 - P) ** (n - k) for k in ks)
    got = binomial_tail(n, x, p, lower)
    assert math.isclose(got, float(truth), rel_tol=1e-9, abs_tol=1e-300)
    assert binomial_tail_floor(n, x, p) <= float(truth) * (1 + 1e-9)


@pytest.mark.parametrize("wager", ["fire", "all_or_nothing", "hot_roller", "hot_shooter"])
@pytest.mark.parametrize("log_mass", [math.log(1e-20), math.log(1e-6)])
def test_the_chernoff_edge_leaves_at_most_its_mass_below(wager, log_mass):
    """`chernoff_edge`: the exact mass of the house wins below the edge is at most the mass asked
    for, and the edge is more than the least house win where the jackpots' side carries almost
    nothing (so a lattice's window is shorter than the lattice)."""
    unit = unit_distribution(wager_odds(wager))
    stakes = {100: 40, 500: 12, 700: 6}
    step = 100
    low, high = unit.values[0], unit.values[-1]
    origin = sum(c * s * low for s, c in stakes.items())
    top = sum(c * (s // step) for s, c in stakes.items()) * (high - low)
    edge = chernoff_edge(unit, stakes, origin, step, top, log_mass)
    exact = exact_distribution(unit, stakes, limit=10**7)
    below = math.fsum(p for x, p in exact.items() if x < origin + edge * step)
    assert below <= math.exp(log_mass)
    assert 0 < edge <= top
