"""A table's hold book and the hold-anomaly alert (issue 4, hold versus theory).

For each wager kind and paytable of a table: handle, stakes collected and returned, amounts won,
outcomes, and the sum of squared stakes per decision, so that the house win can be set against its
expectation (handle x exact house edge) and its standard deviation (exact per-unit std dev x
sqrt(sum of squared stakes)). Wagers of one kind decided by one event saw the same dice, so they
are one outcome, not independent ones: their stakes are added before squaring (treating the players
at a table as independent understates the spread, and a fair floor would raise alerts). z = (house win - expected) / std dev. When z falls to -threshold or below (the
house losing more than the dice allow: dice control, a dealer error, a feed fault) a
`hold_anomaly` SurveillanceAlerted goes out once; it re-arms when z climbs back above -threshold.

The book is stored with the table's state in the same Kafka transaction as the settlements, so the
exported counters are exactly once too: a worker that takes a table over exports its whole history,
and the sum over live workers always equals the settlements topic, to the cent.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from streams.odds import wager_odds
from streams.rules import SurveillanceAlerted, WagerSettled
from streams.rules.hold import HoldLine as SettledHold

_COUNTS = ("settled", "wins", "losses", "pushes", "handle_cents", "stake_squares", "collected_cents",
           "returned_cents", "won_cents")


@dataclass(slots=True)
class HoldLine(SettledHold):
    """The settled hold of one wager kind and paytable (counts and cents booked by
    `streams.rules.hold.HoldLine.add`), with the theory beside it."""

    house_edge: float = 0.0  # exact, per unit staked, under the paytable and reading in force
    std_dev_per_unit: float = 0.0
    stake_squares: int = 0  # sum over decisions of (stakes decided together)^2, cents^2
    alerted: bool = False  # below -threshold since the last alert

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

    def to_record(self) -> dict:
        return {f"{w}|{p}": line.to_record() for (w, p), line in sorted(self.lines.items())}

    @classmethod
    def from_record(cls, r: dict) -> "HoldBook":
        return cls({tuple(k.split("|", 1)): HoldLine.from_record(v) for k, v in r.items()})


@dataclass(frozen=True, slots=True)
class HoldWatch:
    """The casino's alert setting: z at or below -threshold, once at least `min_settled` wagers of
    the kind are settled on the table (a handful of wagers says nothing about the dice)."""

    threshold: float = 4.0
    min_settled: int = 30

    @classmethod
    def from_settings(cls, settings: dict) -> "HoldWatch":
        """From the casino's settings (the worker and replay pass their environment), e.g.
        CRAPS_HOLD_Z_ALERT=4 and CRAPS_HOLD_MIN_SETTLED=30; both must agree for replay to match."""
        return cls(float(settings.get("CRAPS_HOLD_Z_ALERT", 4.0)),
                   int(settings.get("CRAPS_HOLD_MIN_SETTLED", 30)))

    def watch(self, book: HoldBook, state, outputs) -> list:
        """Book the settlements among `outputs`; returns the hold_anomaly alerts they raise."""
        lines = book.lines
        decisions: dict[tuple, int] = {}  # (wager, paytable, deciding seq) -> stakes decided together
        last: dict[tuple, WagerSettled] = {}
        for s in outputs:
            if type(s) is not WagerSettled:
                continue
            key = (s.wager, s.paytable)
            line = lines.get(key)
            if line is None:
                odds = wager_odds(s.wager, state.rules)
                line = lines[key] = HoldLine(house_edge=float(odds.house_edge), std_dev_per_unit=odds.std_dev)
            line.add(s)
            decision = (s.wager, s.paytable, s.seq)
            decisions[decision] = decisions.get(decision, 0) + s.stake_cents
            last[key] = s
        for (wager, paytable, _), stakes in decisions.items():
            lines[(wager, paytable)].stake_squares += stakes * stakes
        alerts = []
        for key, s in last.items():
            line = lines[key]
            z = line.z_score
            if z > -self.threshold:
                line.alerted = False
            elif not line.alerted and line.settled >= self.min_settled:
                line.alerted = True
                alerts.append(SurveillanceAlerted(
                    f"{s.table_id}/{s.seq}/hold_anomaly/{s.wager}/{s.paytable}", s.table_id, s.seq, s.ts,
                    "hold_anomaly", state.shooter_id or "",
                    f"table {s.table_id} {s.wager} ({s.paytable}): house win {line.house_win_cents} cents "
                    f"against {line.expected_house_win_cents:.0f} expected on a handle of "
                    f"{line.handle_cents} cents over {line.settled} wagers, z = {z:.2f} "
                    f"(alert at -{self.threshold:g})", (s.wager_id,)))
        return alerts
