"""The result type shared by every wager: an exact outcome distribution and what follows from it.

Everything is `fractions.Fraction`; floats appear only in `std_dev` and in reports.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import msgspec

from craps_streams.rules.paytables import PUSH
from craps_streams.rules.table import POINT_NUMBERS

# Ways (out of 36 ordered outcomes of two fair dice) to throw each total.
WAYS = {total: 6 - abs(total - 7) for total in range(2, 13)}
POINTS = POINT_NUMBERS  # the point numbers (craps_streams/rules/table.py)
SEVEN_WAYS = WAYS[7]


def net_for(odds: int | None) -> Fraction:
    """Net result per unit stake of a paytable result: X to 1 -> +X, PUSH -> 0, None (lose) -> -1."""
    if odds is None:
        return Fraction(-1)
    if odds == PUSH:
        return Fraction(0)
    return Fraction(odds)


class Outcome(msgspec.Struct, frozen=True):
    label: str
    probability: Fraction
    net_per_unit: Fraction


@dataclass(frozen=True, slots=True)
class WagerOdds:
    """The theoretical distribution of one wager under one paytable and one reading.

    `house_edge` is minus the expected net per unit staked (pushes count as staked);
    `variance` is the variance of the net per unit stake.
    """

    wager: str
    paytable: str
    reading: str
    outcomes: tuple[Outcome, ...]
    house_edge: Fraction
    variance: Fraction
    # The hash, computed once: a report's tails are looked up by their odds thousands of times, and
    # hashing the Fractions of every outcome each time (a modular inverse each) was a twentieth of it.
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        # Pickled by its fields (the hash is made again where it is read: str hashes differ by process).
        return WagerOdds, (self.wager, self.paytable, self.reading, self.outcomes, self.house_edge, self.variance)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.wager, self.paytable, self.reading, self.outcomes,
                                                self.house_edge, self.variance)))
        total = sum((o.probability for o in self.outcomes), Fraction(0))
        if total != 1:
            raise ValueError(f"{self.wager}/{self.paytable}: probabilities sum to {total}, not 1")
        if any(o.probability < 0 for o in self.outcomes):
            raise ValueError(f"{self.wager}/{self.paytable}: negative probability")
        mean = sum((o.probability * o.net_per_unit for o in self.outcomes), Fraction(0))
        if self.house_edge != -mean:
            raise ValueError(f"{self.wager}/{self.paytable}: house edge is not -E[net]")

    @classmethod
    def from_outcomes(cls, wager: str, paytable: str, reading: str,
                      outcomes: tuple[Outcome, ...] | list[Outcome]) -> WagerOdds:
        outcomes = tuple(outcomes)
        mean = sum((o.probability * o.net_per_unit for o in outcomes), Fraction(0))
        second = sum((o.probability * o.net_per_unit ** 2 for o in outcomes), Fraction(0))
        return cls(wager, paytable, reading, outcomes, -mean, second - mean * mean)

    @property
    def std_dev(self) -> float:
        return math.sqrt(self.variance)

    @property
    def house_edge_percent(self) -> float:
        return float(self.house_edge * 100)

    def expected_house_win(self, handle_cents: int | Fraction) -> Fraction:
        """Theoretical house win (cents, exact) on this much handle."""
        return Fraction(handle_cents) * self.house_edge


def counted_outcomes(distribution: dict[int, Fraction], paytable, label) -> list[Outcome]:
    """One outcome per count, paid by `paytable.odds_for(count)`; `label(count)` names it."""
    return [Outcome(label(count), p, net_for(paytable.odds_for(count)))
            for count, p in sorted(distribution.items())]
