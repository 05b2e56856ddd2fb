"""Hot Shooter jackpot (§ 623c.4): the number of throws from the come-out roll to the seven-out."""
from __future__ import annotations

from craps_streams.rules.kinds import WagerSpec
from craps_streams.rules.paytables import Paytable
from craps_streams.rules.wager import Cohort, Wager, by_paytable, wager_from_record

# § 623c.4(a): only on fully automated electronic or hybrid tables.
HOT_SHOOTER_TABLE_KINDS = ("hybrid", "fully_automated")
SETTLED_DETAIL = "throws={throws}"  # a settlement's detail: the throws counted


def settled_detail(throws: int) -> str:
    return SETTLED_DETAIL.format(throws=throws)


class HotShooterCohort(Cohort):
    __slots__ = ("throws",)
    layout = "hot_shooter"

    def __init__(self, cohort_id: str, wagers: dict[str, Wager] | None = None, throws: int = 0):
        super().__init__(cohort_id, wagers)
        self.throws = throws  # from the come-out roll after placing, through the seven-out

    def seven_out(self, paytable: Paytable, event, out: list) -> int:
        """§ 623c.4(d): N <= 7 loses, 8..15 pushes, 16 or more wins by § 623c.4(e). Returns the
        odds paid (0: no wager won)."""
        outcome, odds = by_paytable(paytable, self.throws)
        return self.settle_all(event, out, outcome, odds, paytable.name, settled_detail(self.throws))

    def marks_record(self):
        return self.throws

    @classmethod
    def from_record(cls, record: dict) -> "HotShooterCohort":
        return cls(record["cohort_id"], {w[0]: wager_from_record(w) for w in record["wagers"]},
                   record["marks"])


SPECS = (WagerSpec(
    "hot_shooter", "hot_shooter", HotShooterCohort, "hot_shooter_window_open",
    "a Hot Shooter wager is placed only before the come-out roll (§ 623c.4(c))", "hot_shooter",
    table_kinds=HOT_SHOOTER_TABLE_KINDS,
    table_kind_rejection=("hot_shooter_live_table", "the Hot Shooter jackpot is offered only on fully "
                          "automated electronic or hybrid tables (§ 623c.4(a))"),
    markers=False),)
