"""What happens at a table (input) and what the engine says about it (output).

Inputs carry the table id, the per-table sequence number `seq` and the event time `ts` (epoch
milliseconds): the core has no clock of its own. Outputs carry a deterministic `id` derived from
their input (wager id, or table id and seq), so a re-processed input can never pay twice.

Events are frozen msgspec Structs (the README argues the core's one import outside the
standard library): immutable, equal, hashed and pickled by value like the frozen dataclasses they
were, built about five times as fast (one C call), and msgspec decodes a JSON line straight into
one, checking the contract's types as it parses (`craps_streams.replay.jsonread`): the annotations of the
inputs below are the contract's types (a non-empty string, seq >= 1, ts >= 0; a str never an int,
an int never a bool). `craps_streams.rules.contract.record_to_event` remains the contract's full check
and the wording of every rejection; the tests hold the two to the same yes.

Every input ends with `key_id` and `tag`: the table controller's authentication tag over the
event's canonical bytes (`craps_streams.authenticity`), checked before the core sees the event. The core
itself never reads them; they travel with the event so a held event or a rejection keeps them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import msgspec

if TYPE_CHECKING:  # only an annotation: the Rules Submission reads the wager kinds, which build events
    from craps_streams.rules.submission import RulesSubmission

TABLE_KINDS = ("live", "hybrid", "fully_automated")
SHOOTER_CHANGE_REASONS = ("table_open", "seven_out", "voluntary", "compulsory")

# The contract's types and limits (craps_streams/rules/contract.py: ID_PATTERN, MAX_TEXT, MAX_TAG_FIELD,
# 64-bit longs), as msgspec checks them when it decodes a JSON line into an event.
_LONG = {"ge": -(1 << 63), "le": (1 << 63) - 1}
# A table, wager or shooter id: 1 to 32 characters; which characters (ID_PATTERN) the JSON Lines
# reader checks after decoding (`craps_streams.replay.jsonread`): a pattern here made msgspec run a
# regular expression per id, about half a microsecond each, half of a line's decoding.
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=32)]
Text = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]  # any other string
Long = Annotated[int, msgspec.Meta(**_LONG)]
Seq = Annotated[int, msgspec.Meta(ge=1, le=_LONG["le"])]
EventTime = Annotated[int, msgspec.Meta(ge=0, le=_LONG["le"])]  # epoch ms
TagField = Annotated[str, msgspec.Meta(max_length=128)]


class _Input(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag=True, forbid_unknown_fields=True):
    """An input event: `type` (the class name) tags it in JSON; no field beyond the contract's.
    gc=False: events hold strings, numbers and (TableOpened) the rules, never a cycle."""


class _Output(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag=True):
    """An output event: `type` (the class name) tags it when msgspec encodes it (replay's lines)."""


# ---------------------------------------------------------------- inputs


class TableOpened(_Input):
    table_id: Id
    seq: Seq
    ts: EventTime
    table_kind: Text
    rules: RulesSubmission
    # The rules object as it was sent, kept for the record and for re-encoding.
    rules_record: dict | None = None
    key_id: TagField | None = None
    tag: TagField | None = None


class ShooterChanged(_Input):
    table_id: Id
    seq: Seq
    ts: EventTime
    shooter_id: Id
    position: Long
    reason: Text
    key_id: TagField | None = None
    tag: TagField | None = None


class DiceThrown(_Input):
    table_id: Id
    seq: Seq
    ts: EventTime
    die1: Long
    die2: Long
    valid: bool = True
    key_id: TagField | None = None
    tag: TagField | None = None


class WagerPlaced(_Input):
    table_id: Id
    seq: Seq
    ts: EventTime
    wager_id: Id
    position: Long
    wager: Text
    amount_cents: Long
    key_id: TagField | None = None
    tag: TagField | None = None


class WagerChangeRequested(_Input):
    table_id: Id
    seq: Seq
    ts: EventTime
    wager_id: Id
    amount_cents: Long
    key_id: TagField | None = None
    tag: TagField | None = None


class ComeBetsOnly(_Input):
    table_id: Id
    seq: Seq
    ts: EventTime
    active: bool
    key_id: TagField | None = None
    tag: TagField | None = None


class TableClosed(_Input):
    table_id: Id
    seq: Seq
    ts: EventTime
    key_id: TagField | None = None
    tag: TagField | None = None


# The authentication fields every input ends with (not judged by the rules).
TAG_FIELDS = ("key_id", "tag")

TableEvent = (TableOpened | ShooterChanged | DiceThrown | WagerPlaced | WagerChangeRequested
              | ComeBetsOnly | TableClosed)
INPUT_TYPES = {cls.__name__: cls for cls in (TableOpened, ShooterChanged, DiceThrown, WagerPlaced,
                                             WagerChangeRequested, ComeBetsOnly, TableClosed)}


# ---------------------------------------------------------------- outputs


class WagerSettled(_Output):
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
    # `settlement_id(table_id, seq, wager_id)`: table, deciding seq and wager, so re-processing the
    # same input yields the same id and a consumer that dedupes on it can never pay twice. A field
    # (not a property, as it was) so msgspec writes it with the others (replay's lines).
    id: str


def settlement_id(table_id: str, seq: int, wager_id: str) -> str:
    return f"{table_id}/{seq}/settle/{wager_id}"


class MarkerPlaced(_Output):
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


class MarkerCleared(_Output):
    id: str
    table_id: str
    seq: int
    ts: int
    layout: str
    cohort: str
    reason: str  # seven | seven_out | settled | table_closed | surrendered


class SurveillanceAlerted(_Output):
    id: str
    table_id: str
    seq: int
    ts: int
    alert: str  # fire_bet_four_points | large_win
    shooter_id: str
    message: str
    wager_ids: tuple[str, ...]


class EventRejected(_Output):
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


# ---------------------------------------------------------------- construction


def field_names(cls) -> tuple[str, ...]:
    """The fields of an event class, in order (its constructor's positional arguments)."""
    return cls.__struct_fields__


# kind -> constructor. A Struct's own constructor is the fast one (the frozen dataclasses these
# were needed a generated one); kept as names.
NEW = {cls: cls for cls in (*INPUT_TYPES.values(), *OUTPUT_TYPES.values())}
new_wager_settled = WagerSettled
new_marker_placed = MarkerPlaced
new_marker_cleared = MarkerCleared
