"""Paytables of the four side wagers, each named after the section that sets it.

A paytable maps the count that decides a wager (distinct points, completed numbers, throws)
to a result. "X to 1" on a stake S wins X*S and returns S (docs/rules.md, Words).
Odds are integers: every paytable in the regulations is whole "X to 1".
"""
from __future__ import annotations

import msgspec

PUSH = -1  # a band that returns the stake (§ 623c.4(d)(2))


class Paytable(msgspec.Struct, frozen=True):
    """`bands` is ((lowest count, odds to 1), ...) sorted ascending by count.

    The result for a count is the band with the highest lowest-count not above it; a count
    below the first band loses. `PUSH` as odds means the stake is returned.
    """

    name: str
    bands: tuple[tuple[int, int], ...]

    def odds_for(self, count: int) -> int | None:
        """Odds to 1 for this count, PUSH, or None when the wager loses."""
        result = None
        for lowest, odds in self.bands:
            if count >= lowest:
                result = odds
            else:
                break
        return result


class BonusPaytable(msgspec.Struct, frozen=True):
    """Bonus Craps pays each of its three wagers by its own odds (§ 623a.5(h), § 623b.3)."""

    name: str
    all_small: int
    all_tall: int
    all_or_nothing: int

    def odds_for(self, wager: str) -> int:
        return getattr(self, wager)


# § 623a.5 (not reproduced in the texts here; docs/rules.md default): 4 points 24 to 1,
# 5 points 249 to 1, 6 points 999 to 1; fewer than 4 loses.
FIRE_STANDARD = Paytable("fire-623a.5", ((4, 24), (5, 249), (6, 999)))

# § 623a.5(h) default and § 623b.3 alternate.
BONUS_STANDARD = BonusPaytable("bonus-623a.5h", 34, 34, 175)
BONUS_ALTERNATE = BonusPaytable("bonus-623b.3", 30, 30, 150)

# § 623c.1(h): completed numbers 2..6; fewer than 2 loses.
HOT_ROLLER_A = Paytable("hot-roller-623c.1h-A", ((2, 5), (3, 10), (4, 20), (5, 50), (6, 200)))
HOT_ROLLER_B = Paytable("hot-roller-623c.1h-B", ((2, 5), (3, 10), (4, 20), (5, 50), (6, 300)))

# § 623c.4(d),(e): throws from the come-out roll through the seven-out, both included.
HOT_SHOOTER_STANDARD = Paytable(
    "hot-shooter-623c.4e",
    ((8, PUSH), (16, 2), (24, 4), (32, 6), (40, 11), (45, 29), (50, 99)),
)

FIRE_PAYTABLES = {p.name: p for p in (FIRE_STANDARD,)}
BONUS_PAYTABLES = {p.name: p for p in (BONUS_STANDARD, BONUS_ALTERNATE)}
HOT_ROLLER_PAYTABLES = {p.name: p for p in (HOT_ROLLER_A, HOT_ROLLER_B)}
HOT_SHOOTER_PAYTABLES = {p.name: p for p in (HOT_SHOOTER_STANDARD,)}
