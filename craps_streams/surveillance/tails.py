"""Tail probabilities of sums of wager results under fair dice: exact, or a provable upper bound.

Everything surveillance alerts on is a tail probability under fair dice, computed here from the
exact per-unit distributions of `craps_streams.odds` (never a normal approximation):

- `house_win_tail(unit, stakes, h)`: P(house win <= h) where the house win is the sum over
  decisions of stake x Y, Y the house's win per unit staked (1 on a loss, 0 on a push, -X on an
  X-to-1 win), one independent Y per decision. Exact (convolution over the cents lattice) while
  the support stays small, otherwise the Chernoff bound

      P(H <= h) <= min over t >= 0 of exp(t h) E[exp(-t H)] = exp(min_t t h + sum_S c_S log M(t S))

  with M(u) = E[exp(-u Y)] the exact moment generating function of one unit: Markov's inequality
  applied to exp(-t H), so it is never below the true probability, whatever the tails.
- `binomial_tail(n, x, p, lower)`: exact P(X <= x) or P(X >= x) for X ~ Binomial(n, p).
- `binomial_tail_floor(n, x, p)`: a cheap lower bound on that tail (method of types), so an
  exact evaluation is skipped only when it provably cannot reach an alert threshold.

Probabilities are floats (double precision: relative error ~1e-15 per operation, far below any
threshold here); the tests check every result against exact `Fraction` enumeration.
"""
from __future__ import annotations

import math
import operator
from fractions import Fraction
from functools import lru_cache

import msgspec

from craps_streams.odds import WagerOdds

EXACT_SUPPORT_LIMIT = 2048  # largest support the exact convolution may build before the bound is used


class UnitDistribution(msgspec.Struct, frozen=True, cache_hash=True):
    """The house's win per unit staked on one decision: values (integers: 1, 0, -X) and their
    exact probabilities, merged by value; `floats` (value, probability) and the float mean and
    variance are computed once. Its hash is kept (`cache_hash`): the lines' tails look a unit's
    mirror up by it (`mirrored`) a thousand times a report, and hashing its Fractions (a modular
    inverse each) each time was a tenth of a day's tails."""

    values: tuple[int, ...]
    probabilities: tuple[Fraction, ...]
    floats: tuple[tuple[int, float], ...] = ()
    mean: float = 0.0
    variance: float = 0.0

    @classmethod
    def of(cls, values, probabilities) -> "UnitDistribution":
        values, probabilities = tuple(values), tuple(Fraction(p) for p in probabilities)
        mean = sum((v * p for v, p in zip(values, probabilities)), Fraction(0))
        var = sum((v * v * p for v, p in zip(values, probabilities)), Fraction(0)) - mean * mean
        return cls(values, probabilities, tuple((v, float(p)) for v, p in zip(values, probabilities) if p),
                   float(mean), float(var))


@lru_cache(maxsize=256)
def unit_distribution(odds: WagerOdds) -> UnitDistribution:
    merged: dict[int, Fraction] = {}
    for o in odds.outcomes:
        net = o.net_per_unit
        if net.denominator != 1:
            raise ValueError(f"{odds.wager}/{odds.paytable}: net {net} is not a whole number of units")
        merged[-int(net)] = merged.get(-int(net), Fraction(0)) + o.probability
    values = tuple(sorted(merged))
    return UnitDistribution.of(values, (merged[v] for v in values))


# ---------------------------------------------------------------- exact convolution


def _convolve(a: dict[int, float], b: dict[int, float]) -> dict[int, float]:
    out: dict[int, float] = {}
    get = out.get
    for x, p in a.items():
        for y, q in b.items():
            out[x + y] = get(x + y, 0.0) + p * q
    return out


def exact_distribution(unit: UnitDistribution, stakes: dict[int, int],
                       limit: int = EXACT_SUPPORT_LIMIT) -> dict[int, float] | None:
    """The exact distribution of sum over decisions of stake x Y (cents -> probability), where
    `stakes` maps a stake to how many decisions had it; None when the support would pass `limit`."""
    base = dict(unit.floats)
    total: dict[int, float] = {0: 1.0}
    for stake, count in sorted(stakes.items()):
        one = {v * stake: p for v, p in base.items()}
        power: dict[int, float] = {0: 1.0}
        # Binary powering: count decisions of this stake.
        square, n = one, count
        while n:
            if n & 1:
                if len(power) * len(square) > limit * 8:
                    return None
                power = _convolve(power, square)
                if len(power) > limit:
                    return None
            n >>= 1
            if n:
                if len(square) * len(square) > limit * 8:
                    return None
                square = _convolve(square, square)
                if len(square) > limit:
                    return None
        if len(total) * len(power) > limit * 8:
            return None
        total = _convolve(total, power)
        if len(total) > limit:
            return None
    return total


def lower_tail_of(distribution: dict[int, float], h: int) -> float:
    """P(X <= h), summed from the smallest terms up."""
    return min(1.0, math.fsum(sorted(p for x, p in distribution.items() if x <= h)))


# ---------------------------------------------------------------- Chernoff bound


def _log_mgf(unit: tuple[tuple[int, float], ...], u: float) -> tuple[float, float, float]:
    """log E[exp(-u Y)], and the mean and variance of Y under the tilt exp(-u Y)."""
    top = -u * unit[0][0]  # values ascend: -u v is largest at the smallest v (u >= 0)
    total = mean = second = 0.0
    exp = math.exp
    for v, p in unit:
        w = p * exp(-u * v - top)
        total += w
        mean += w * v
        second += w * v * v
    mean /= total
    return top + math.log(total), mean, max(0.0, second / total - mean * mean)


def chernoff_lower_tail(unit: UnitDistribution, stakes: dict[int, int], h: float) -> float:
    """An upper bound on P(sum over decisions of stake x Y <= h): min over t >= 0 of
    exp(t h + sum_S c_S log E[exp(-t S Y)]), minimised by safeguarded Newton steps on t (the
    exponent is convex in t). Any t gives a valid bound, so an inexact minimum only loosens it."""
    staked, mean = _staked(unit, stakes)
    if not staked:
        return 1.0 if h >= 0 else 0.0
    dist = unit.floats
    if h < staked * min(v for v, _ in dist):  # whole cents: the least house win exactly
        return 0.0
    if h >= mean:  # a line's other side, half the calls: decided before its stakes are sorted
        return 1.0
    items = _items(stakes)
    scale = items[-1][0]  # the largest stake: the items ascend
    return min(1.0, math.exp((_minimum or _chosen_minimum())(dist, items, h, scale)))


def _staked(unit: UnitDistribution, stakes: dict[int, int]) -> tuple[int, float]:
    """A line's total stake in cents and its mean house win: what the Chernoff bound and its edge
    both start from."""
    staked = sum(map(operator.mul, stakes, stakes.values()))
    return staked, staked * sum(v * p for v, p in unit.floats)


def _items(stakes: dict[int, int]) -> list:
    """A line's (stake, decisions) items with decisions, ascending (the same sums after a restore)."""
    return [(s, c) for s, c in sorted(stakes.items()) if c]


def chernoff_edge(unit: UnitDistribution, stakes: dict[int, int], origin: int, step: int, top: int,
                  log_mass: float) -> int:
    """The first lattice point k (a house win of origin + k step, 0 <= k <= top; `origin` the least
    house win, `step` a divisor of every stake) below which the Chernoff bound leaves at most
    exp(log_mass) of the house win's mass: one past the greatest k whose bound on P(house win <= its
    house win) is at most that, found by bisection (the bound grows with the house win below the
    mean); 0 where none is."""
    staked, mean = _staked(unit, stakes)
    if not staked:
        return 0
    items = _items(stakes)
    dist = unit.floats
    scale = items[-1][0]
    minimum = _minimum or _chosen_minimum()
    below = math.floor((mean - origin) / step)  # the last point below the mean
    if below < 0 or minimum(dist, items, origin, scale) > log_mass:
        return 0
    good, bad = 0, min(top, below) + 1  # good: its bound is at most the mass; bad: not, or past the range
    while bad - good > 1:
        k = (good + bad) // 2
        if minimum(dist, items, origin + k * step, scale) <= log_mass:
            good = k
        else:
            bad = k
    return good + 1


def chernoff_minimum(dist, items: list, h: float, scale: int) -> float:
    """The smallest exponent t h + sum_S c_S log M(t S) the Newton steps find (`chernoff_lower_tail`
    after its early returns): `items` the (stake, decisions) pairs, sorted, `scale` the largest
    stake. native/src/tails.rs computes the same double where the native code is in use."""

    def exponent(t: float) -> tuple[float, float, float]:
        value, slope, curve = t * h, h, 0.0
        for s, c in items:
            log_m, m, var = _log_mgf(dist, t * s)
            value += c * log_m
            slope -= c * s * m
            curve += c * s * s * var
        return value, slope, curve

    # Bracket the minimum: the slope is h - E_t[H], increasing in t from h - E[H] < 0.
    lo, hi = 0.0, 1.0 / scale
    while exponent(hi)[1] < 0:
        lo, hi = hi, hi * 2
        if hi * scale > 1e4:  # the mass at the lowest value dominates: bound by the limit
            break
    t = (lo + hi) / 2
    best = 0.0
    for _ in range(60):
        value, slope, curve = exponent(t)
        best = min(best, value)
        if abs(slope) <= 1e-9 * max(1.0, abs(h)):
            break
        if slope < 0:
            lo = t
        else:
            hi = t
        step = t - slope / curve if curve > 0 else (lo + hi) / 2
        t = step if lo < step < hi else (lo + hi) / 2
        if hi - lo <= 1e-12 * hi:
            break
    return best


# The minimum `chernoff_lower_tail` takes, chosen at its first use (after the command chose its core).
_minimum = None


def _chosen_minimum():
    """`chernoff_minimum`, or its native form (the same doubles) where the native code is in use."""
    global _minimum
    from craps_streams.accelerator.watch import chernoff_minimum as native_minimum

    _minimum = native_minimum() or chernoff_minimum
    return _minimum


def support_estimate(unit: UnitDistribution, stakes: dict[int, int]) -> int:
    """An upper bound on the support of the sum: per stake, c decisions take at most
    C(c + K - 1, K - 1) sums and at most c x span + 1; the stakes' supports multiply."""
    k = len(unit.floats)
    span = unit.values[-1] - unit.values[0]
    total = 1
    for count in stakes.values():
        total *= min(math.comb(count + k - 1, k - 1), count * span + 1)
        if total > 1 << 40:
            break
    return total


def house_win_tail(unit: UnitDistribution, stakes: dict[int, int], h: int,
                   limit: int = EXACT_SUPPORT_LIMIT, support: int | None = None) -> tuple[float, bool]:
    """(P(house win <= h) under fair dice, True) by exact convolution when its support is small,
    else (the Chernoff bound, False). With jackpots the bound is loose for short lines (one big
    win dominates the tail, not many tilted small ones), which is where the exact sum is cheap.
    `support`: `support_estimate(unit, stakes)` where the caller has it (a unit and its mirror
    have the same)."""
    if (support_estimate(unit, stakes) if support is None else support) <= limit:
        dist = exact_distribution(unit, stakes, limit)
        if dist is not None:
            return lower_tail_of(dist, h), True
    return chernoff_lower_tail(unit, stakes, h), False


# ---------------------------------------------------------------- binomial tails


def _log_pmf(n: int, k: int, log_p: float, log_q: float) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_p + (n - k) * log_q


def binomial_tail(n: int, x: int, p: float, lower: bool) -> float:
    """Exact P(X <= x) (lower) or P(X >= x) for X ~ Binomial(n, p), summed from the term at x
    outward until the terms stop mattering (they fall geometrically past the mode)."""
    if lower and x >= n or not lower and x <= 0:
        return 1.0
    if lower and x < 0 or not lower and x > n:
        return 0.0
    if p <= 0.0:
        return 1.0 if lower else 0.0
    if p >= 1.0:
        return 0.0 if lower else 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    ks = range(x, -1, -1) if lower else range(x, n + 1)
    terms = []
    peak = -math.inf
    for k in ks:
        t = _log_pmf(n, k, log_p, log_q)
        peak = max(peak, t)
        terms.append(t)
        if t < peak - 40:  # below 4e-18 of the largest term, and falling
            break
    return min(1.0, math.fsum(math.exp(t) for t in terms))


def kl_divergence(q: float, p: float) -> float:
    """KL(Bernoulli(q) || Bernoulli(p)), nats."""
    out = 0.0
    if q > 0.0:
        out += q * math.log(q / p)
    if q < 1.0:
        out += (1 - q) * math.log((1 - q) / (1 - p))
    return out


def binomial_tail_floor(n: int, x: int, p: float) -> float:
    """A lower bound on the binomial tail beyond x (either side): P(X = x) >= exp(-n KL(x/n, p)) /
    (n + 1) (Cover & Thomas, Theorem 11.1.4)."""
    if n == 0 or p <= 0.0 or p >= 1.0:
        return 0.0
    return math.exp(-n * kl_divergence(x / n, p)) / (n + 1)
