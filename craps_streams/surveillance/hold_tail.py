"""The hold's tail probability per wager kind and paytable: what raises `hold_anomaly`
(the z-score is for display only).

For one table, wager kind and paytable, the house win over the wagers decided by the dice is

    H = sum over decisions of S_d x Y_d

where a decision is the wagers of the kind settled by one throw (they saw the same dice, so they
are one outcome, as the hold book groups them), S_d their stakes and Y_d the house's win per unit
(1, 0 or -X), independent across decisions, distributed as `craps_streams.odds` says. The sufficient
statistics are the observed H and how many decisions had each stake (`stakes`): O(1) per
settlement, a few dozen distinct stakes per line. P(H <= observed | fair dice) is evaluated when a
check is due (z at or below the gate, a cheap screen), exactly while the convolution is small and
by the Chernoff bound otherwise (`craps_streams.surveillance.tails`). Pushes at a table's close or at a
surrender are not decided by the dice and are left out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from craps_streams.surveillance.tails import UnitDistribution, house_win_tail


@dataclass(slots=True)
class HoldTail:
    decisions: int = 0
    handle_cents: int = 0
    house_win_cents: int = 0
    stakes: dict = field(default_factory=dict)  # stake of a decision (cents) -> decisions
    alerted: bool = False
    stake_squares: int = 0  # sum of the squared stakes of the decisions (from `stakes`; not stored)
    # The last evaluation (not stored): (decisions, probability, exact) for the metrics' gauges.
    last: tuple | None = None

    def add_decision(self, stake_cents: int, house_win_cents: int) -> None:
        self.decisions += 1
        self.handle_cents += stake_cents
        self.house_win_cents += house_win_cents
        self.stakes[stake_cents] = self.stakes.get(stake_cents, 0) + 1
        self.stake_squares += stake_cents * stake_cents

    def z_score(self, unit: UnitDistribution) -> float:
        """Display only: (H - E[H]) / sd[H] under fair dice."""
        mean, var = unit.mean, unit.variance
        sd = math.sqrt(var * self.stake_squares)
        return (self.house_win_cents - mean * self.handle_cents) / sd if sd else 0.0

    def tail(self, unit: UnitDistribution) -> tuple[float, bool]:
        """(P(house win <= observed | fair dice) or its Chernoff bound, exact?), cached per decision."""
        if self.last is not None and self.last[0] == self.decisions:
            return self.last[1], self.last[2]
        p, exact = house_win_tail(unit, self.stakes, self.house_win_cents)
        self.last = (self.decisions, p, exact)
        return p, exact

    def to_record(self) -> list:
        return [self.decisions, self.handle_cents, self.house_win_cents,
                {str(s): c for s, c in sorted(self.stakes.items())}, self.alerted]

    @classmethod
    def from_record(cls, r: list) -> "HoldTail":
        stakes = {int(s): c for s, c in r[3].items()}
        return cls(r[0], r[1], r[2], stakes, r[4], sum(s * s * c for s, c in stakes.items()))
