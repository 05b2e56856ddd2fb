"""The report's tails against the surveillance's exact convolution (itself held to exact fractions
in tests/surveillance): the lattice by Fourier transforms, the upper tail by the mirrored unit."""
from __future__ import annotations

import pytest

from craps_streams.odds import wager_odds
from craps_streams.metrics.unusual import WINDOW_MASS
from craps_streams.report.statistics import Tail, bonferroni, lattice_distribution, line_tail, mirrored
from craps_streams.surveillance.tails import exact_distribution, unit_distribution

STAKES = [{100: 3, 300: 2}, {500: 7}, {100: 1, 200: 1, 500: 4, 2500: 1}]


def exact_tails(unit, stakes, h):
    dist = exact_distribution(unit, stakes, limit=10**6)
    return sum(p for x, p in dist.items() if x <= h), sum(p for x, p in dist.items() if x >= h)


@pytest.mark.parametrize("wager", ["fire", "all_small", "all_or_nothing", "hot_roller", "hot_shooter"])
@pytest.mark.parametrize("stakes", STAKES)
def test_the_lattice_gives_the_exact_tails(wager, stakes):
    _lattice_against_exact(wager, stakes)


def _lattice_against_exact(wager: str, stakes: dict) -> int:
    """Inside the lattice's window, the exact tails; outside it, less than the mass it may leave
    out (`WINDOW_MASS`) on that side. The number of house wins checked outside the window."""
    unit = unit_distribution(wager_odds(wager))
    dist, origin, step = lattice_distribution(unit, stakes, limit=10**7)
    assert abs(dist.sum() - 1) < 1e-9
    exact = exact_distribution(unit, stakes, limit=10**6)
    outside = 0
    for h in sorted(exact)[:: max(1, len(exact) // 15)] + [min(exact), max(exact)]:
        k = (h - origin) // step
        want_low, want_high = exact_tails(unit, stakes, h)
        if k < 0:
            assert want_low <= WINDOW_MASS
            outside += 1
        elif k >= len(dist):
            assert want_high <= WINDOW_MASS
            outside += 1
        else:
            low, high = dist[:k + 1].sum(), dist[k:].sum()
            assert low == pytest.approx(want_low, abs=1e-12)
            assert high == pytest.approx(want_high, abs=1e-12)
    return outside


@pytest.mark.parametrize("wager", ["all_small", "all_or_nothing"])
def test_the_lattice_gives_the_exact_tails_on_hundreds_of_decisions_of_a_stake(wager):
    """A stake's transform raised to hundreds of decisions, odd and even (by squaring); the
    players' side of so many decisions is far longer than its mass: the window leaves it out."""
    assert _lattice_against_exact(wager, {100: 301, 500: 150, 700: 64}) > 0


def test_a_result_outside_the_window_takes_its_sides_bound():
    """A house win rarer than the window's mass: the lattice's line takes the Chernoff bound on
    that side (never below the exact tail), the other side the window's whole mass."""
    odds = wager_odds("all_or_nothing")
    unit = unit_distribution(odds)
    stakes = {100: 301, 500: 150, 700: 64}
    dist, origin, step = lattice_distribution(unit, stakes, limit=10**7)
    exact = exact_distribution(unit, stakes, limit=10**6)
    h = max(x for x in exact if x < origin)  # the players won more than the window holds
    tail = line_tail(odds, stakes, h)
    want_low, _ = exact_tails(unit, stakes, h)
    assert tail.method == "lattice_fft"
    assert want_low <= tail.p_low <= WINDOW_MASS and tail.p_high == pytest.approx(1.0, abs=1e-9)


def test_the_upper_tail_is_the_mirrored_lower_tail():
    unit = unit_distribution(wager_odds("all_small"))
    m = mirrored(unit)
    assert m.values == tuple(sorted(-v for v in unit.values))
    assert m.mean == pytest.approx(-unit.mean)
    stakes = {100: 4, 500: 2}
    for h in (-5000, 0, 700, 1400):
        tail = line_tail(wager_odds("all_small"), stakes, h, lattice=False)
        low, high = exact_tails(unit, stakes, h)
        assert (tail.p_low, tail.p_high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
        assert tail.method == "exact"


def test_the_two_sided_probability_and_bonferroni():
    assert Tail(0.01, 0.999, "exact").p == pytest.approx(0.02)
    assert Tail(0.7, 0.6, "exact").p == 1.0
    assert bonferroni([0.01, 0.5, 0.9]) == pytest.approx(0.03)
    assert bonferroni([]) == 1.0
    # a line far from theory on many decisions: the lattice, and a small p
    stakes = {500: 400}
    odds = wager_odds("hot_shooter")
    fair = line_tail(odds, stakes, round(float(odds.house_edge) * 500 * 400))
    lucky_players = line_tail(odds, stakes, -150_000)
    assert fair.method == lucky_players.method == "lattice_fft"
    assert fair.p > 0.5 and lucky_players.p < 1e-3 and lucky_players.p_low < lucky_players.p_high
