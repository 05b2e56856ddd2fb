"""Hot Roller (§ 623c.1): the fourteen dice combinations of 4, 5, 6, 8, 9 and 10."""
from __future__ import annotations

from craps_streams.rules.kinds import WagerSpec
from craps_streams.rules.paytables import Paytable
from craps_streams.rules.wager import Cohort, Wager, by_paytable, wager_from_record

# § 623c.1(a)(2)(iii): the combinations of each number, the order of the dice not mattering.
COMBINATIONS = {
    4: ((1, 3), (2, 2)),
    5: ((1, 4), (2, 3)),
    6: ((1, 5), (2, 4), (3, 3)),
    8: ((2, 6), (3, 5), (4, 4)),
    9: ((3, 6), (4, 5)),
    10: ((4, 6), (5, 5)),
}
# (low die, high die) -> bit of the combination
COMBO_BIT = {combo: 1 << i for i, combo in enumerate(c for n in sorted(COMBINATIONS) for c in COMBINATIONS[n])}
NUMBER_MASK = {n: sum(COMBO_BIT[c] for c in combos) for n, combos in COMBINATIONS.items()}


COMBO_MARKER = "combo-{low}-{high}"  # § 623c.1(d): the marker of a combination thrown
NUMBER_MARKER = "number-{number}"  # § 623c.1(f): the marker of a number completed
SETTLED_DETAIL = "numbers={count}"  # a settlement's detail: the numbers completed
COME_OUT_SEVEN_DETAIL = "come-out seven, numbers={count}"  # the same, lost to a come-out 7 (§ 623c.1(g))


def completed_numbers(marks: int) -> list[int]:
    return [n for n, mask in NUMBER_MASK.items() if marks & mask == mask]


class HotRollerCohort(Cohort):
    __slots__ = ("marks",)
    layout = "hot_roller"

    def __init__(self, cohort_id: str, wagers: dict[str, Wager] | None = None, marks: int = 0):
        super().__init__(cohort_id, wagers)
        self.marks = marks  # the combinations thrown, as bits (COMBO_BIT)

    def dice_thrown(self, low: int, high: int, event, out: list) -> None:
        """§ 623c.1(d),(f): a marker on the combination, and on the number once all of its
        combinations are thrown."""
        bit = COMBO_BIT.get((low, high))
        if bit is None or self.marks & bit:
            return
        self.marks |= bit
        self.placed(event, out, COMBO_MARKER.format(low=low, high=high), self.marks.bit_count())
        number = low + high
        mask = NUMBER_MASK[number]
        if self.marks & mask == mask:
            self.placed(event, out, NUMBER_MARKER.format(number=number), len(completed_numbers(self.marks)))

    def seven(self, paytable: Paytable, pays: bool, event, out: list) -> int:
        """§ 623c.1(g): settled by a 7. `pays` is False for a come-out 7 under the literal reading
        (it loses whatever is marked); otherwise the completed numbers decide by the paytable.
        Returns the odds paid (0: no wager won)."""
        count = len(completed_numbers(self.marks))
        if pays:
            outcome, odds = by_paytable(paytable, count)
            self.settle_all(event, out, outcome, odds, paytable.name, SETTLED_DETAIL.format(count=count))
        else:
            odds = self.settle_all(event, out, "lose", 0, paytable.name, COME_OUT_SEVEN_DETAIL.format(count=count))
        self.cleared(event, out, "seven")
        return odds

    def marks_record(self):
        return self.marks

    @classmethod
    def from_record(cls, record: dict) -> "HotRollerCohort":
        return cls(record["cohort_id"], {w[0]: wager_from_record(w) for w in record["wagers"]},
                   record["marks"])


SPECS = (WagerSpec(
    "hot_roller", "hot_roller", HotRollerCohort, "hot_roller_window_open",
    "a Hot Roller wager is made only before the come-out roll of a fresh cycle (§ 623c.1(b))", "hot_roller",
    change_locked=("hot_roller_locked", "a Hot Roller wager may not be reduced, increased or removed "
                   "until resolved (§ 623c.1(b))")),)
