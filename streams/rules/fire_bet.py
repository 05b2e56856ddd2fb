"""The Fire Bet (§ 623a.11): distinct points made by the shooter, settled at the loser 7."""
from __future__ import annotations

from streams.rules.events import new_marker_placed
from streams.rules.paytables import Paytable
from streams.rules.kinds import WagerSpec
from streams.rules.wager import INDEX_TEXT, Cohort, Wager, by_paytable, wager_from_record

FOUR_POINTS = 4  # § 623a.11(a)(6): surveillance is notified at four different unique points
_POINT_MARKER = tuple(f"point-{p}" for p in range(13))  # a point's marker (a total), named once


class FireCohort(Cohort):
    __slots__ = ("points",)
    layout = "fire"

    def __init__(self, cohort_id: str, wagers: dict[str, Wager] | None = None, points: tuple = ()):
        self.cohort_id = cohort_id  # Cohort.__init__ written out (see there)
        self.wagers = {} if wagers is None else wagers
        self.points = points  # distinct point numbers made, in the order made

    def point_made(self, point: int, event, out: list) -> bool:
        """Marks a new distinct point; True when this throw brings the cohort to four points."""
        # § 623a.11(b)(2): a repeated point does not increment the count.
        if point in self.points:
            return False
        self.points = self.points + (point,)
        count = len(self.points)
        # § 623a.11(a)(4): the marker is inscribed with the running count of distinct points.
        table_id, seq = event.table_id, event.seq
        # output_id(event, out) written out (streams/rules/wager.py), a call saved per marker, and
        # the layout by its name (`self.layout`, a class attribute: no specialised read in 3.11).
        try:
            index = INDEX_TEXT[len(out)]
        except IndexError:
            index = len(out)
        out.append(new_marker_placed(f"{table_id}/{seq}/{index}", table_id, seq, event.ts,
                                     "fire", self.cohort_id, _POINT_MARKER[point], count))
        return count == FOUR_POINTS

    def seven_out(self, paytable: Paytable, event, out: list) -> int:
        """§ 623a.11(a)(5): collected or paid upon the loser 7, never earlier. Returns the odds
        paid (0: no wager won; `Cohort.settle_all`)."""
        count = len(self.points)
        outcome, odds = by_paytable(paytable, count)  # unpacked: a call with *args costs ~1,600 more
        self.settle_all(event, out, outcome, odds, paytable.name, f"points={count}")
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
