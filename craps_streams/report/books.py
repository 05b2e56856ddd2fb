"""The report's books: settlements summed by gaming day, shift, table, wager kind and paytable.

Money is integer cents throughout; every figure of the report is a sum of these lines.

A `Line` keeps the settled money (as `craps_streams.rules.hold.HoldLine` books it: handle, stakes
returned and collected, amounts won) and, for the statistics, the wagers decided by the dice
grouped into decisions as the surveillance groups them (`craps_streams.surveillance.table_watch`: the
wagers of one kind settled by one throw saw the same dice, so they are one outcome): the number
of decisions of each total stake and their house win. Pushes at a table's close or at a surrender
of the dice are not decided by the dice and stay out of the statistics (their money is booked).
Lines merge by adding, so a day is the sum of its shifts and a table the sum of its kinds.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from craps_streams.rules.hold import HoldLine

# The details the rules core gives a push that no throw decided (craps_streams/rules/table.py: a table's
# close pushes every pending wager; a Rules Submission may push a kind at a surrender of the dice).
TABLE_CLOSED_DETAIL = "table closed"
SURRENDER_DETAIL_END = "surrender of the dice"


def decided_by_dice(s) -> bool:
    """Whether a settlement's result came from the dice (else a push at a close or surrender)."""
    return s.outcome != "push" or not (s.detail == TABLE_CLOSED_DETAIL or s.detail.endswith(SURRENDER_DETAIL_END))


@dataclass(slots=True)
class Line:
    money: HoldLine = field(default_factory=HoldLine)
    decisions: int = 0  # decisions by the dice
    dice_handle_cents: int = 0  # their stakes
    dice_house_win_cents: int = 0  # their house win
    stakes: dict = field(default_factory=dict)  # total stake of a decision (cents) -> decisions

    def add_decision(self, stake_cents: int, house_win_cents: int) -> None:
        self.decisions += 1
        self.dice_handle_cents += stake_cents
        self.dice_house_win_cents += house_win_cents
        self.stakes[stake_cents] = self.stakes.get(stake_cents, 0) + 1

    def merge(self, other: "Line") -> None:
        self.money.merge(other.money)
        self.decisions += other.decisions
        self.dice_handle_cents += other.dice_handle_cents
        self.dice_house_win_cents += other.dice_house_win_cents
        for s, c in other.stakes.items():
            self.stakes[s] = self.stakes.get(s, 0) + c

    def copy(self) -> "Line":
        out = Line()
        out.merge(self)
        return out


def book_group(line: Line, group: list) -> tuple[list, int, int]:
    """Book one decision's settlements (same table, deciding seq, wager kind and paytable) into
    `line`: the money of every settlement; the decision, when the dice decided it. Returns the
    settlements the dice decided, the group's handle and its house win (cents)."""
    money = line.money
    handle0, win0 = money.handle_cents, money.house_win_cents
    money.add_all(group)
    dice = [s for s in group if decided_by_dice(s)]
    if dice:
        stake = win = 0
        for s in dice:
            stake += s.stake_cents
            win += s.stake_cents if s.outcome == "lose" else -s.won_cents
        line.add_decision(stake, win)
    return dice, money.handle_cents - handle0, money.house_win_cents - win0


def unit_result(s) -> int:
    """The house's win per unit staked of one settlement (1 lost, 0 push, -X won X to 1), the
    value the odds' unit distribution gives its probability."""
    if s.outcome == "lose":
        return 1
    if s.outcome == "push":
        return 0
    return -(s.won_cents // s.stake_cents)
