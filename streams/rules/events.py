"""What happens at a table (input) and what the engine says about it (output).

Inputs carry the table id, the per-table sequence number `seq` and the event time `ts` (epoch
milliseconds): the core has no clock of its own. Outputs carry a deterministic `id` derived from
their input (wager id, or table id and seq), so a re-processed input can never pay twice.

Every input ends with `key_id` and `tag`: the table controller's authentication tag over the
event's canonical bytes (`streams.authenticity`), checked before the core sees the event. The core
itself never reads them; they travel with the event so a held event or a rejection keeps them.
"""
from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only an annotation: the Rules Submission reads the wager kinds, which build events
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
    key_id: str | None = None
    tag: str | None = None


@dataclass(frozen=True, slots=True)
class ShooterChanged:
    table_id: str
    seq: int
    ts: int
    shooter_id: str
    position: int
    reason: str
    key_id: str | None = None
    tag: str | None = None


@dataclass(frozen=True, slots=True)
class DiceThrown:
    table_id: str
    seq: int
    ts: int
    die1: int
    die2: int
    valid: bool = True
    key_id: str | None = None
    tag: str | None = None


@dataclass(frozen=True, slots=True)
class WagerPlaced:
    table_id: str
    seq: int
    ts: int
    wager_id: str
    position: int
    wager: str
    amount_cents: int
    key_id: str | None = None
    tag: str | None = None


@dataclass(frozen=True, slots=True)
class WagerChangeRequested:
    table_id: str
    seq: int
    ts: int
    wager_id: str
    amount_cents: int
    key_id: str | None = None
    tag: str | None = None


@dataclass(frozen=True, slots=True)
class ComeBetsOnly:
    table_id: str
    seq: int
    ts: int
    active: bool
    key_id: str | None = None
    tag: str | None = None


@dataclass(frozen=True, slots=True)
class TableClosed:
    table_id: str
    seq: int
    ts: int
    key_id: str | None = None
    tag: str | None = None


# The authentication fields every input ends with (not judged by the rules).
TAG_FIELDS = ("key_id", "tag")

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


# ---------------------------------------------------------------- fast constructors


def _constructor(cls):
    """A function building a `cls` from its fields (positional or by name, defaults as in `cls`),
    about four times as fast as `cls(...)`, for the hot paths of the core and of replay.

    A frozen dataclass's `__init__` sets every field through `object.__setattr__` (its own
    `__setattr__` refuses); here the fields are stored on an instance of a plain twin class with
    the same slots (plain attribute stores), whose `__class__` then becomes `cls`. The result is
    an ordinary `cls` instance, equal, hashed, printed and pickled as one built by `cls(...)`."""
    names = tuple(cls.__slots__)
    if names != tuple(f.name for f in fields(cls)) or "__weakref__" in names:
        raise TypeError(f"{cls.__name__}: slots are not exactly its fields")
    twin = type(f"_{cls.__name__}Fields", (), {"__slots__": names})
    ns = {"_new_": object.__new__, "_twin_": twin, "_cls_": cls}
    params = []
    for f in fields(cls):
        if f.default is not MISSING:
            ns[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        else:
            params.append(f.name)
    body = "".join(f"    o_.{n} = {n}\n" for n in names)
    exec(f"def new({', '.join(params)}):\n    o_ = _new_(_twin_)\n{body}    o_.__class__ = _cls_\n"
         f"    return o_\n", ns)
    new = ns["new"]
    new.__name__ = new.__qualname__ = f"new_{cls.__name__}"
    new.__doc__ = f"Build a {cls.__name__} (as {cls.__name__}(...) does, faster)."
    return new


# kind -> fast constructor (see `_constructor`); same arguments as the class
NEW = {cls: _constructor(cls) for cls in (*INPUT_TYPES.values(), *OUTPUT_TYPES.values())}
new_wager_settled = NEW[WagerSettled]
new_marker_placed = NEW[MarkerPlaced]
new_marker_cleared = NEW[MarkerCleared]
