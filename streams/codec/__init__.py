"""Avro (and deterministic JSON) codec for the wire contract of ``schemas/``.

* ``encode_event`` / ``decode_event``: table events (flat dicts with ``type``) <-> Avro
  single-object messages (``C3 01`` + CRC-64-AVRO fingerprint + Avro binary), see ``wire``.
* ``encode_output`` / ``decode_output``: outputs (``{"type": "WagerSettled", ...}``), dispatched on
  ``type`` when encoding and on the schema fingerprint when decoding.
* ``write_container`` / ``read_container``: table events in Avro Object Container Files.
* ``to_json_line`` / ``from_json_line``: deterministic JSON Lines.
* ``compatibility``: the backward-compatibility gate for CI.

Every failure is a ``CodecError``.
"""
from streams.codec.container import (
    default_container_codec,
    read_container,
    write_container,
)
from streams.codec.errors import CodecError, RawMessage
from streams.codec.jsonl import from_json_line, to_json_line
from streams.codec.wire import (
    HEADER_LEN,
    MAGIC,
    OUTPUT_KINDS,
    AvroCodec,
    decode_event,
    decode_output,
    default_codec,
    encode_event,
    encode_output,
)

__all__ = [
    "HEADER_LEN",
    "MAGIC",
    "OUTPUT_KINDS",
    "AvroCodec",
    "CodecError",
    "decode_event",
    "decode_output",
    "default_codec",
    "default_container_codec",
    "encode_event",
    "encode_output",
    "from_json_line",
    "read_container",
    "to_json_line",
    "write_container",
]
