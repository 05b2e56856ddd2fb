"""Bonus Craps (§ 623a.12): All Small, All Tall, All Or Nothing At All.

Every throw counts the same whether the point is on or off, and any 7 ends the wager, so each wager
is a race between a set A of totals and the 7. By inclusion-exclusion over the totals B of A that
are still missing when the 7 comes:

    P(every total of A before a 7) = sum over B subset of A of (-1)^|B| * w7 / (w7 + ways(B))

where ways(B) is the number of ways to throw a total of B (the 7 beats all of B with probability
w7 / (w7 + ways(B))).
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from craps_streams.odds.model import SEVEN_WAYS, WAYS, Outcome, WagerOdds, net_for
from craps_streams.rules.bonus_craps import TOTALS
from craps_streams.rules.paytables import BonusPaytable

TARGETS = TOTALS  # the totals each wager needs (craps_streams/rules/bonus_craps.py)
WAGERS = tuple(TARGETS)


@lru_cache(maxsize=None)
def all_before_seven(totals: tuple[int, ...]) -> Fraction:
    """P(every total in `totals` is thrown before the first 7), by inclusion-exclusion.

    The subsets B enter only through ways(B), so they are summed by it: the signed count of the
    subsets with ways(B) = s is the coefficient of x^s in the product over A of (1 - x^ways(t)).
    At most 31 terms (ways(B) <= 30) where All Or Nothing At All has 1,024 subsets: the same
    fraction, at the start of every process that settles the wager."""
    signed = {0: 1}
    for t in totals:
        w = WAYS[t]
        grown = dict(signed)
        for s, c in signed.items():
            grown[s + w] = grown.get(s + w, 0) - c
        signed = grown
    return sum((Fraction(c * SEVEN_WAYS, SEVEN_WAYS + s) for s, c in signed.items() if c), Fraction(0))


@lru_cache(maxsize=None)
def bonus_odds(wager: str, paytable: BonusPaytable) -> WagerOdds:
    if wager not in TARGETS:
        raise ValueError(f"unknown Bonus Craps wager {wager!r}; known: {WAGERS}")
    win = all_before_seven(TARGETS[wager])
    outcomes = (
        Outcome("win", win, net_for(paytable.odds_for(wager))),
        Outcome("7 first", 1 - win, net_for(None)),
    )
    return WagerOdds.from_outcomes(wager, paytable.name, "", outcomes)
