"""A wager in action, the cohort it shares markers with, and how a paytable settles it."""
from __future__ import annotations

from streams.rules.events import WagerSettled, new_marker_cleared, new_wager_settled, settlement_id
from streams.rules.paytables import PUSH, Paytable

# A wager in action is a plain tuple, immutable, its fields in this order:
#     (wager_id, position, wager kind, amount_cents, placed_seq)
# read by unpacking or by these indices. It was a NamedTuple: building one cost about 70 ns more
# than a tuple (92 against 24 ns: a Python-level or `tuple.__new__` call where a tuple is one
# opcode), and a tuple subclass's instances are never untracked by the cyclic collector, where a
# tuple of strings and ints is; one is made per WagerPlaced, three events in four. As plain tuples
# the core ran 11.6 % fewer instructions on the play of benchmarks/crapssim_compare.py
# (benchmarks/core_instructions.py, callgrind). A state's record holds a wager as the same list.
WAGER_ID, POSITION, KIND, AMOUNT_CENTS, PLACED_SEQ = range(5)
Wager = tuple  # the annotation of a wager in action (the layout above)


def wager_from_record(record: list) -> Wager:
    """A wager in action from its record (the list of its fields, in order)."""
    wager_id, position, kind, amount_cents, placed_seq = record
    return (wager_id, position, kind, amount_cents, placed_seq)


def settled(wager: Wager, event, outcome: str, won_cents: int, paytable: str, detail: str) -> WagerSettled:
    wager_id, position, kind, amount_cents, placed_seq = wager
    return new_wager_settled(
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
    try:
        index = INDEX_TEXT[len(out)]
    except IndexError:
        index = len(out)
    return f"{event.table_id}/{event.seq}/{index}"


# The decimal text of a position in an event's outputs, for `output_id` and the marker sites that
# write it out (`Cohort.cleared`, `BonusCrapsCohort.total_thrown`, `FireCohort.point_made`): read,
# not formatted from the int per output (a throw's outputs rarely number more than a few dozen;
# beyond, the int is formatted). With those sites' call of `output_id` saved and the markers'
# names read (`_TOTAL_MARKER`, `_POINT_MARKER`): -1.4 % of the core's instructions (199.8M ->
# 197.0M at 500 hands, callgrind, benchmarks/core_instructions.py); tests/rules/
# test_core_fast_paths.py holds every output's id to the definition.
INDEX_TEXT = tuple(map(str, range(256)))


class Cohort:
    """Wagers placed in one window share one set of markers (docs/rules.md, "Marks belong to the wagers
    that saw them"), so per-throw work grows with the number of cohorts, not of wagers."""

    __slots__ = ("cohort_id", "wagers")
    layout = ""

    def __init__(self, cohort_id: str, wagers: dict[str, Wager] | None = None):
        # Each kind's cohort sets these two itself rather than by `super().__init__`: a cohort is
        # made per window (each new shooter's, for every group played), and the super() object
        # and the second frame cost about 1,700 instructions a cohort (3.11 has no specialised
        # super call). With `settle_all`'s id prefix written out and the cohorts' settling
        # called without *args: -1.5 % of the core's instructions (194.7M -> 191.8M at 500
        # hands, callgrind, benchmarks/core_instructions.py).
        self.cohort_id = cohort_id
        self.wagers = {} if wagers is None else wagers

    def add(self, wager: Wager) -> None:
        self.wagers[wager[WAGER_ID]] = wager

    def cleared(self, event, out: list, reason: str) -> None:
        table_id, seq = event.table_id, event.seq
        try:  # output_id(event, out) written out, a call saved per marker
            index = INDEX_TEXT[len(out)]
        except IndexError:
            index = len(out)
        out.append(new_marker_cleared(f"{table_id}/{seq}/{index}", table_id, seq, event.ts,
                                      self.layout, self.cohort_id, reason))

    def settle_all(self, event, out: list, outcome: str, odds: int, paytable: str, detail: str) -> int:
        """Settle every wager of the cohort alike: they share the markers, so the same count.
        Returns `odds`: 0 when no wager of the cohort won anything (a seven-out skips the
        large-win scan when every cohort it settled returned 0: `_on_dice_thrown`)."""
        table_id, seq, ts = event.table_id, event.seq, event.ts
        # settlement_id(table_id, seq, wager id) written out (a call saved per cohort): this
        # prefix + the wager id, the same text.
        prefix = f"{table_id}/{seq}/settle/"
        # A wager unpacked in one step (its fields in order) rather than read field by field: a
        # seven-out settles every player's wagers here. `out.append` is called as a method, not
        # bound once to a local: CPython 3.11 then appends inline (its specialised list append)
        # where a bound method is a call; -0.8 % of the core's instructions (191.8M -> 190.2M at
        # 500 hands, callgrind, benchmarks/core_instructions.py).
        for wager_id, position, kind, amount, placed_seq in self.wagers.values():
            out.append(new_wager_settled(wager_id, table_id, position, kind, outcome, amount,
                                         odds * amount, paytable, detail, seq, ts, placed_seq,
                                         prefix + wager_id))
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
