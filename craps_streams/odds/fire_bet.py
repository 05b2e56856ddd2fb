"""Fire Bet (§ 623a.11): distinct point numbers made by the shooter, settled at the seven-out.

Only rolls that move the game matter, so the chain is embedded at the come-out: from a come-out,
the next point established is p with probability ways(p)/24 (naturals and craps leave the table in
come-out and are skipped); that point is then made with probability ways(p)/(ways(p)+6), otherwise
the hand sevens out. The state is the set of distinct points made (64 sets). A repeated point is a
self-loop, solved in closed form; sets are processed from the largest down.
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from craps_streams.odds.model import POINTS, SEVEN_WAYS, WAYS, WagerOdds, counted_outcomes
from craps_streams.rules.paytables import Paytable

WAGER = "fire"


@lru_cache(maxsize=None)
def distinct_points_distribution() -> dict[int, Fraction]:
    """P(the shooter makes exactly k distinct point numbers before the seven-out), k = 0..6."""
    point_ways = sum(WAYS[p] for p in POINTS)
    establish = {p: Fraction(WAYS[p], point_ways) for p in POINTS}
    made = {p: Fraction(WAYS[p], WAYS[p] + SEVEN_WAYS) for p in POINTS}
    seven_out = sum(establish[p] * (1 - made[p]) for p in POINTS)  # from any come-out

    # value[mask][k] = P(final count k | at a come-out with `mask` points made).
    value: dict[int, list[Fraction]] = {}
    for mask in sorted(range(1 << len(POINTS)), key=lambda m: -bin(m).count("1")):
        size = bin(mask).count("1")
        stay = Fraction(0)
        dist = [Fraction(0)] * (len(POINTS) + 1)
        dist[size] += seven_out
        for i, p in enumerate(POINTS):
            step = establish[p] * made[p]
            if mask >> i & 1:
                stay += step
            else:
                for k, q in enumerate(value[mask | 1 << i]):
                    dist[k] += step * q
        value[mask] = [q / (1 - stay) for q in dist]
    return dict(enumerate(value[0]))


@lru_cache(maxsize=None)
def fire_odds(paytable: Paytable) -> WagerOdds:
    outcomes = counted_outcomes(distinct_points_distribution(), paytable,
                                lambda k: f"{k} point{'s' if k != 1 else ''}")
    return WagerOdds.from_outcomes(WAGER, paytable.name, "", outcomes)
