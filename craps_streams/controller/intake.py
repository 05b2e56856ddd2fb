"""What the controller does to an event between the table's equipment and the journal: check it
against the contract, give it its table's next seq and a stamp, sign it, encode it.

The equipment sends an event without `seq`, `ts`, `key_id` and `tag`: those are the controller's
to give. An event that carries any of them, names a table this controller does not serve, or that
the contract refuses (`record_to_event`, the worker's own check) is refused with the reason, at
once, and gets no seq: a refused event leaves no gap in the table's numbering. Pure: the seq, the
stamp and the signer are parameters.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from craps_streams.codec import CodecError, encode_event
from craps_streams.rules.contract import ContractError, event_to_record, record_to_event

CONTROLLER_FIELDS = ("seq", "ts", "key_id", "tag")
# The equipment's own id for an entry, beside the event's fields: a retry after a lost answer (the
# controller died or the network dropped before the answer arrived) gets the seq the entry already
# has instead of a second event. Not part of the event: it is journaled, never sent.
REQUEST_ID = "request_id"


_REQUEST_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


class Refused(ValueError):
    """The event is refused at the table: `reason` (a word) and `message` (for the dealer)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True, slots=True)
class Admitted:
    """An event as journaled and sent: the signed event, its Kafka key and its Avro value."""
    event: object
    key: bytes
    value: bytes


def request_of(record) -> tuple[object, str | None]:
    """(the event's record, its request id or None): the request id taken out of the record;
    Refused when it is not an id (1 to 64 of A-Z a-z 0-9 _ . - :)."""
    if type(record) is not dict or REQUEST_ID not in record:
        return record, None
    rid = record[REQUEST_ID]
    if type(rid) is not str or not _REQUEST_ID.fullmatch(rid):
        raise Refused("invalid_id", f"request_id must be 1 to 64 of A-Z a-z 0-9 _ . - : (got "
                      f"{repr(rid)[:80] if type(rid) is str else type(rid).__name__})")
    return {k: v for k, v in record.items() if k != REQUEST_ID}, rid


def check(record, tables: frozenset) -> str:
    """The table id of an event the controller may take; Refused otherwise (no seq is used)."""
    if type(record) is not dict:
        raise Refused("malformed", "an event must be a JSON object")
    given = [f for f in CONTROLLER_FIELDS if f in record]
    if given:
        raise Refused("controller_field", f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} given by the "
                      "controller: send the event without seq, ts, key_id and tag")
    try:
        event = record_to_event({**record, "seq": 1, "ts": 0})
    except ContractError as e:
        raise Refused(e.reason, e.message) from None
    if event.table_id not in tables:
        raise Refused("unknown_table", f"table {event.table_id} is not served by this controller "
                      f"(it serves {', '.join(sorted(tables)[:10])}{' ...' if len(tables) > 10 else ''})")
    canonical = event_to_record(event)
    extra = sorted(k for k in record if k not in canonical and record[k] is not None)
    if extra:
        shown = ", ".join(repr(k)[:40] for k in extra[:5])
        raise Refused("malformed", f"{type(event).__name__} has no field {shown}")
    return event.table_id


def admit(record: dict, seq: int, ts: int, signer) -> Admitted:
    """The event of a checked record (`check`) with its seq and stamp, signed by `signer` (a
    TableSigner: the key its table signs with at `ts`), encoded as the worker reads it.
    Refused when no key may sign for the table at `ts`, or the codec refuses the record."""
    try:
        event = record_to_event({**record, "seq": seq, "ts": ts})
    except ContractError as e:
        raise Refused(e.reason, e.message) from None
    try:
        event = signer.sign(event)
    except LookupError as e:
        raise Refused("no_key", f"{e}: the controller's key file has no key for it (craps-streams keys)") from None
    try:
        value = encode_event(event_to_record(event))
    except CodecError as e:
        raise Refused("malformed", str(e)[:300]) from None
    return Admitted(event, event.table_id.encode("ascii"), value)
