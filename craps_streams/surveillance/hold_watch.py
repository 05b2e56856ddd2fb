"""A table's hold book (hold versus theory) and the surveillance settings.

For each wager kind and paytable of a table: handle, stakes collected and returned, amounts won,
outcomes, and the sum of squared stakes per decision, so that the house win can be set against its
expectation (handle x exact house edge) and its standard deviation (exact per-unit std dev x
sqrt(sum of squared stakes)). Wagers of one kind decided by one event saw the same dice, so they
are one outcome, not independent ones: their stakes are added before squaring (treating the players
at a table as independent understates the spread). z = (house win - expected) / std dev is a
display figure; the `hold_anomaly` alert is raised from the exact tail probability of the house
win (`craps_streams.surveillance.table_watch`), whose state the book carries as `watch`.

The book is stored with the table's state in the same Kafka transaction as the settlements, so the
exported counters are exactly once too: a worker that takes a table over exports its whole history,
and the sum over live workers always equals the settlements topic, to the cent.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from craps_streams.odds import wager_odds
from craps_streams.rules import WagerSettled
from craps_streams.rules.hold import HoldLine as SettledHold
from craps_streams.surveillance.table_watch import TableWatch, Thresholds, settled_groups

_COUNTS = ("settled", "wins", "losses", "pushes", "handle_cents", "stake_squares", "collected_cents",
           "returned_cents", "won_cents")


@dataclass(slots=True)
class HoldLine(SettledHold):
    """The settled hold of one wager kind and paytable (counts and cents booked by
    `craps_streams.rules.hold.HoldLine.add`), with the theory beside it."""

    house_edge: float = 0.0  # exact, per unit staked, under the paytable and reading in force
    std_dev_per_unit: float = 0.0
    stake_squares: int = 0  # sum over decisions of (stakes decided together)^2, cents^2
    alerted: bool = False  # kept for records stored when z raised the alert; no longer used

    @property
    def expected_house_win_cents(self) -> float:
        return self.house_edge * self.handle_cents

    @property
    def std_dev_cents(self) -> float:
        return self.std_dev_per_unit * math.sqrt(self.stake_squares)

    @property
    def z_score(self) -> float:
        sd = self.std_dev_cents
        return (self.house_win_cents - self.expected_house_win_cents) / sd if sd else 0.0

    def to_record(self) -> list:
        return [self.house_edge, self.std_dev_per_unit, *(getattr(self, n) for n in _COUNTS), self.alerted]

    @classmethod
    def from_record(cls, r: list) -> "HoldLine":
        return cls(house_edge=r[0], std_dev_per_unit=r[1], **dict(zip(_COUNTS, r[2:2 + len(_COUNTS)])),
                   alerted=r[2 + len(_COUNTS)])


@dataclass(slots=True)
class HoldBook:
    """One table's hold, by (wager kind, paytable)."""

    lines: dict[tuple[str, str], HoldLine] = field(default_factory=dict)
    # The table's surveillance (dice, hold tails, positions): stored beside the book, not in it.
    watch: TableWatch = field(default_factory=TableWatch)

    def to_record(self) -> dict:
        return {f"{w}|{p}": line.to_record() for (w, p), line in sorted(self.lines.items())}

    @classmethod
    def from_record(cls, r: dict) -> "HoldBook":
        return cls({tuple(k.split("|", 1)): HoldLine.from_record(v) for k, v in r.items()})


@dataclass(frozen=True, slots=True)
class HoldWatch:
    """The casino's surveillance settings and the booking of settlements into the hold lines.

    The alerts themselves come from exact tail probabilities (`craps_streams.surveillance.table_watch`);
    z stays on the book as a display figure only (the normal approximation is wrong in the long
    tails of the jackpot wagers, where it matters)."""

    thresholds: Thresholds = field(default_factory=Thresholds)
    # What makes a table's surveillance when its book is made: the Python `TableWatch`, or in
    # replay the native watch (craps_streams/surveillance/native_watch.py `watch_factory`), which observes
    # the same.
    table_watch: object = TableWatch

    def watch(self, book: HoldBook, state, outputs, groups: dict | None = None) -> None:
        """Book the settlements among `outputs` into the hold lines. `groups`, when given, is
        `settled_groups(outputs)` already made (the settling step shares it with the table's
        surveillance, which groups the same way)."""
        if groups is None:
            groups = settled_groups(outputs)
        lines = book.lines
        for (_, wager, paytable), group in groups.items():
            key = (wager, paytable)
            line = lines.get(key)
            if line is None:
                line = lines[key] = self.new_line(state, wager)
            stakes = line.add_all(group)
            line.stake_squares += stakes * stakes  # the wagers of one decision: one outcome

    @staticmethod
    def new_line(state, wager: str) -> HoldLine:
        """A wager kind's first line in a table's book, its theory under the table's rules (the
        native booking, native/src/watch.rs `book_observe`, makes its lines here too)."""
        odds = wager_odds(wager, state.rules)
        return HoldLine(house_edge=float(odds.house_edge), std_dev_per_unit=odds.std_dev)

