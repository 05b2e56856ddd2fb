"""Records as deterministic JSON Lines: sorted keys, compact separators, ASCII only.

The same record always gives the same bytes, so JSON histories can be compared and hashed.
NaN and infinities are refused both ways. Tuples come out as lists; bytes (an undecodable message's ``raw``) as a string of code points
0-255 (Avro's JSON convention for bytes), so they decode as ``str``, not ``bytes``.
"""
from __future__ import annotations

import json

from craps_streams.codec.errors import CodecError

_encoder = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False,
                            default=lambda o: o.decode("latin-1") if isinstance(o, (bytes, bytearray))
                            else _unserializable(o))


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


_decoder = json.JSONDecoder(parse_constant=_no_constant)


def _unserializable(o):
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


def to_json_line(record: dict) -> str:
    """One record as one line of JSON (no trailing newline)."""
    try:
        return _encoder.encode(record)
    except (TypeError, ValueError) as e:
        raise CodecError(f"record cannot be JSON: {e}") from e


def from_json_line(line: str | bytes | bytearray) -> dict:
    """One record from one line of JSON (surrounding whitespace, e.g. the newline, is ignored)."""
    try:
        if not isinstance(line, str):
            line = bytes(line).decode("utf-8")
        record = _decoder.decode(line.strip())
    except (TypeError, ValueError, RecursionError) as e:
        raise CodecError(f"not a JSON line: {e}") from e
    if not isinstance(record, dict):
        raise CodecError(f"a JSON line must hold an object, got {type(record).__name__}")
    return record
