"""Bonus Craps (§ 623a.12): All Small, All Tall, All Or Nothing At All."""
from __future__ import annotations

from craps_streams.rules.kinds import WagerSpec
from craps_streams.rules.paytables import BonusPaytable
from craps_streams.rules.wager import AMOUNT_CENTS, Cohort, Wager, settled, wager_from_record

# § 623a.3(43) as docs/rules.md states it: the totals each wager needs; the layout marks all ten.
TOTALS = {
    "all_small": (2, 3, 4, 5, 6),
    "all_tall": (8, 9, 10, 11, 12),
    "all_or_nothing": (2, 3, 4, 5, 6, 8, 9, 10, 11, 12),
}
LAYOUT_TOTALS = TOTALS["all_or_nothing"]
# The same, as bit masks over the total.
NEEDS = {wager: sum(1 << t for t in totals) for wager, totals in TOTALS.items()}
TOTAL_MARKER = "total-{total}"  # § 623a.12(3): the marker of a total thrown
COMPLETE_DETAIL = "{wager} complete"  # a winning settlement's detail
SEVEN_DETAIL = "seven with {marked} marked"  # a 7's settlements: the totals marked, or NOTHING_MARKED
NOTHING_MARKED = "nothing"


def marked_totals(marks: int) -> list[int]:
    return [t for t in range(2, 13) if marks >> t & 1]


def seven_detail(marks: int) -> str:
    """The detail of the settlements a 7 makes with these totals marked ("seven with 4,6 marked")."""
    marked = ",".join(map(str, marked_totals(marks))) or NOTHING_MARKED
    return SEVEN_DETAIL.format(marked=marked)


class BonusCrapsCohort(Cohort):
    __slots__ = ("marks",)
    layout = "bonus_craps"

    def __init__(self, cohort_id: str, wagers: dict[str, Wager] | None = None, marks: int = 0):
        super().__init__(cohort_id, wagers)
        self.marks = marks  # the totals marked, as a bit mask over the total

    def total_thrown(self, total: int, paytable: BonusPaytable, event, out: list) -> bool:
        """§ 623a.12(3),(4),(6): mark the total; pay a wager the moment all its numbers are marked,
        in any order, leaving the others in action. True when it paid a wager."""
        bit = 1 << total
        if self.marks & bit:
            return False
        self.marks |= bit
        self.placed(event, out, TOTAL_MARKER.format(total=total), self.marks.bit_count())
        paid = False
        for kind, needs in NEEDS.items():
            if needs & bit and self.marks & needs == needs:
                odds = paytable.odds_for(kind)
                for w in self.pop_kind(kind):
                    out.append(settled(w, event, "win", odds * w[AMOUNT_CENTS], paytable.name,
                                       COMPLETE_DETAIL.format(wager=kind)))
                    paid = True
        return paid

    def seven(self, paytable: BonusPaytable, event, out: list) -> None:
        """§ 623a.12(5): a 7 at any time, come-out included, collects every Bonus Craps wager and
        removes all marker buttons."""
        self.settle_all(event, out, "lose", 0, paytable.name, seven_detail(self.marks))
        self.marks = 0
        self.cleared(event, out, "seven")

    def marks_record(self):
        return marked_totals(self.marks)

    @classmethod
    def from_record(cls, record: dict) -> "BonusCrapsCohort":
        return cls(record["cohort_id"], {w[0]: wager_from_record(w) for w in record["wagers"]},
                   sum(1 << t for t in record["marks"]))


_WHY = "Bonus Craps is placed only before a new shooter's initial come-out roll (§ 623a.12(1))"
SPECS = tuple(WagerSpec(kind, "bonus_craps", BonusCrapsCohort, "fire_and_bonus_window_open", _WHY, "bonus")
              for kind in ("all_small", "all_tall", "all_or_nothing"))
