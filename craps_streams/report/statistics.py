"""The statistics of a report line: theoretical hold and how unusual the observed hold is.

Theory is exact (`craps_streams.odds`): the theoretical hold of a line is its house edge under the
paytable and reading in force; of a table, shift or floor, the handle-weighted mix of its lines'
edges (expected win / handle, the expected win summed over the lines in cents).

How far from theory: a line's p is `craps_streams.metrics.unusual.line_tail`'s, the measure
the status panel and the floor page show too: the probability under fair dice of a house win at
least this far from theory, either side, from the exact tails (the lattice, else the Chernoff bound).
A line is flagged for investigation when p is at or below the investigation level (COMAR
36.05.03.25's 95 % interval is a level of 0.05, `INVESTIGATION_LEVEL`). A table, a shift or the floor mixes wager kinds,
whose house wins have different distributions; its p is the Bonferroni bound over its lines
(smallest line p x number of lines, at most 1): it is at or below the level only when one of its
lines is improbable beyond the level after accounting for how many were looked at.
"""
from __future__ import annotations

import math
from fractions import Fraction

from craps_streams.odds import WagerOdds, wager_odds
# A line's tails live with the live metrics, so the status panel and the floor page show the report's p.
from craps_streams.metrics.unusual import (  # noqa: F401 (the report's names for them)
    INVESTIGATION_LEVEL,
    LATTICE_POINTS,
    LATTICE_WORK,
    NO_TAIL,
    Tail,
    lattice_distribution,
    line_tail,
    mirrored,
    spectra_kept,
)


def bonferroni(ps: list[float]) -> float:
    """The smallest of `ps` times how many there are, at most 1 (1 when there are none)."""
    return min(1.0, min(ps) * len(ps)) if ps else 1.0


def odds_of(wager: str, rules) -> WagerOdds:
    return wager_odds(wager, rules)


def expected_win(odds: WagerOdds, handle_cents: int) -> Fraction:
    """Theoretical house win in cents, exact."""
    return odds.expected_house_win(handle_cents)


def std_dev_cents(odds: WagerOdds, stakes: dict) -> float:
    """The standard deviation of the house win over decisions of these stakes (cents)."""
    return odds.std_dev * math.sqrt(sum(s * s * c for s, c in stakes.items()))
