"""What happens at a table (input) and what the engine says about it (output).

Inputs carry the table id, the per-table sequence number `seq` and the event time `ts` (epoch
milliseconds): the core has no clock of its own. Outputs carry a deterministic `id` derived from
their input (wager id, or table id and seq), so a re-processed input can never pay twice.
"""
from __future__ import annotations

from dataclasses import dataclass

from streams.rules.submission import RulesSubmission

TABLE_KINDS = ("live", "hybrid", "fully_automated")
SHOOTER_CHANGE_REASONS = ("table_open", "seven_out", "voluntary", "compulsory")


# ---------------------------------------------------------------- inputs


@dataclass(frozen=True, slots=True)
class TableOpened:
    table_id: str
    seq: int
    ts: int
    table_kind: str
    rules: RulesSubmission
    # The rules object as it was sent, kept for the record and for re-encoding.
    rules_record: dict | None = None


@dataclass(frozen=True, slots=True)
class ShooterChanged:
    table_id: str
    seq: int
    ts: int
    shooter_id: str
    position: int
    reason: str


@dataclass(frozen=True, slots=True)
class DiceThrown:
    table_id: str
    seq: int
    ts: int
    die1: int
    die2: int
    valid: bool = True


@dataclass(frozen=True, slots=True)
class WagerPlaced:
    table_id: str
    seq: int
    ts: int
    wager_id: str
    position: int
    wager: str
    amount_cents: int


@dataclass(frozen=True, slots=True)
class WagerChangeRequested:
    table_id: str
    seq: int
    ts: int
    wager_id: str
    amount_cents: int


@dataclass(frozen=True, slots=True)
class ComeBetsOnly:
    table_id: str
    seq: int
    ts: int
    active: bool


@dataclass(frozen=True, slots=True)
class TableClosed:
    table_id: str
    seq: int
    ts: int


TableEvent = (TableOpened | ShooterChanged | DiceThrown | WagerPlaced | WagerChangeRequested
              | ComeBetsOnly | TableClosed)
INPUT_TYPES = {cls.__name__: cls for cls in (TableOpened, ShooterChanged, DiceThrown, WagerPlaced,
                                             WagerChangeRequested, ComeBetsOnly, TableClosed)}


# ---------------------------------------------------------------- outputs


@dataclass(frozen=True, slots=True)
class WagerSettled:
    wager_id: str
    table_id: str
    position: int
    wager: str
    outcome: str  # win | lose | push
    stake_cents: int
    won_cents: int  # 0 unless win
    paytable: str
    detail: str  # the count that decided it: "points=4", "numbers=3", "throws=17", ...
    seq: int  # of the deciding event
    ts: int
    placed_seq: int

    @property
    def id(self) -> str:
        # Table, deciding seq and wager: re-processing the same input yields the same id, so a
        # consumer that dedupes on it can never pay twice.
        return f"{self.table_id}/{self.seq}/settle/{self.wager_id}"


@dataclass(frozen=True, slots=True)
class MarkerPlaced:
    """A marker the dealer (or the electronic layout) must show (§ 623a.11(a)(4), § 623a.12(3),
    § 623c.1(d),(f)). `cohort` names the group of wagers whose layout it is on."""

    id: str
    table_id: str
    seq: int
    ts: int
    layout: str  # fire | bonus_craps | hot_roller
    cohort: str
    marker: str  # "point-6", "total-11", "combo-1-3", "number-4"
    count: int  # Fire: distinct points so far; others: markers on the cohort's layout so far


@dataclass(frozen=True, slots=True)
class MarkerCleared:
    id: str
    table_id: str
    seq: int
    ts: int
    layout: str
    cohort: str
    reason: str  # seven | seven_out | settled | table_closed | surrendered


@dataclass(frozen=True, slots=True)
class SurveillanceAlerted:
    id: str
    table_id: str
    seq: int
    ts: int
    alert: str  # fire_bet_four_points | large_win
    shooter_id: str
    message: str
    wager_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EventRejected:
    id: str
    table_id: str
    seq: int
    ts: int
    reason: str  # a stable code, e.g. out_of_window, stake_out_of_limits
    message: str  # readable, with the section that forbids it
    event: dict  # the offending event as received


TableOutput = WagerSettled | MarkerPlaced | MarkerCleared | SurveillanceAlerted | EventRejected
OUTPUT_TYPES = {cls.__name__: cls for cls in (WagerSettled, MarkerPlaced, MarkerCleared,
                                              SurveillanceAlerted, EventRejected)}
