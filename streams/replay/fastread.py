"""Read archive container files straight into the core's events: the fast path of archive replays.

`read_container` + `record_to_event` builds a flat dict per record and then checks it field by
field against the contract. For container files written with the current TableEvent schema, Avro
has already checked most of that: every field is present with its type (strings are str, ints int,
booleans bool, no nulls outside TableOpened.rules). What is left of the contract is cheap (non-empty
strings, seq >= 1, ts >= 0), so a record passing those checks becomes its event directly. Anything
else (a TableOpened, with its rules to parse; a record failing a check; a file of an older schema)
comes out as the flat record, and the caller takes the ordinary path (`record_to_event`), which
rejects it exactly as a JSON Lines replay or the worker would. The events are equal either way.
"""
from __future__ import annotations

from dataclasses import fields
from operator import itemgetter
from typing import Iterator

import fastavro
from fastavro.schema import to_parsing_canonical_form

from streams.codec import CodecError, default_codec, read_container
from streams.codec.container import datums, record_of
from streams.codec.schemas import fingerprint64
from streams.rules.events import INPUT_TYPES, TableOpened

EVENT_TYPES = frozenset(INPUT_TYPES.values())


def _plan(codec) -> dict:
    """kind -> (event class, field names in body order, names of the string fields), for the kinds
    whose Avro body fields are exactly the event's own fields, all non-null primitives."""
    plan = {}
    body = next(f for f in codec.event_schema.source["fields"] if f["name"] == "body")
    for branch in body["type"]:
        if not isinstance(branch, dict):
            continue
        kind = branch["name"].rpartition(".")[2]
        cls = INPUT_TYPES.get(kind)
        if cls is None or cls is TableOpened:
            continue
        own = [f.name for f in fields(cls)][3:]
        avro = [(f["name"], f["type"]) for f in branch["fields"]]
        if [n for n, _ in avro] != own or any(t not in ("string", "int", "long", "boolean") for _, t in avro):
            continue
        if len(own) == 0:
            get = _no_fields
        elif len(own) == 1:
            get = (lambda name: lambda v: (v[name],))(own[0])
        else:
            get = itemgetter(*own)
        entry = (kind, cls, get, tuple(n for n, t in avro if t == "string"))
        plan[kind] = entry
        full = codec.kinds.get(kind, (None,))[0]
        if full:
            plan[full] = entry  # fastavro names union branches by their full name
    return plan


_PLAN = None


def _no_fields(values) -> tuple:
    return ()


def read_events(path, where_of=None) -> Iterator[object]:
    """Each record of a TableEvent container as its core event when the fast path applies, else as
    the flat record (dict). Same order and count as `read_container`.

    With `where_of` (record number from 0 -> its source), yields `(item, where)` pairs instead, the
    where None for core events (only what may be rejected needs a source)."""
    global _PLAN
    codec = default_codec()
    if _PLAN is None:
        _PLAN = _plan(codec)
    plan = _PLAN
    with open(path, "rb") as fo:
        try:
            reader = fastavro.reader(fo, return_record_name=True)
            current = fingerprint64(to_parsing_canonical_form(reader.writer_schema)) == codec.event_schema.fingerprint
        except Exception as e:
            raise CodecError(f"not a readable Avro container: {type(e).__name__}: {e}") from e
        if not current:
            fo.seek(0)
            for n, record in enumerate(read_container(fo)):
                yield record if where_of is None else (record, where_of(n))
            return
        pairs = where_of is not None
        for n, datum in enumerate(datums(reader)):
            body = datum["body"]
            if body is not None:
                p = plan.get(body[0])
                if p is not None and p[0] == datum["type"]:
                    table_id, seq, ts = datum["table_id"], datum["seq"], datum["ts"]
                    values = body[1]
                    ok = table_id and seq >= 1 and ts >= 0
                    if ok:
                        for name in p[3]:
                            if not values[name]:
                                ok = False
                                break
                    if ok:
                        event = p[1](table_id, seq, ts, *p[2](values))
                        yield (event, None) if pairs else event
                        continue
            record = record_of(codec, datum, n + 1)
            yield (record, where_of(n)) if pairs else record
