"""Avro (and deterministic JSON) codec for the wire contract of ``craps_streams/schemas/``.

* ``encode_event`` / ``decode_event``: table events (flat dicts with ``type``) <-> Avro
  single-object messages (``C3 01`` + CRC-64-AVRO fingerprint + Avro binary), see ``wire``.
* ``encode_output`` / ``decode_output``: outputs (``{"type": "WagerSettled", ...}``), dispatched on
  ``type`` when encoding and on the schema fingerprint when decoding.
* ``write_container`` / ``read_container``: table events in Avro Object Container Files.
* ``to_json_line`` / ``from_json_line``: deterministic JSON Lines.
* ``compatibility``: the backward-compatibility gate for CI.

Every failure is a ``CodecError``.
"""
from craps_streams.codec.errors import CodecError, RawMessage

# The rest is loaded when first used (PEP 562): Avro (fastavro, the schemas) costs a JSON Lines
# replay a tenth of its run if imported eagerly, and it never uses it.
_LAZY = {
    "default_container_codec": "craps_streams.codec.container",
    "read_container": "craps_streams.codec.container",
    "write_container": "craps_streams.codec.container",
    "from_json_line": "craps_streams.codec.jsonl",
    "to_json_line": "craps_streams.codec.jsonl",
    **{name: "craps_streams.codec.wire" for name in ("HEADER_LEN", "MAGIC", "OUTPUT_KINDS", "AvroCodec", "decode_event",
                                                "decode_output", "default_codec", "encode_event", "encode_output")},
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'craps_streams.codec' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
    "RawMessage",
    "read_container",
    "to_json_line",
    "write_container",
]
