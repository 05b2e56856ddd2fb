"""Dice fairness per table: sequential CUSUM tests over the 36 ordered outcomes.

Fair dice give each ordered outcome (die1, die2) probability 1/36. Page's CUSUM for a stated bias
keeps S = max(0, S + log(p1(x) / p0(x))) per throw and alarms when S >= h; for a test built on the
log-likelihood ratio the mean run length to a false alarm under fair dice is at least e^h (Lorden
1971), so a table's false-alarm rate is at most (number of CUSUMs) x e^-h per valid throw whatever
the threshold is used for. The stated biases:

- `seven_low` / `seven_high`: P(7) = 5/36 / 7/36 instead of 6/36, the rest of the mass spread
  evenly (loaded or shaved dice; every side wager here loses on a 7, so fewer 7s pay players).
- `die1_face_k` / `die2_face_k`, k = 1..6: that die shows k with probability 1/4 instead of 1/6 (a
  worn or loaded die, a drifting mechanical shaker).
- `cell_a_b`: the ordered outcome (a, b) with probability 2/36 instead of 1/36 (a controlled throw,
  a shaker stuck on a pattern).

Only one CUSUM per family sees a likelihood ratio other than its "miss" value on each throw; a run
of misses (constant negative increments) is applied lazily when the CUSUM is next hit, which is
exact because the clamp at 0 commutes with a monotone run. So a throw costs O(1), not O(50).

Invalid rolls (§ 623a.8: a die off the table, cocked dice) count for nothing in the game and are
kept apart (`invalid`): they are not dice outcomes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import msgspec

P_SEVEN_LOW, P_SEVEN_HIGH = 5 / 36, 7 / 36
P_FACE = 1 / 4
P_CELL = 2 / 36

# Per throw log-likelihood ratios of each stated bias against fair dice.
_SEVEN_LOW = (math.log(P_SEVEN_LOW / (6 / 36)), math.log((1 - P_SEVEN_LOW) / (30 / 36)))  # (7, other)
_SEVEN_HIGH = (math.log(P_SEVEN_HIGH / (6 / 36)), math.log((1 - P_SEVEN_HIGH) / (30 / 36)))
_FACE = (math.log(P_FACE / (1 / 6)), math.log((1 - P_FACE) / (5 / 6)))  # (hit, miss)
_CELL = (math.log(P_CELL / (1 / 36)), math.log((1 - P_CELL) / (35 / 36)))

CUSUMS = 2 + 12 + 36


@dataclass(slots=True)
class DiceBook:
    """One table's dice: counts of the 36 ordered outcomes (index 6 (a - 1) + (b - 1)), invalid
    rolls, and the CUSUM statistics. Lazy CUSUMs keep (value at the last hit, throw index of it)."""

    throws: int = 0
    invalid: int = 0
    cells: list = field(default_factory=lambda: [0] * 36)
    seven_low: float = 0.0
    seven_high: float = 0.0
    faces: list = field(default_factory=lambda: [0.0] * 12)  # die1 faces 1..6, then die2
    faces_at: list = field(default_factory=lambda: [0] * 12)
    cell_sums: list = field(default_factory=lambda: [0.0] * 36)
    cell_at: list = field(default_factory=lambda: [0] * 36)
    since: int = 0  # throw index of the last alert (cells that moved are counted from it)
    cells_since: list = field(default_factory=lambda: [0] * 36)

    def to_record(self) -> list:
        return [self.throws, self.invalid, self.cells, self.seven_low, self.seven_high, self.faces,
                self.faces_at, self.cell_sums, self.cell_at, self.since, self.cells_since]

    @classmethod
    def from_record(cls, r: list) -> "DiceBook":
        return cls(*r)

    def statistics(self) -> dict[str, float]:
        """Every CUSUM as of the last throw (lazy runs applied), by name."""
        n = self.throws
        out = {"seven_low": self.seven_low, "seven_high": self.seven_high}
        for i in range(12):
            out[f"die{i // 6 + 1}_face_{i % 6 + 1}"] = max(0.0, self.faces[i] + (n - self.faces_at[i]) * _FACE[1])
        for i in range(36):
            out[f"cell_{i // 6 + 1}_{i % 6 + 1}"] = max(0.0, self.cell_sums[i] + (n - self.cell_at[i]) * _CELL[1])
        return out


class DiceWatch(msgspec.Struct, frozen=True):
    """Thresholds per family (the log-likelihood ratio a CUSUM must reach)."""

    seven_h: float = 11.0
    face_h: float = 14.5
    cell_h: float = 14.5

    def throw(self, book: DiceBook, die1: int, die2: int, valid: bool) -> list[str]:
        """Count one throw; returns the names of the CUSUMs that crossed their threshold (each is
        reset to 0 so that it can alarm again on a new excursion)."""
        if not valid:
            book.invalid += 1
            return []
        book.throws = n = book.throws + 1
        cell = 6 * die1 + die2 - 7
        book.cells[cell] += 1
        book.cells_since[cell] += 1
        crossed = []
        if die1 + die2 == 7:
            low = book.seven_low + _SEVEN_LOW[0]
            high = book.seven_high + _SEVEN_HIGH[0]
        else:
            low = book.seven_low + _SEVEN_LOW[1]
            high = book.seven_high + _SEVEN_HIGH[1]
        if low < 0.0:
            low = 0.0
        elif low >= self.seven_h:
            crossed.append("seven_low")
            low = 0.0
        if high < 0.0:
            high = 0.0
        elif high >= self.seven_h:
            crossed.append("seven_high")
            high = 0.0
        book.seven_low, book.seven_high = low, high
        # The lazy CUSUMs hit by this throw (die 1's face, die 2's face, the cell): the run of
        # misses since each one's last hit, clamped at 0 (exact for a monotone run), then the hit.
        faces, at = book.faces, book.faces_at
        face_hit, face_miss = _FACE
        face_h = self.face_h
        for i in (die1 - 1, die2 + 5):
            value = faces[i] + (n - 1 - at[i]) * face_miss
            value = (value if value > 0.0 else 0.0) + face_hit
            at[i] = n
            if value >= face_h:
                crossed.append(f"die{i // 6 + 1}_face_{i % 6 + 1}")
                value = 0.0
            faces[i] = value
        sums, at = book.cell_sums, book.cell_at
        value = sums[cell] + (n - 1 - at[cell]) * _CELL[1]
        value = (value if value > 0.0 else 0.0) + _CELL[0]
        at[cell] = n
        if value >= self.cell_h:
            crossed.append(f"cell_{die1}_{die2}")
            value = 0.0
        sums[cell] = value
        return crossed

    def largest_ratio(self, book: DiceBook) -> float:
        """The largest CUSUM as a fraction of its threshold (1 = alarm), for the floor's gauges."""
        s = book.statistics()
        ratio = max(s["seven_low"], s["seven_high"]) / self.seven_h
        for name, v in s.items():
            if name.startswith("die"):
                ratio = max(ratio, v / self.face_h)
            elif name.startswith("cell"):
                ratio = max(ratio, v / self.cell_h)
        return ratio


def moved_cells(book: DiceBook, count: int = 4) -> list[tuple[str, int, float, float]]:
    """The ordered outcomes furthest from 1/36 since the last alert: (cell "a-b", thrown, expected,
    standardised residual), largest |residual| first."""
    n = sum(book.cells_since)
    if not n:
        return []
    expected = n / 36
    sd = math.sqrt(n * (1 / 36) * (35 / 36))
    rows = [(f"{i // 6 + 1}-{i % 6 + 1}", c, expected, (c - expected) / sd) for i, c in enumerate(book.cells_since)]
    rows.sort(key=lambda r: -abs(r[3]))
    return rows[:count]


def describe(book: DiceBook, crossed: list[str]) -> str:
    """A readable account of a dice alert: what crossed, the sevens and faces, the cells that moved."""
    n = sum(book.cells_since)
    sevens = sum(book.cells_since[6 * (a - 1) + (6 - a)] for a in range(1, 7))
    faces1 = [sum(book.cells_since[6 * (a - 1) + b] for b in range(6)) for a in range(1, 7)]
    faces2 = [sum(book.cells_since[6 * a + (b - 1)] for a in range(6)) for b in range(1, 7)]
    cells = ", ".join(f"{name} {c} (expected {e:.1f}, {r:+.1f} sd)" for name, c, e, r in moved_cells(book))
    return (f"{', '.join(crossed)} crossed over {n} valid throws: sevens {sevens} (expected {n / 6:.1f}); "
            f"die 1 faces {faces1}, die 2 faces {faces2} (expected {n / 6:.1f} each); cells that moved: "
            f"{cells}; invalid rolls (§ 623a.8) {book.invalid}")
