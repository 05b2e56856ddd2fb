"""The outputs read from their Avro messages: the fast path of the ledger's decode.

The plain path, `decode_output(message)`, checks the single-object header, finds the writer
schema by its fingerprint and reads the body with fastavro's generic reader: about 5 µs a
settlement, the largest stage of the ledger's reading. An output whose current schema is longs,
ints and strings alone (a settlement, a marker) is read natively instead (native/src/avro_in.rs
`OutputReader`) into the same record, when the native code is sure of it: anything else (an older
writer schema, an EventRejected with its event and raw bytes, an alert with its wagers, damaged
bytes) takes the plain path, which reads it or raises `CodecError` as before.
tests/codec/test_fastoutput.py holds both paths to the same records on a simulated floor's outputs
and on damaged messages.
"""
from __future__ import annotations

from typing import Callable

from craps_streams.codec.wire import AvroCodec, decode_output, default_codec

_CODES = ("long", "int", "string")


def _formats(codec: AvroCodec) -> list:
    """(header, name, [(field, code), ...]) of every output schema the native reader takes: each
    field a long, an int or a string. EventRejected is never one (its record carries its event
    parsed from JSON)."""
    formats = []
    for name, (_, header, _, _) in codec.outputs.items():
        if name == "EventRejected":
            continue
        fields = []
        for f in codec.schemas[name].source["fields"]:
            if not (isinstance(f["type"], str) and f["type"] in _CODES):
                break
            fields.append((f["name"], f["type"]))
        else:
            formats.append((header, name, fields))
    return formats


def output_reader(native: bool = True) -> Callable[[bytes], dict]:
    """`decode(message) -> record`, record for record and error for error `decode_output`'s:
    natively where the native code is in use (and `native`), else the plain path."""
    if native:
        from craps_streams.accelerator.avro import output_reader as native_reader

        read = native_reader(_formats(default_codec()))
        if read is not None:
            def decode(message) -> dict:
                record = read(message) if message.__class__ is bytes else None
                return decode_output(message) if record is None else record

            return decode
    return decode_output
