"""How unusual is a table's result? Observed house win against the exact theory.

For n settled wagers of stakes s_i on one wager kind and paytable, the house win has expectation
edge * sum(s_i) and standard deviation sd * sqrt(sum(s_i^2)), sd being the exact standard
deviation of the per-unit result (streams.odds). z = (observed - expected) / std dev; a large
negative z is the house losing far more than the dice allow: dice control, a dealer error, a feed
fault.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(slots=True)
class HoldVsTheory:
    house_edge: float
    std_dev_per_unit: float
    handle_cents: int = 0
    stake_squares: int = 0  # sum of squared stakes, cents^2
    house_win_cents: int = 0

    def add(self, stake_cents: int, house_win_cents: int) -> None:
        self.handle_cents += stake_cents
        self.stake_squares += stake_cents * stake_cents
        self.house_win_cents += house_win_cents

    @property
    def expected_house_win_cents(self) -> float:
        return self.house_edge * self.handle_cents

    @property
    def std_dev_cents(self) -> float:
        return self.std_dev_per_unit * math.sqrt(self.stake_squares)

    @property
    def z_score(self) -> float:
        sd = self.std_dev_cents
        return (self.house_win_cents - self.expected_house_win_cents) / sd if sd else 0.0
