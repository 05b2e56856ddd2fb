"""The hold ledger: handle, stakes returned and collected, amounts won, house win, per wager kind.

Counted over settled wagers (a wager's stake enters the handle when it is settled), so at every
moment handle = stakes returned + stakes collected and house win = stakes collected - amounts won.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from craps_streams.rules.events import WagerSettled


@dataclass(slots=True)
class HoldLine:
    settled: int = 0
    handle_cents: int = 0
    returned_cents: int = 0  # stakes returned on a win or a push
    collected_cents: int = 0  # stakes collected on a loss
    won_cents: int = 0  # amounts won by players, stakes not included
    wins: int = 0
    losses: int = 0
    pushes: int = 0

    @property
    def house_win_cents(self) -> int:
        return self.collected_cents - self.won_cents

    @property
    def hold_percent(self) -> float:
        return 100.0 * self.house_win_cents / self.handle_cents if self.handle_cents else 0.0

    def add(self, s: WagerSettled) -> None:
        self.settled += 1
        self.handle_cents += s.stake_cents
        if s.outcome == "lose":
            self.collected_cents += s.stake_cents
            self.losses += 1
        else:
            self.returned_cents += s.stake_cents
            self.won_cents += s.won_cents
            if s.outcome == "win":
                self.wins += 1
            else:
                self.pushes += 1

    def add_all(self, group: list) -> int:
        """`add(s)` for each settlement of `group`, summed locally and written to the line once;
        returns the group's stakes. A seven-out settles a table's wagers of a kind together, and
        `add` per settlement (a call and five attribute updates each) was a third of the hold
        book's booking (craps_streams/surveillance/hold_watch.py); tests/surveillance/test_hold_watch.py
        holds it to `add` one by one."""
        handle = collected = returned = won = losses = wins = 0
        for s in group:
            cents = s.stake_cents
            handle += cents
            outcome = s.outcome
            if outcome == "lose":
                collected += cents
                losses += 1
            else:
                returned += cents
                won += s.won_cents
                if outcome == "win":
                    wins += 1
        n = len(group)
        self.settled += n
        self.handle_cents += handle
        self.collected_cents += collected
        self.losses += losses
        self.returned_cents += returned
        self.won_cents += won
        self.wins += wins
        self.pushes += n - losses - wins
        return handle

    def merge(self, other: "HoldLine") -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass(slots=True)
class HoldLedger:
    """Hold by (table id, wager kind, paytable)."""

    lines: dict[tuple[str, str, str], HoldLine] = field(default_factory=dict)

    def add(self, s: WagerSettled) -> None:
        key = (s.table_id, s.wager, s.paytable)
        line = self.lines.get(key)
        if line is None:
            line = self.lines[key] = HoldLine()
        line.add(s)

    def by_wager(self) -> dict[str, HoldLine]:
        totals: dict[str, HoldLine] = {}
        for (_, wager, _), line in sorted(self.lines.items()):
            totals.setdefault(wager, HoldLine()).merge(line)
        return totals

    def total(self) -> HoldLine:
        t = HoldLine()
        for line in self.lines.values():
            t.merge(line)
        return t
