"""The core's outputs written straight to their Avro messages: the fast path of the worker's produce.

The plain path, `encode_output(output_to_record(o))`, makes a dict of the output Struct, checks
every field of it against the schema again (`AvroCodec.output_datum`) and writes it with
fastavro's generic writer: about 13 µs an output, the largest stage of the worker's loop. An
output the core built already holds the schema's types, so `output_writer` writes its bytes
straight from the Struct (native/src/avro_out.rs `OutputWriter`): each field in the schema's
order, in the Avro binary encoding, after the single-object header. It writes only what it is
sure the plain path writes the same way (exact str, exact int within the field's range, a tuple
of str for an array of strings); any other value, and every EventRejected (its event travels as
JSON text, its raw bytes in a union), takes the plain path, which writes it or raises as before.
tests/codec/test_fastwrite.py holds both paths to the same bytes on simulated floors and on odd
values.
"""
from __future__ import annotations

from craps_streams.codec.wire import AvroCodec, default_codec, encode_output
from craps_streams.rules import EventRejected, output_to_record
from craps_streams.rules.events import OUTPUT_TYPES, field_names

# Avro field types the native writer takes, by its codes.
_CODES = {"long": "long", "int": "int", "string": "string"}
_STRINGS = {"type": "array", "items": "string"}


def _plain(o) -> bytes:
    return encode_output(output_to_record(o))


def _formats(codec: AvroCodec, topics: dict) -> list:
    """(class, header, topic, [(field, code), ...]) of every output class the native writer takes:
    each field of the schema one of `_CODES` or an array of strings, the schema's fields exactly
    the Struct's (any other class takes the plain path, which says what is wrong)."""
    formats = []
    for name, cls in OUTPUT_TYPES.items():
        if cls is EventRejected or cls not in topics:
            continue
        schema = codec.schemas[name]
        fields = []
        for f in schema.source["fields"]:
            t = f["type"]
            code = "strings" if t == _STRINGS else _CODES.get(t) if isinstance(t, str) else None
            if code is None:
                break
            fields.append((f["name"], code))
        else:
            if sorted(n for n, _ in fields) == sorted(field_names(cls)):
                formats.append((cls, codec.outputs[name][1], topics[cls], fields))
    return formats


def output_writer(topics: dict, native: bool = True):
    """`messages(outputs) -> [(topic, key, value), ...]`: each output's topic (`topics`: output
    class -> topic), its table id as UTF-8 (the key) and its Avro message, byte for byte
    `encode_output(output_to_record(o))`. Natively where the native code is in use (and `native`),
    else the plain path."""
    writer = _native_writer(topics) if native else None

    if writer is None:
        def messages(outputs: list) -> list:
            return [(topics[type(o)], o.table_id.encode(), _plain(o)) for o in outputs]
        return messages

    def messages(outputs: list) -> list:
        if not outputs:
            return []
        out = writer(outputs if type(outputs) is list else list(outputs))
        if None in out:
            for i, m in enumerate(out):
                if m is None:
                    o = outputs[i]
                    out[i] = (topics[type(o)], o.table_id.encode(), _plain(o))
        return out

    return messages


def _native_writer(topics: dict):
    from craps_streams.accelerator.avro import output_writer
    from craps_streams.accelerator.rules import in_use

    return output_writer(_formats(default_codec(), topics)) if in_use() else None
