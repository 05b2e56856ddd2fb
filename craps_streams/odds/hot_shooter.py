"""Hot Shooter jackpot (§ 623c.4): N = throws from the come-out roll through the seven-out.

Exact distribution of N by forward dynamic programming over the point state (off, or one of the
six points), throw by throw, up to the first count of the paytable's top band; the top band's
probability is the exact tail P(N >= that count) = 1 - P(N below it).
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from craps_streams.odds.model import POINTS, SEVEN_WAYS, WAYS, Outcome, WagerOdds, net_for
from craps_streams.rules.paytables import Paytable

WAGER = "hot_shooter"


@lru_cache(maxsize=None)
def throws_distribution(limit: int) -> tuple[Fraction, ...]:
    """P(N = n) for n = 0 .. limit-1 (entries 0 and 1 are 0), N counted as § 623c.4 counts it.

    Every path of n throws has probability (ways thrown) / 36^n, so the mass in play is kept as
    whole numbers of ways over 36^n (a multiplication per state and throw) and made a fraction only
    where it leaves play: the same fractions as stepping them, without a fraction's reduction at
    every step."""
    stay_off = 36 - sum(WAYS[p] for p in POINTS)  # 2,3,7,11,12 on the come-out
    stay_on = {p: 36 - WAYS[p] - SEVEN_WAYS for p in POINTS}
    off, on = 1, {p: 0 for p in POINTS}  # ways still in play after n throws, over 36^n
    dist = [Fraction(0)] * limit
    scale = 1
    for n in range(1, limit):
        scale *= 36
        dist[n] = Fraction(sum(on.values()) * SEVEN_WAYS, scale)
        off, on = (off * stay_off + sum(on[p] * WAYS[p] for p in POINTS),
                   {p: off * WAYS[p] + on[p] * stay_on[p] for p in POINTS})
    return tuple(dist)


def _label(low: int, high: int | None) -> str:
    if high is None:
        return f"N >= {low}"
    return f"N = {low}" if low == high else f"N = {low}..{high}"


@lru_cache(maxsize=None)
def hot_shooter_odds(paytable: Paytable) -> WagerOdds:
    top = max((low for low, _ in paytable.bands), default=2)
    top = max(top, 2)
    dist = throws_distribution(top)
    # Group consecutive throw counts with the same result into one outcome per band.
    bands: list[list] = []  # [low, high, odds, probability]
    for n in range(2, top):
        odds = paytable.odds_for(n)
        if bands and bands[-1][2] == odds:
            bands[-1][1] = n
            bands[-1][3] += dist[n]
        else:
            bands.append([n, n, odds, dist[n]])
    outcomes = [Outcome(_label(low, high), p, net_for(odds)) for low, high, odds, p in bands]
    outcomes.append(Outcome(_label(top, None), 1 - sum(dist), net_for(paytable.odds_for(top))))
    return WagerOdds.from_outcomes(WAGER, paytable.name, "", outcomes)
