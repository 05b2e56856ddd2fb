"""Fire Bet (§ 623a.11): distinct point numbers made by the shooter, settled at the seven-out.

Only rolls that move the game matter, so the chain is embedded at the come-out: from a come-out,
the next point established is p with probability ways(p)/24 (naturals and craps leave the table in
come-out and are skipped); that point is then made with probability ways(p)/(ways(p)+6), otherwise
the hand sevens out. A repeated point is a self-loop, solved in closed form. Points thrown the
same number of ways are interchangeable (4 and 10, 5 and 9, 6 and 8), so the state is how many
points of each such class are made (27 states, not the 64 sets of points: the same exact
fractions in a fifth of the operations, which every process that settles a Fire Bet pays once);
states are processed from the most points made down.
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
    seven_out = sum(Fraction(WAYS[p], point_ways) * Fraction(SEVEN_WAYS, WAYS[p] + SEVEN_WAYS)
                    for p in POINTS)  # from any come-out
    # The classes: (ways, points thrown that many ways), and the chance that the next point
    # established is a given point of the class and is made.
    counts: dict[int, int] = {}
    for p in POINTS:
        counts[WAYS[p]] = counts.get(WAYS[p], 0) + 1
    classes = [(n, Fraction(w, point_ways) * Fraction(w, w + SEVEN_WAYS)) for w, n in sorted(counts.items())]

    # value[made][k] = P(final count k | at a come-out with made[i] points of class i made).
    states = [()]
    for n, _ in classes:
        states = [s + (m,) for s in states for m in range(n + 1)]
    value: dict[tuple, list[Fraction]] = {}
    for made in sorted(states, key=sum, reverse=True):
        size = sum(made)
        stay = Fraction(0)
        dist = [Fraction(0)] * (len(POINTS) + 1)
        dist[size] += seven_out
        for i, (n, step) in enumerate(classes):
            if made[i]:
                stay += made[i] * step  # a point already made, made again
            if made[i] < n:
                onward = (n - made[i]) * step
                for k, q in enumerate(value[made[:i] + (made[i] + 1,) + made[i + 1:]]):
                    if q:
                        dist[k] += onward * q
        value[made] = [q / (1 - stay) for q in dist]
    return dict(enumerate(value[(0,) * len(classes)]))


@lru_cache(maxsize=None)
def fire_odds(paytable: Paytable) -> WagerOdds:
    outcomes = counted_outcomes(distinct_points_distribution(), paytable,
                                lambda k: f"{k} point{'s' if k != 1 else ''}")
    return WagerOdds.from_outcomes(WAGER, paytable.name, "", outcomes)
