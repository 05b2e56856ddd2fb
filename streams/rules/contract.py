"""The event contract: flat records (JSON Lines, Avro) to events and outputs back to records.

A record that cannot be an event (missing field, wrong type, unknown type) raises
`ContractError`; the shell turns it into a rejection with `malformed()`, so nothing is lost.
Rule breaks with a well-formed shape (a die of 9, a position of 17) are the core's to reject.
"""
from __future__ import annotations

from streams.rules.events import (
    INPUT_TYPES,
    NEW,
    OUTPUT_TYPES,
    EventRejected,
    TableOpened,
    WagerSettled,
    field_names,
)
from streams.rules.submission import RulesError, rules_from_record


class ContractError(ValueError):
    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


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


def record_to_event(record):
    """A contract record (a dict) to its event; raises ContractError when it cannot be one."""
    if type(record) is not dict:
        raise ContractError("malformed", "an event must be a JSON object")
    kind = record.get("type")
    spec = _FIELDS.get(kind) if type(kind) is str else None
    if spec is None:
        raise ContractError("unknown_event_type", f"event type {kind!r} is not one of {', '.join(_FIELDS)}")
    table_id, seq, ts = record.get("table_id"), record.get("seq"), record.get("ts")
    if not _is(_STR, table_id):
        raise ContractError("malformed", "table_id must be a non-empty string")
    if type(seq) is not int or seq < 1:
        raise ContractError("malformed", "seq must be a whole number >= 1")
    if type(ts) is not int or ts < 0:
        raise ContractError("malformed", "ts must be epoch milliseconds, a whole number >= 0")
    values = {}
    for name, (expected, required) in spec.items():
        if name not in record or (record[name] is None and not required):
            if required:
                raise ContractError("malformed", f"{kind} needs {name}")
            continue
        if not _is(expected, record[name]):
            raise ContractError("malformed", f"{kind}.{name} must be a {expected}, got {record[name]!r}")
        values[name] = record[name]
    extra = set(record) - set(spec) - {"type", "table_id", "seq", "ts"}
    if extra:
        raise ContractError("malformed", f"{kind} has unknown fields {sorted(extra)}")
    if kind == "TableOpened":
        if values["table_kind"] not in TABLE_KINDS:
            raise ContractError("unknown_table_kind", f"table_kind {values['table_kind']!r} is not one "
                                f"of {', '.join(TABLE_KINDS)}")
        try:
            rules = rules_from_record(values.get("rules"))
        except RulesError as e:
            raise ContractError("invalid_rules", f"rules: {e}") from None
        return TableOpened(table_id, seq, ts, values["table_kind"], rules, values.get("rules"))
    return NEW[INPUT_TYPES[kind]](table_id, seq, ts, **values)


def event_to_record(event) -> dict:
    record = {"type": type(event).__name__, "table_id": event.table_id, "seq": event.seq, "ts": event.ts}
    if type(event) is TableOpened:
        record["table_kind"] = event.table_kind
        if event.rules_record is not None:
            record["rules"] = event.rules_record
        return record
    for name in field_names(type(event))[3:]:
        record[name] = getattr(event, name)
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
        id=f"rejected/{source}", table_id=table_id if type(table_id) is str else "",
        seq=seq if type(seq) is int else 0, ts=ts if type(ts) is int else 0,
        reason=error.reason, message=error.message,
        event=record if type(record) is dict else {"raw": repr(record)[:1000]},
    )
