"""The event contract: flat records (JSON Lines, Avro) to events and outputs back to records.

A record that cannot be an event (missing field, wrong type, unknown type) raises
`ContractError`; the shell turns it into a rejection with `malformed()`, so nothing is lost.
Rule breaks with a well-formed shape (a die of 9, a position of 17) are the core's to reject.

Input limits (hostile input is input too): ids (`table_id`, `wager_id`, `shooter_id`) match
`ID_PATTERN`, 1 to 32 of `A-Z a-z 0-9 _ . -`, so no markup, quote, space, control character or
non-ASCII byte ever reaches a page, a log or a Kafka key (`invalid_id`); every other string field
is at most `MAX_TEXT` characters and the rules object at most `MAX_RULES_JSON` characters of JSON
(`field_too_long`); seq and ts fit Avro's long. The authentication fields (`key_id`, `tag`) are
strings of at most `MAX_TAG_FIELD` characters here; whether they authenticate the event is
`craps_streams.authenticity`'s question, asked before the core's.
"""
from __future__ import annotations

import json
import re

from craps_streams.rules.events import (
    INPUT_TYPES,
    TAG_FIELDS,
    NEW,
    OUTPUT_TYPES,
    EventRejected,
    TableOpened,
    WagerSettled,
    field_names,
)
from craps_streams.rules.submission import RulesError, rules_from_record


class ContractError(ValueError):
    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


# The id format (documented in the README's event contract): a table, wager or shooter id.
ID_PATTERN = r"[A-Za-z0-9_.-]{1,32}"
_ID = re.compile(ID_PATTERN)
ID_FIELDS = ("table_id", "wager_id", "shooter_id")
MAX_TEXT = 64  # any other string field: type, table_kind, reason, wager
MAX_RULES_JSON = 4096  # a TableOpened's rules object, as compact JSON
MAX_TAG_FIELD = 128  # key_id, tag (a tag is 43 characters, a key id at most 64)
_LONG_MAX = (1 << 63) - 1

_STR, _INT, _BOOL = "string", "integer", "boolean"
# Per type: field -> (expected kind, required)
_FIELDS = {
    "TableOpened": {"table_kind": (_STR, True), "rules": ("object", False)},
    "ShooterChanged": {"shooter_id": (_STR, True), "position": (_INT, True), "reason": (_STR, True)},
    "DiceThrown": {"die1": (_INT, True), "die2": (_INT, True), "valid": (_BOOL, False)},
    "WagerPlaced": {"wager_id": (_STR, True), "position": (_INT, True), "wager": (_STR, True),
                    "amount_cents": (_INT, True)},
    "WagerChangeRequested": {"wager_id": (_STR, True), "amount_cents": (_INT, True)},
    "ComeBetsOnly": {"active": (_BOOL, True)},
    "TableClosed": {},
}
TABLE_KINDS = ("live", "hybrid", "fully_automated")


def _is(kind: str, value) -> bool:
    if kind == _STR:
        return type(value) is str and value != ""
    if kind == _INT:
        return type(value) is int
    if kind == _BOOL:
        return type(value) is bool
    return value is None or type(value) is dict


def valid_id(value) -> bool:
    """Whether `value` is an id of the contract's format (`ID_PATTERN`)."""
    return type(value) is str and _ID.fullmatch(value) is not None


def _check_id(kind: str, name: str, value) -> None:
    if not valid_id(value):
        shown = repr(value)[:80] if type(value) is str else type(value).__name__
        raise ContractError("invalid_id", f"{kind}.{name} must be 1 to 32 of A-Z a-z 0-9 _ . - "
                            f"(got {shown}{'...' if type(value) is str and len(repr(value)) > 80 else ''}, "
                            f"{len(value) if type(value) is str else 0} characters)")


def record_to_event(record):
    """A contract record (a dict) to its event; raises ContractError when it cannot be one."""
    if type(record) is not dict:
        raise ContractError("malformed", "an event must be a JSON object")
    kind = record.get("type")
    spec = _FIELDS.get(kind) if type(kind) is str else None
    if spec is None:
        raise ContractError("unknown_event_type", f"event type {repr(kind)[:80]} is not one of {', '.join(_FIELDS)}")
    table_id, seq, ts = record.get("table_id"), record.get("seq"), record.get("ts")
    if not _is(_STR, table_id):
        raise ContractError("malformed", "table_id must be a non-empty string")
    _check_id(kind, "table_id", table_id)
    if type(seq) is not int or not 1 <= seq <= _LONG_MAX:
        raise ContractError("malformed", "seq must be a whole number >= 1 (a 64-bit long)")
    if type(ts) is not int or not 0 <= ts <= _LONG_MAX:
        raise ContractError("malformed", "ts must be epoch milliseconds, a whole number >= 0 (a 64-bit long)")
    values = {}
    for name, (expected, required) in spec.items():
        if name not in record or (record[name] is None and not required):
            if required:
                raise ContractError("malformed", f"{kind} needs {name}")
            continue
        value = record[name]
        if not _is(expected, value):
            raise ContractError("malformed", f"{kind}.{name} must be a {expected}, got {repr(value)[:200]}")
        if expected == _STR:
            if name in ID_FIELDS:
                _check_id(kind, name, value)
            elif len(value) > MAX_TEXT:
                raise ContractError("field_too_long", f"{kind}.{name}: {len(value)} characters, at most {MAX_TEXT}")
        elif expected == _INT and not -_LONG_MAX - 1 <= value <= _LONG_MAX:
            raise ContractError("malformed", f"{kind}.{name} must fit a 64-bit long")
        values[name] = value
    for name in TAG_FIELDS:
        value = record.get(name)
        if value is None:
            continue
        if type(value) is not str:
            raise ContractError("malformed", f"{kind}.{name} must be a string, got {type(value).__name__}")
        if len(value) > MAX_TAG_FIELD:
            raise ContractError("field_too_long", f"{kind}.{name}: {len(value)} characters, at most {MAX_TAG_FIELD}")
        values[name] = value
    extra = set(record) - set(spec) - {"type", "table_id", "seq", "ts", *TAG_FIELDS}
    if extra:
        raise ContractError("malformed", f"{kind} has unknown fields {sorted(extra)}")
    if kind == "TableOpened":
        if values["table_kind"] not in TABLE_KINDS:
            raise ContractError("unknown_table_kind", f"table_kind {values['table_kind']!r} is not one "
                                f"of {', '.join(TABLE_KINDS)}")
        if values.get("rules") is not None:
            try:
                size = len(json.dumps(values["rules"], separators=(",", ":"), allow_nan=False))
            except (TypeError, ValueError, RecursionError):
                raise ContractError("invalid_rules", "rules: not a JSON object") from None
            if size > MAX_RULES_JSON:
                raise ContractError("field_too_long", f"TableOpened.rules: {size} characters of JSON, "
                                    f"at most {MAX_RULES_JSON}")
        try:
            rules = rules_from_record(values.get("rules"))
        except RulesError as e:
            raise ContractError("invalid_rules", f"rules: {e}") from None
        return TableOpened(table_id, seq, ts, values["table_kind"], rules, values.get("rules"),
                           values.get("key_id"), values.get("tag"))
    return NEW[INPUT_TYPES[kind]](table_id, seq, ts, **values)


_OWN_FIELDS = {cls: tuple(name for name in field_names(cls)[3:] if name not in TAG_FIELDS)
               for cls in INPUT_TYPES.values()}


def event_to_record(event) -> dict:
    """The contract record of an event; its key_id and tag only when it carries them."""
    record = {"type": type(event).__name__, "table_id": event.table_id, "seq": event.seq, "ts": event.ts}
    if type(event) is TableOpened:
        record["table_kind"] = event.table_kind
        if event.rules_record is not None:
            record["rules"] = event.rules_record
    else:
        for name in _OWN_FIELDS[type(event)]:
            record[name] = getattr(event, name)
    if event.key_id is not None:
        record["key_id"] = event.key_id
    if event.tag is not None:
        record["tag"] = event.tag
    return record


_OUTPUT_FIELDS = {cls: field_names(cls) for cls in OUTPUT_TYPES.values()}


def output_to_record(output) -> dict:
    record = {"type": type(output).__name__}
    names = _OUTPUT_FIELDS.get(type(output))
    for name in (names if names is not None else field_names(type(output))):
        value = getattr(output, name)
        record[name] = list(value) if type(value) is tuple else value
    return record


def record_to_output(record: dict):
    cls = OUTPUT_TYPES[record["type"]]
    values = {name: record[name] for name in field_names(cls)}
    if "wager_ids" in values:
        values["wager_ids"] = tuple(values["wager_ids"])
    return cls(**values)


def malformed(record, error: ContractError, source: str) -> EventRejected:
    """The rejection of an input that is not an event; `source` says where it came from (file and
    line, or topic, partition and offset) and makes the id deterministic."""
    table_id = record.get("table_id") if type(record) is dict else None
    seq = record.get("seq") if type(record) is dict else None
    ts = record.get("ts") if type(record) is dict else None
    return EventRejected(
        # A table id that breaks the id format is not repeated outside the raw event.
        id=f"rejected/{source}", table_id=table_id if valid_id(table_id) else "",
        seq=seq if type(seq) is int else 0, ts=ts if type(ts) is int else 0,
        reason=error.reason, message=error.message,
        event=record if type(record) is dict else {"raw": repr(record)[:1000]},
    )
