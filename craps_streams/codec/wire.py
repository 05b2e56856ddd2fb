"""Table events and outputs as Avro messages: single-object encoding, decoded to plain dicts.

Framing: the standard **Avro single-object encoding** (Avro spec, "Single-object encoding"):

    C3 01 | 8-byte CRC-64-AVRO fingerprint of the writer schema's Parsing Canonical Form (little
    endian) | the Avro binary encoding of the datum

Self-describing without a schema registry: the fingerprint names the writer schema, so a reader
knows which record it holds (decode_output dispatches on it) and, once a schema has evolved, which
old schema to resolve from (old versions live in ``craps_streams/schemas/history/``). Any standard Avro library
reads it (strip the 10-byte header, read the body with the schema). Should a Confluent schema
registry be introduced later, its framing (magic ``00`` + 4-byte id) cannot be mistaken for this
one (magic ``C3``).

Records are plain dicts, with the same field names as the JSON Lines wire:

* table events: ``{"table_id", "seq", "ts", "type", <kind fields>, ["key_id", "tag"]}``; on the Avro side the kind
  fields sit in the ``body`` union branch named after ``type``. A ``TableOpened``'s ``rules`` object
  travels as JSON text and comes back as the parsed object. Optional fields missing from a record are
  written with their schema default, so they decode present (``valid=True``, ``rules=None``);
  except the authentication fields ``key_id`` and ``tag`` (schema v2), which a record carries only
  when the event is tagged: null on the wire decodes absent, as in JSON Lines.
* outputs: ``{"type": "WagerSettled", ...}``; the ``type`` key is not on the wire, it is the schema.
  An ``EventRejected`` (the core's dataclass has ``event``, the schema ``event_json``) may carry
  either or both: ``event`` (any JSON value, the offending event) is written as compact sorted JSON
  text into ``event_json``; if both are given they must agree. Decoding gives both: ``event_json``
  as on the wire and ``event``, its parsed value (None when null or not JSON).

Encoding checks types (and int/long ranges) before writing, because fastavro would silently coerce
(1.5 -> 1, "yes" -> true); unknown fields are refused rather than dropped. Every failure, on encode
or decode, is a ``CodecError``.
"""
from __future__ import annotations

import json
import threading
from io import BytesIO

import fastavro
from fastavro import schemaless_reader, schemaless_writer

from craps_streams.codec.errors import CodecError
from craps_streams.codec.schemas import LoadedSchema, load_dir, load_history

MAGIC = b"\xc3\x01"
HEADER_LEN = 10
TABLE_EVENT = "TableEvent"
OUTPUT_KINDS = ("WagerSettled", "MarkerPlaced", "MarkerCleared", "SurveillanceAlerted", "EventRejected")
# Optional top-level fields left out of a decoded record when null (an untagged event).
ABSENT_WHEN_NULL = ("key_id", "tag")
# Fields carried as JSON text on the wire and as the parsed value in records.
JSON_FIELDS = {("TableOpened", "rules")}

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
_MISSING = object()
_BRANCH_FIELD = "__body_branch"


# ---------------------------------------------------------------- type checks built from schemas


def _is_int(v) -> bool:
    return (v.__class__ is int or (isinstance(v, int) and not isinstance(v, bool))) and _INT_MIN <= v <= _INT_MAX


def _is_long(v) -> bool:
    return (v.__class__ is int or (isinstance(v, int) and not isinstance(v, bool))) and _LONG_MIN <= v <= _LONG_MAX


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_PRIMITIVE_CHECKS = {
    "null": (lambda v: v is None, "null"),
    "boolean": (lambda v: v is True or v is False, "boolean"),
    "int": (_is_int, "int (32-bit)"),
    "long": (_is_long, "long (64-bit int)"),
    "float": (_is_number, "number"),
    "double": (_is_number, "number"),
    "bytes": (lambda v: isinstance(v, (bytes, bytearray)), "bytes"),
    "string": (lambda v: isinstance(v, str), "string"),
}


def _checker(t):
    """(check(value) -> bool, description) for a JSON Avro type."""
    if isinstance(t, str):
        if t in _PRIMITIVE_CHECKS:
            return _PRIMITIVE_CHECKS[t]
        return (lambda v: True), t  # a named type defined elsewhere: fastavro checks it
    if isinstance(t, list):
        subs = [_checker(x) for x in t]
        desc = " | ".join(d for _, d in subs)
        if len(subs) == 2 and t[0] == "null":
            inner = subs[1][0]
            return (lambda v: v is None or inner(v)), desc
        checks = tuple(c for c, _ in subs)
        return (lambda v: any(c(v) for c in checks)), desc
    kind = t["type"]
    if kind == "array":
        item, d = _checker(t["items"])
        return (lambda v: isinstance(v, (list, tuple)) and all(item(x) for x in v)), f"array of {d}"
    if kind == "map":
        val, d = _checker(t["values"])
        return (lambda v: isinstance(v, dict) and all(isinstance(k, str) and val(x) for k, x in v.items())), \
            f"map of {d}"
    if kind == "enum":
        symbols = frozenset(t["symbols"])
        return (lambda v: v in symbols), f"one of {sorted(symbols)}"
    if kind == "fixed":
        size = t["size"]
        return (lambda v: isinstance(v, (bytes, bytearray)) and len(v) == size), f"{size} bytes"
    if kind in ("record", "error"):
        return (lambda v: isinstance(v, dict)), f"record {t['name']}"
    return _checker(kind)  # {"type": "long", "logicalType": ...}


def _field_specs(record_schema: dict, kind: str) -> tuple:
    """((name, check, required, description), ...) of a record's fields."""
    specs = []
    for f in record_schema["fields"]:
        if (kind, f["name"]) in JSON_FIELDS:
            check, desc = (lambda v: True), "JSON value"
        else:
            check, desc = _checker(f["type"])
        specs.append((f["name"], check, "default" not in f, desc))
    return tuple(specs)


def _copy_checked(record: dict, specs: tuple, where: str, out: dict | None = None) -> int:
    """Check the fields of `specs` in record, copying them into `out` when given; the number
    present."""
    n = 0
    for name, check, required, desc in specs:
        v = record.get(name, _MISSING)
        if v is _MISSING:
            if required:
                raise CodecError(f"{where}: missing field {name!r}")
            continue
        if not check(v):
            raise CodecError(f"{where}.{name}: expected {desc}, got {v!r:.200}")
        if out is not None:
            out[name] = v
        n += 1
    return n


def _extra_fields(record: dict, known) -> list[str]:
    return sorted(str(k) for k in record if k not in known)


def _json_text(value, where: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise CodecError(f"{where}: not JSON-serializable: {e}") from e


def _parse_or_none(text):
    """The JSON value of an EventRejected's event_json; None when absent or not JSON."""
    if text.__class__ is not str:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


# ---------------------------------------------------------------- the codec


class AvroCodec:
    """Encoders/decoders bound to one set of loaded schemas (the module functions use the schemas
    of the repository's ``craps_streams/schemas/`` directory, plus ``craps_streams/schemas/history/`` as extra writer schemas).
    Immutable after construction, so it can be shared between threads; pass each thread's own
    BytesIO as ``buf`` to reuse a write buffer (the module functions keep one per thread)."""

    def __init__(self, schemas: dict[str, LoadedSchema], history: list[LoadedSchema] = ()):
        self.schemas = schemas
        try:
            event = schemas[TABLE_EVENT]
            outputs = {k: schemas[k] for k in OUTPUT_KINDS}
        except KeyError as e:
            raise CodecError(f"schema {e.args[0]} missing") from None
        self.event_schema = event
        self._event_parsed = event.parsed
        self._event_header = MAGIC + event.fingerprint

        top = {f["name"]: f for f in event.source["fields"]}
        if "body" not in top or "type" not in top:
            raise CodecError("TableEvent must have fields 'type' and 'body'")
        self._common = tuple(s for s in _field_specs(event.source, TABLE_EVENT) if s[0] not in ("type", "body"))
        self._common_names = frozenset(s[0] for s in self._common) | {"type"}
        ns = event.fullname.rpartition(".")[0]
        # kind -> (branch full name, field specs, known names)
        self.kinds: dict[str, tuple] = {}
        self._branch_kind: dict[str, str] = {}
        for branch in top["body"]["type"]:
            if not isinstance(branch, dict) or branch.get("type") != "record":
                continue
            kind = branch["name"].rpartition(".")[2]
            full = branch["name"] if "." in branch["name"] else f"{branch.get('namespace', ns)}.{kind}"
            specs = _field_specs(branch, kind)
            self.kinds[kind] = (full, specs, self._common_names | {s[0] for s in specs})
            self._branch_kind[full] = kind
            self._branch_kind[kind] = kind
        self._rules_kinds = frozenset(k for k, _ in JSON_FIELDS)
        self._flat = self._flat_writers(event)

        # outputs: kind -> (parsed, header, field specs, known names)
        self.outputs: dict[str, tuple] = {}
        for kind, s in outputs.items():
            specs = _field_specs(s.source, kind)
            self.outputs[kind] = (s.parsed, MAGIC + s.fingerprint, specs, frozenset(x[0] for x in specs) | {"type"})

        # fingerprint -> (kind, writer parsed, reader parsed or None when writer is current)
        self._readers: dict[bytes, tuple] = {}
        for s in schemas.values():
            self._readers[s.fingerprint] = (s.name, s.parsed, None)
        for old in history:
            self.register_writer_schema(old)

    @staticmethod
    def _flat_writers(event: LoadedSchema) -> dict:
        """kind -> a flat record schema whose binary encoding is byte for byte the TableEvent
        encoding of that kind (a kind missing here takes the general, nested-datum path).

        Avro encodes a record as its fields in order and a union as the branch index (a long)
        followed by the value, so TableEvent{table_id, seq, ts, type, body=branch i: {f1, f2}} is
        exactly record{table_id, seq, ts, type, <long defaulting to i>, f1, f2}. Writing a flat
        record straight from the caller's dict avoids building the nested datum and fastavro's union
        dispatch (about 1.5x faster); the tests check the bytes against the union encoding."""
        fields = event.source["fields"]
        at = next(i for i, f in enumerate(fields) if f["name"] == "body")
        before, after = fields[:at], fields[at + 1:]
        common = {f["name"] for f in before + after}
        flat: dict = {}
        for index, branch in enumerate(fields[at]["type"]):
            if not (isinstance(branch, dict) and branch.get("type") == "record"):
                continue  # null: unknown kinds take the general path
            kind, own = branch["name"].rpartition(".")[2], branch["fields"]
            if common & {f["name"] for f in own} or _BRANCH_FIELD in common:
                continue  # the slow path copes
            schema = {
                "type": "record", "name": f"Flat{kind}",
                "namespace": event.fullname.rpartition(".")[0] + ".flat",
                "fields": before + [{"name": _BRANCH_FIELD, "type": "long", "default": index}] + own + after,
            }
            try:
                flat[kind] = fastavro.parse_schema(schema, named_schemas={}, _force=True)
            except Exception:  # noqa: BLE001, S112 - e.g. a named type shared between branches:
                continue  # that kind takes the general path
        return flat

    def register_writer_schema(self, old: LoadedSchema) -> None:
        """Accept bytes written with an older version of one of the schemas (resolved to the
        current one by Avro schema resolution)."""
        if old.fingerprint in self._readers:
            return
        current = self.schemas.get(old.name)
        if current is None:
            raise CodecError(f"history schema {old.path}: no current schema named {old.name}")
        self._readers[old.fingerprint] = (old.name, old.parsed, current.parsed)

    # ------------------------------------------------------------ table events

    def event_datum(self, record: dict) -> dict:
        """The Avro-shaped datum of a flat table-event record (checked)."""
        if not isinstance(record, dict):
            raise CodecError(f"a table event must be a dict, got {type(record).__name__}")
        kind = record.get("type", _MISSING)
        if kind is _MISSING:
            raise CodecError("table event without 'type'")
        if not isinstance(kind, str):
            raise CodecError(f"table event 'type' must be a string, got {kind!r:.80}")
        datum = {"type": kind}
        n = _copy_checked(record, self._common, kind, datum) + 1
        entry = self.kinds.get(kind)
        if entry is None:
            if n != len(record):
                raise CodecError(f"unknown event type {kind!r} with fields "
                                 f"{_extra_fields(record, self._common_names)}: cannot be carried")
            datum["body"] = None
            return datum
        full, specs, known = entry
        body = {}
        n += _copy_checked(record, specs, kind, body)
        if n != len(record):
            raise CodecError(f"{kind}: unknown field(s) {_extra_fields(record, known)}")
        if kind in self._rules_kinds:
            for k, name in JSON_FIELDS:
                if k == kind and body.get(name) is not None:
                    body[name] = _json_text(body[name], f"{kind}.{name}")
        datum["body"] = (full, body)
        return datum

    def event_record(self, datum: dict) -> dict:
        """The flat record of a decoded Avro table-event datum."""
        kind = datum["type"]
        body = datum.pop("body")
        out = datum  # table_id, seq, ts, type (+ any later common field), then the kind's fields
        for name in ABSENT_WHEN_NULL:
            if name in out and out[name] is None:
                del out[name]
        if body is None:
            return out
        branch, fields = body
        branch_kind = self._branch_kind.get(branch)
        if branch_kind is None:
            branch_kind = branch.rpartition(".")[2]
        if branch_kind != kind:
            raise CodecError(f"event type {kind!r} does not match its body {branch!r}")
        out.update(fields)
        if kind in self._rules_kinds:
            self._parse_json_fields(out, kind)
        return out

    @staticmethod
    def _parse_json_fields(record: dict, kind: str) -> None:
        for k, name in JSON_FIELDS:
            if k == kind and record.get(name) is not None:
                try:
                    record[name] = json.loads(record[name])
                except (TypeError, ValueError, RecursionError) as e:
                    raise CodecError(f"{kind}.{name}: invalid JSON text: {e}") from e

    def encode_event(self, record: dict, buf: BytesIO | None = None) -> bytes:
        if record.__class__ is not dict and not isinstance(record, dict):
            raise CodecError(f"a table event must be a dict, got {type(record).__name__}")
        kind = record.get("type", _MISSING)
        flat = self._flat.get(kind) if kind.__class__ is str else None
        if flat is None:  # unknown kind, or a kind the flat path cannot carry: the general path
            return self._write(self._event_header, self._event_parsed, self.event_datum(record), buf)
        _, specs, known = self.kinds[kind]
        n = _copy_checked(record, self._common, kind) + _copy_checked(record, specs, kind) + 1
        if n != len(record):
            raise CodecError(f"{kind}: unknown field(s) {_extra_fields(record, known)}")
        if kind in self._rules_kinds:
            record = dict(record)
            for k, name in JSON_FIELDS:
                if k == kind and record.get(name) is not None:
                    record[name] = _json_text(record[name], f"{kind}.{name}")
        return self._write(self._event_header, flat, record, buf)

    def decode_event(self, data) -> dict:
        # fast path: bytes written with the current TableEvent schema (event_record, inlined)
        if data.__class__ is bytes and data.startswith(self._event_header):
            fo = BytesIO(data)
            fo.seek(HEADER_LEN)
            try:
                datum = schemaless_reader(fo, self._event_parsed, None, return_record_name=True)
            except Exception as e:
                raise CodecError(f"malformed TableEvent message: {type(e).__name__}: {e}") from e
            if fo.tell() != len(data):
                raise CodecError(f"malformed TableEvent message: {len(data) - fo.tell()} trailing bytes")
            body = datum.pop("body")
            if datum["tag"] is None:
                del datum["tag"]
            if datum["key_id"] is None:
                del datum["key_id"]
            if body is None:
                return datum
            branch, fields = body
            kind = datum["type"]
            if self._branch_kind.get(branch) != kind:
                raise CodecError(f"event type {kind!r} does not match its body {branch!r}")
            datum.update(fields)
            if kind in self._rules_kinds:
                self._parse_json_fields(datum, kind)
            return datum
        name, datum = self._read(data)
        if name != TABLE_EVENT:
            raise CodecError(f"not a table event: the bytes hold a {name}")
        try:
            return self.event_record(datum)
        except CodecError:
            raise
        except Exception as e:
            raise CodecError(f"malformed table event: {type(e).__name__}: {e}") from e

    # ------------------------------------------------------------ outputs

    def output_datum(self, record: dict) -> tuple[str, dict]:
        if not isinstance(record, dict):
            raise CodecError(f"an output must be a dict, got {type(record).__name__}")
        kind = record.get("type", _MISSING)
        entry = self.outputs.get(kind) if isinstance(kind, str) else None
        if entry is None:
            raise CodecError(f"unknown output type {kind!r:.80}; known: {list(self.outputs)}")
        _, _, specs, known = entry
        if kind == "EventRejected" and "event" in record:
            record = dict(record)
            event = record.pop("event")
            if "event_json" not in record:
                record["event_json"] = None if event is None else _json_text(event, "EventRejected.event")
            elif _parse_or_none(record["event_json"]) != event:
                raise CodecError("EventRejected: 'event' and 'event_json' disagree")
        n = _copy_checked(record, specs, kind) + 1
        if n != len(record):
            raise CodecError(f"{kind}: unknown field(s) {_extra_fields(record, known)}")
        return kind, record  # fastavro ignores the "type" key: not a field of the schema

    def encode_output(self, record: dict, buf: BytesIO | None = None) -> bytes:
        kind, datum = self.output_datum(record)
        parsed, header, _, _ = self.outputs[kind]
        return self._write(header, parsed, datum, buf)

    def decode_output(self, data) -> dict:
        name, datum = self._read(data)
        if name not in self.outputs:
            raise CodecError(f"not an output: the bytes hold a {name}")
        return self._output_record(name, datum)

    def decode(self, data) -> dict:
        """Either kind of message, by its fingerprint."""
        name, datum = self._read(data)
        if name == TABLE_EVENT:
            return self.event_record(datum)
        return self._output_record(name, datum)

    @staticmethod
    def _output_record(name: str, datum: dict) -> dict:
        record = {"type": name, **datum}
        if name == "EventRejected":
            record["event"] = _parse_or_none(record.get("event_json"))
        return record

    # ------------------------------------------------------------ framing

    @staticmethod
    def _write(header: bytes, parsed: dict, datum: dict, buf: BytesIO | None) -> bytes:
        if buf is None:
            buf = BytesIO()
        else:
            buf.seek(0)
            buf.truncate()
        buf.write(header)
        try:
            schemaless_writer(buf, parsed, datum)
        except Exception as e:
            raise CodecError(f"cannot encode {parsed.get('name')}: {type(e).__name__}: {e}") from e
        return buf.getvalue()

    def _read(self, data) -> tuple[str, dict]:
        if data.__class__ is not bytes:
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise CodecError(f"expected bytes, got {type(data).__name__}")
            data = bytes(data)
        if len(data) < HEADER_LEN:
            raise CodecError(f"truncated message: {len(data)} bytes, the header alone is {HEADER_LEN}")
        if data[:2] != MAGIC:
            raise CodecError(f"not an Avro single-object message: magic {data[:2].hex()} != c301")
        entry = self._readers.get(data[2:HEADER_LEN])
        if entry is None:
            raise CodecError(f"unknown writer schema fingerprint {data[2:HEADER_LEN].hex()}")
        name, writer, reader = entry
        fo = BytesIO(data)
        fo.seek(HEADER_LEN)
        try:
            datum = schemaless_reader(fo, writer, reader, return_record_name=True)
        except Exception as e:
            raise CodecError(f"malformed {name} message: {type(e).__name__}: {e}") from e
        if fo.tell() != len(data):
            raise CodecError(f"malformed {name} message: {len(data) - fo.tell()} trailing bytes")
        return name, datum


# ---------------------------------------------------------------- module-level default codec

_default: AvroCodec | None = None
_default_lock = threading.Lock()
_local = threading.local()


def default_codec() -> AvroCodec:
    """The codec of the package's schemas, loaded and parsed once."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = AvroCodec(load_dir(), load_history())
    return _default


def _buffer() -> BytesIO:
    try:
        return _local.buf
    except AttributeError:
        buf = _local.buf = BytesIO()
        return buf


def encode_event(record: dict) -> bytes:
    """A table-event record as an Avro single-object message."""
    return (_default or default_codec()).encode_event(record, _buffer())


def decode_event(data) -> dict:
    """The table-event record of an Avro single-object message; CodecError on anything else."""
    return (_default or default_codec()).decode_event(data)


def encode_output(record: dict) -> bytes:
    """An output record ({"type": "WagerSettled", ...}) as an Avro single-object message."""
    return (_default or default_codec()).encode_output(record, _buffer())


def decode_output(data) -> dict:
    """The output record (with its "type") of an Avro single-object message."""
    return (_default or default_codec()).decode_output(data)
