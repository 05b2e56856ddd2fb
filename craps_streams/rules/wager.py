"""A wager in action, the cohort it shares markers with, and how a paytable settles it."""
from __future__ import annotations

from craps_streams.rules.events import MarkerCleared, MarkerPlaced, WagerSettled, settlement_id
from craps_streams.rules.paytables import PUSH, Paytable

# A wager in action is a tuple, its fields in this order (a state's record holds it as the same list):
#     (wager_id, position, wager kind, amount_cents, placed_seq)
WAGER_ID, POSITION, KIND, AMOUNT_CENTS, PLACED_SEQ = range(5)
Wager = tuple  # the annotation of a wager in action (the layout above)


def wager_from_record(record: list) -> Wager:
    """A wager in action from its record (the list of its fields, in order)."""
    wager_id, position, kind, amount_cents, placed_seq = record
    return (wager_id, position, kind, amount_cents, placed_seq)


def settled(wager: Wager, event, outcome: str, won_cents: int, paytable: str, detail: str) -> WagerSettled:
    """The settlement of a wager by the event that decides it."""
    wager_id, position, kind, amount_cents, placed_seq = wager
    return WagerSettled(
        wager_id, event.table_id, position, kind, outcome, amount_cents,
        won_cents, paytable, detail, event.seq, event.ts, placed_seq,
        settlement_id(event.table_id, event.seq, wager_id),
    )


def by_paytable(paytable: Paytable, count: int) -> tuple[str, int]:
    """(outcome, odds to 1) for the count that decides a wager; odds are 0 unless it wins."""
    odds = paytable.odds_for(count)
    if odds is None:
        return "lose", 0
    if odds == PUSH:
        return "push", 0
    return "win", odds


def output_id(event, out: list) -> str:
    """Deterministic id of the next output of this input event: table, seq, position in the list."""
    return f"{event.table_id}/{event.seq}/{len(out)}"


class Cohort:
    """Wagers placed in one window share one set of markers (docs/rules.md, "Marks belong to the wagers
    that saw them"), so per-throw work grows with the number of cohorts, not of wagers."""

    __slots__ = ("cohort_id", "wagers")
    layout = ""  # the group whose layout the markers are on

    def __init__(self, cohort_id: str, wagers: dict[str, Wager] | None = None):
        self.cohort_id = cohort_id
        self.wagers = {} if wagers is None else wagers

    def add(self, wager: Wager) -> None:
        self.wagers[wager[WAGER_ID]] = wager

    def placed(self, event, out: list, marker: str, count: int) -> None:
        """A marker on this cohort's layout."""
        out.append(MarkerPlaced(output_id(event, out), event.table_id, event.seq, event.ts,
                                self.layout, self.cohort_id, marker, count))

    def cleared(self, event, out: list, reason: str) -> None:
        """Every marker of this cohort removed."""
        out.append(MarkerCleared(output_id(event, out), event.table_id, event.seq, event.ts,
                                 self.layout, self.cohort_id, reason))

    def settle_all(self, event, out: list, outcome: str, odds: int, paytable: str, detail: str) -> int:
        """Settle every wager of the cohort alike: they share the markers, so the same count.
        Returns `odds` (0 when no wager of the cohort won anything)."""
        for wager in self.wagers.values():
            out.append(settled(wager, event, outcome, odds * wager[AMOUNT_CENTS], paytable, detail))
        self.wagers = {}
        return odds

    def pop_kind(self, kind: str) -> list[Wager]:
        taken = [w for w in self.wagers.values() if w[KIND] == kind]
        for w in taken:
            del self.wagers[w[WAGER_ID]]
        return taken

    def marks_record(self):
        raise NotImplementedError

    def to_record(self) -> dict:
        return {"cohort_id": self.cohort_id, "marks": self.marks_record(),
                "wagers": [list(w) for w in self.wagers.values()]}
