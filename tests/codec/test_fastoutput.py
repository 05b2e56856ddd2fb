"""The outputs' native reader (craps_streams/codec/fastoutput.py, native/src/avro_in.rs) against the
plain path, `decode_output`: the same record for every message of a simulated floor, and for every
damaged message either the same record or the same CodecError."""
from __future__ import annotations

import pytest

from craps_streams.accelerator.avro import output_reader as native_reader
from craps_streams.accelerator.rules import chosen
from craps_streams.codec import CodecError, decode_output
from craps_streams.codec.fastoutput import _formats, output_reader
from craps_streams.codec.wire import default_codec
from tests.codec.test_fastwrite import floor_outputs

READERS = [pytest.param(True, id="native"), pytest.param(False, id="plain")]


def outcome(decode, message):
    try:
        return decode(message)
    except CodecError as e:
        return ("CodecError", str(e))


@pytest.fixture(scope="module")
def messages() -> list[bytes]:
    return [value for h in floor_outputs() for _, _, value in h.messages]


def test_the_native_reader_is_in_use_with_the_native_core():
    assert (native_reader(_formats(default_codec())) is not None) == chosen().native


def test_the_native_reader_takes_the_outputs_of_longs_ints_and_strings():
    assert sorted(name for _, name, _ in _formats(default_codec())) == ["MarkerCleared", "MarkerPlaced", "WagerSettled"]


@pytest.mark.parametrize("native", READERS)
def test_a_floor_s_outputs_are_read_as_the_plain_path_reads_them(native, messages):
    kinds = {decode_output(m)["type"] for m in messages}
    assert {"WagerSettled", "MarkerPlaced", "MarkerCleared", "SurveillanceAlerted", "EventRejected"} <= kinds
    decode = output_reader(native=native)
    assert [decode(m) for m in messages] == [decode_output(m) for m in messages]


def damaged(message: bytes):
    """Every way a message can be cut, lengthened or have one byte changed."""
    for n in range(len(message)):
        yield message[:n]
    yield message + b"\x00"
    yield message + message[10:]
    for i in range(len(message)):
        for b in (0x00, 0x01, 0x7F, 0x80, 0xFF, message[i] ^ 0x01):
            yield message[:i] + bytes([b]) + message[i + 1:]


def test_damaged_messages_are_read_or_refused_as_the_plain_path_does(messages):
    decode = output_reader()
    samples = {}
    for m in messages:  # one message of each kind, and of each length, is enough to cover every field
        samples.setdefault((decode_output(m)["type"], len(m)), m)
    checked = 0
    for m in list(samples.values())[:60]:
        for bad in damaged(m):
            assert outcome(decode, bad) == outcome(decode_output, bad), bad.hex()
            checked += 1
    assert checked > 10_000


def test_odd_encodings_take_the_plain_path():
    """Encodings fastavro reads but this reader is not sure of: an int beyond 32 bits, a varint of
    ten bytes, bytes that are not UTF-8."""
    codec = default_codec()
    header = codec.outputs["MarkerPlaced"][1]
    fields = dict((f, c) for f, c in next(fs for _, n, fs in _formats(codec) if n == "MarkerPlaced"))

    def body(values: dict) -> bytes:
        out = bytearray()
        for name, code in fields.items():
            v = values[name]
            if code == "string":
                raw = v if isinstance(v, bytes) else v.encode()
                out += zigzag(len(raw)) + raw
            else:
                out += v if isinstance(v, bytes) else zigzag(v)
        return header + bytes(out)

    good = {name: ("T001" if code == "string" else 3) for name, code in fields.items()}
    decode = output_reader()
    assert decode(body(good)) == decode_output(body(good))
    int_field = next(n for n, c in fields.items() if c == "int")
    long_field = next(n for n, c in fields.items() if c == "long")
    str_field = next(n for n, c in fields.items() if c == "string")
    for odd in ({int_field: 2 ** 33}, {long_field: b"\x80" * 9 + b"\x01"}, {long_field: b"\x81" * 10 + b"\x00"},
                {str_field: b"\xff\xfe"}, {str_field: "é" * 3}):
        message = body({**good, **odd})
        assert outcome(decode, message) == outcome(decode_output, message)


def zigzag(v: int) -> bytes:
    z = (v << 1) ^ (v >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)
