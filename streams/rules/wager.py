"""A wager in action, the cohort it shares markers with, and how a paytable settles it."""
from __future__ import annotations

from dataclasses import dataclass

from streams.rules.events import MarkerCleared, WagerSettled
from streams.rules.paytables import PUSH, Paytable


@dataclass(frozen=True, slots=True)
class Wager:
    wager_id: str
    position: int
    wager: str
    amount_cents: int
    placed_seq: int

    def to_record(self) -> list:
        return [self.wager_id, self.position, self.wager, self.amount_cents, self.placed_seq]

    @classmethod
    def from_record(cls, record: list) -> "Wager":
        return cls(*record)


def settled(wager: Wager, event, outcome: str, won_cents: int, paytable: str, detail: str) -> WagerSettled:
    # The id joins table, deciding seq and wager: re-processing the same input yields the same id,
    # so a consumer that dedupes on it can never pay twice.
    return WagerSettled(
        id=f"{event.table_id}/{event.seq}/settle/{wager.wager_id}",
        wager_id=wager.wager_id, table_id=event.table_id, position=wager.position,
        wager=wager.wager, outcome=outcome, stake_cents=wager.amount_cents, won_cents=won_cents,
        paytable=paytable, detail=detail, seq=event.seq, ts=event.ts, placed_seq=wager.placed_seq,
    )


def settled_by_paytable(wager: Wager, event, paytable: Paytable, count: int, detail: str) -> WagerSettled:
    odds = paytable.odds_for(count)
    if odds is None:
        return settled(wager, event, "lose", 0, paytable.name, detail)
    if odds == PUSH:
        return settled(wager, event, "push", 0, paytable.name, detail)
    return settled(wager, event, "win", odds * wager.amount_cents, paytable.name, detail)


def output_id(event, out: list) -> str:
    """Deterministic id of the next output of this input event: table, seq, position in the list."""
    return f"{event.table_id}/{event.seq}/{len(out)}"


class Cohort:
    """Wagers placed in one window share one set of markers (RULES.md, "Marks belong to the wagers
    that saw them"), so per-throw work grows with the number of cohorts, not of wagers."""

    __slots__ = ("cohort_id", "wagers")
    layout = ""

    def __init__(self, cohort_id: str, wagers: dict[str, Wager] | None = None):
        self.cohort_id = cohort_id
        self.wagers = {} if wagers is None else wagers

    def add(self, wager: Wager) -> None:
        self.wagers[wager.wager_id] = wager

    def cleared(self, event, out: list, reason: str) -> None:
        out.append(MarkerCleared(output_id(event, out), event.table_id, event.seq, event.ts,
                                 self.layout, self.cohort_id, reason))

    def settle_all(self, event, out: list, settle) -> list[str]:
        """Settle every wager with `settle(wager) -> WagerSettled`; returns the settled ids."""
        ids = []
        for wager in self.wagers.values():
            out.append(settle(wager))
            ids.append(wager.wager_id)
        self.wagers = {}
        return ids

    def pop_kind(self, kind: str) -> list[Wager]:
        taken = [w for w in self.wagers.values() if w.wager == kind]
        for w in taken:
            del self.wagers[w.wager_id]
        return taken

    def marks_record(self):
        raise NotImplementedError

    def to_record(self) -> dict:
        return {"cohort_id": self.cohort_id, "marks": self.marks_record(),
                "wagers": [w.to_record() for w in self.wagers.values()]}
