"""The Fire Bet (§ 623a.11): distinct points made by the shooter, settled at the loser 7."""
from __future__ import annotations

from craps_streams.rules.kinds import WagerSpec
from craps_streams.rules.paytables import Paytable
from craps_streams.rules.wager import Cohort, Wager, by_paytable, wager_from_record

FOUR_POINTS = 4  # § 623a.11(a)(6): surveillance is notified at four different unique points
POINT_MARKER = "point-{point}"  # § 623a.11(a)(4): the marker of a point made
SETTLED_DETAIL = "points={count}"  # a settlement's detail: the distinct points made


class FireCohort(Cohort):
    __slots__ = ("points",)
    layout = "fire"

    def __init__(self, cohort_id: str, wagers: dict[str, Wager] | None = None, points: tuple = ()):
        super().__init__(cohort_id, wagers)
        self.points = points  # distinct point numbers made, in the order made

    def point_made(self, point: int, event, out: list) -> bool:
        """Marks a new distinct point; True when this throw brings the cohort to four points."""
        # § 623a.11(b)(2): a repeated point does not increment the count.
        if point in self.points:
            return False
        self.points = self.points + (point,)
        count = len(self.points)
        # § 623a.11(a)(4): the marker is inscribed with the running count of distinct points.
        self.placed(event, out, POINT_MARKER.format(point=point), count)
        return count == FOUR_POINTS

    def seven_out(self, paytable: Paytable, event, out: list) -> int:
        """§ 623a.11(a)(5): collected or paid upon the loser 7, never earlier. Returns the odds
        paid (0: no wager won)."""
        count = len(self.points)
        outcome, odds = by_paytable(paytable, count)
        self.settle_all(event, out, outcome, odds, paytable.name, SETTLED_DETAIL.format(count=count))
        self.cleared(event, out, "seven_out")
        return odds

    def marks_record(self):
        return list(self.points)

    @classmethod
    def from_record(cls, record: dict) -> "FireCohort":
        return cls(record["cohort_id"], {w[0]: wager_from_record(w) for w in record["wagers"]},
                   tuple(record["marks"]))


SPECS = (WagerSpec(
    "fire", "fire", FireCohort, "fire_and_bonus_window_open",
    "a Fire Bet is placed only before a new shooter's initial come-out roll (§ 623a.11(a)(1))", "fire"),)
