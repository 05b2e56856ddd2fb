"""Positions that win improbably: per table, position, wager kind and paytable.

A position's wagers of one kind are decided in different windows (one cohort per window), so their
results are independent draws from the exact distribution of `craps_streams.odds`. Two families of
exact binomial tests, in the direction that favours the player:

- **first throw**: a Hot Roller (§ 623c.1(b),(g)) or Bonus Craps (§ 623a.12) wager is placed before
  a throw and lost to a 7 on it with probability exactly 6/36. A player who only wagers when the
  next throw will not be a 7 (past-posting, a dealer or a shooter in on it) is never decided on its
  first throw: P(at most f first-throw decisions in n) = exact binomial lower tail.
- **results**: for each house result per unit (1 lose, -X an X-to-1 win), the count among the n
  wagers; too few losses or too many wins of a class has an exact binomial tail.

The position's p-value is the smallest tail times the number of tests (Bonferroni: conservative).
An exact tail is evaluated only when a cheap lower bound on it (`binomial_tail_floor`) does not
already rule an alert out. Money is not the signal here: a past-poster on the Hot Roller still
loses on average (the first 7 costs 1/6 of a unit; the wager's edge is 21.8 %), so a test on his
winnings could never see him.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

# P(a wager is decided by the first valid throw after it is placed): a 7 (6 ways in 36) ends Hot
# Roller (it is placed only before a fresh cycle's come-out) and Bonus Craps (any 7 loses it);
# the Fire Bet and the Hot Shooter jackpot are never decided by one throw (they need a seven-out).
FIRST_THROW = {"hot_roller": Fraction(6, 36), "all_small": Fraction(6, 36), "all_tall": Fraction(6, 36),
               "all_or_nothing": Fraction(6, 36)}


@dataclass(slots=True)
class PositionLine:
    wagers: int = 0
    first_throw: int = 0  # decided by the first valid throw after placing
    results: dict = field(default_factory=dict)  # house win per unit -> wagers
    alerted: bool = False
    last_p: float = 1.0  # the last p-value of a full evaluation (the metrics' gauge)

    def to_record(self) -> list:
        return [self.wagers, self.first_throw, {str(v): c for v, c in sorted(self.results.items())},
                self.alerted, self.last_p]

    @classmethod
    def from_record(cls, r: list) -> "PositionLine":
        return cls(r[0], r[1], {int(v): c for v, c in r[2].items()}, r[3], r[4] if len(r) > 4 else 1.0)


def tests_of(wager: str, unit) -> tuple[tuple[str, float, object, bool], ...]:
    """The tests on a position's line: (name, p0, key, lower tail?); key None = first throw."""
    tests = []
    first = FIRST_THROW.get(wager)
    if first:
        tests.append(("decided on the first throw", float(first), None, True))
    for v, p in unit.floats:
        if v > 0:
            tests.append(("lost", p, v, True))
        elif v < 0:
            tests.append((f"won {-v} to 1", p, v, False))
    return tuple(tests)
