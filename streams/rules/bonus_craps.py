"""Bonus Craps (§ 623a.12): All Small, All Tall, All Or Nothing At All."""
from __future__ import annotations

from streams.rules.events import new_marker_placed
from streams.rules.paytables import BonusPaytable
from streams.rules.kinds import WagerSpec
from streams.rules.wager import AMOUNT_CENTS, INDEX_TEXT, Cohort, Wager, settled, wager_from_record

# § 623a.3(43) as docs/rules.md states it: the totals each wager needs, as bit masks over the total.
NEEDS = {
    "all_small": sum(1 << t for t in (2, 3, 4, 5, 6)),
    "all_tall": sum(1 << t for t in (8, 9, 10, 11, 12)),
    "all_or_nothing": sum(1 << t for t in (2, 3, 4, 5, 6, 8, 9, 10, 11, 12)),
}


# Read per marked total (a throw's first of its number): the wagers needing that total, in the
# order of NEEDS, and the marker's name, made once here rather than tested and formatted per throw.
_NEEDING = tuple(tuple((kind, needs) for kind, needs in NEEDS.items() if needs >> t & 1) for t in range(13))
_TOTAL_MARKER = tuple(f"total-{t}" for t in range(13))


def marked_totals(marks: int) -> list[int]:
    return [t for t in range(2, 13) if marks >> t & 1]


_SEVEN_DETAIL: dict[int, str] = {}  # marks -> the detail of a seven's settlements, filled as met


def seven_detail(marks: int) -> str:
    """The detail of the settlements a 7 makes with these totals marked ("seven with 4,6 marked"):
    kept per marks (at most 2**10 entries, the totals but 7), which saves about 1 us of list, join
    and format per cohort a 7 collects (with the `any` of `_on_dice_thrown`, -1.8 % of the core's
    instructions on the play of benchmarks/crapssim_compare.py)."""
    detail = _SEVEN_DETAIL.get(marks)
    if detail is None:
        marked = ",".join(map(str, marked_totals(marks))) or "nothing"
        detail = _SEVEN_DETAIL[marks] = f"seven with {marked} marked"
    return detail


class BonusCrapsCohort(Cohort):
    __slots__ = ("marks",)
    layout = "bonus_craps"

    def __init__(self, cohort_id: str, wagers: dict[str, Wager] | None = None, marks: int = 0):
        self.cohort_id = cohort_id  # Cohort.__init__ written out (see there)
        self.wagers = {} if wagers is None else wagers
        self.marks = marks

    def total_thrown(self, total: int, paytable: BonusPaytable, event, out: list) -> bool:
        """§ 623a.12(3),(4),(6): mark the total; pay a wager the moment all its numbers are marked,
        in any order, leaving the others in action. True when it paid a wager (a throw that paid
        none has no settlement to forget: `_on_dice_thrown`)."""
        bit = 1 << total
        marks = self.marks
        if marks & bit:
            return False
        self.marks = marks = marks | bit
        table_id, seq = event.table_id, event.seq
        # output_id(event, out) written out (streams/rules/wager.py), a call saved per marker, and
        # the layout by its name (`self.layout`, a class attribute: no specialised read in 3.11).
        try:
            index = INDEX_TEXT[len(out)]
        except IndexError:
            index = len(out)
        out.append(new_marker_placed(f"{table_id}/{seq}/{index}", table_id, seq, event.ts,
                                     "bonus_craps", self.cohort_id, _TOTAL_MARKER[total], marks.bit_count()))
        paid = False
        for kind, needs in _NEEDING[total]:  # the wagers whose numbers include this total
            if marks & needs == needs:
                odds = paytable.odds_for(kind)
                for w in self.pop_kind(kind):
                    out.append(settled(w, event, "win", odds * w[AMOUNT_CENTS], paytable.name,
                                       f"{kind} complete"))
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
