"""Garbage in, CodecError out: decoders never raise anything else (nor hang)."""
from __future__ import annotations

import pytest
from codec_strategies import ANY_EVENT, ANY_OUTPUT
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.exploration import examples

from craps_streams.codec import (
    MAGIC,
    CodecError,
    decode_event,
    decode_output,
    default_codec,
    encode_event,
    encode_output,
)

FUZZ = settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
DECODERS = (decode_event, decode_output, lambda b: default_codec().decode(b))
HEADERS = [MAGIC + s.fingerprint for s in default_codec().schemas.values()]


def _decodes_or_codec_error(data) -> None:
    for decode in DECODERS:
        try:
            result = decode(data)
        except CodecError:
            continue
        assert isinstance(result, dict) and isinstance(result.get("type"), str)


@FUZZ
@given(st.binary(max_size=64))
@example(b"")
@example(MAGIC)
@example(b"\x00\x00\x00\x00\x01")  # Confluent framing
@example(b"\xc3\x02" + bytes(8))
@example(MAGIC + bytes(8))  # unknown fingerprint
def test_random_bytes(data):
    _decodes_or_codec_error(data)


@FUZZ
@given(st.sampled_from(HEADERS), st.binary(max_size=80))
@example(HEADERS[0], b"\x02")
@example(HEADERS[0], b"\x7f" * 10)
@example(HEADERS[0], b"\xff" * 11)  # varint too long
@example(HEADERS[0], b"\x01\xff")  # negative length
def test_valid_header_random_body(header, body):
    _decodes_or_codec_error(header + body)


@FUZZ
@given(st.one_of(ANY_EVENT.map(encode_event), ANY_OUTPUT.map(encode_output)), st.data())
def test_mutated_messages(data, draw):
    b = bytearray(data)
    for _ in range(draw.draw(st.integers(1, 4))):
        i = draw.draw(st.integers(0, len(b) - 1))
        b[i] = draw.draw(st.integers(0, 255))
    cut = draw.draw(st.integers(0, len(b)))
    _decodes_or_codec_error(bytes(b))
    _decodes_or_codec_error(bytes(b[:cut]))
    _decodes_or_codec_error(bytes(b) + draw.draw(st.binary(min_size=1, max_size=8)))


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(ANY_EVENT.map(encode_event), ANY_OUTPUT.map(encode_output)), st.data())
def test_truncated_or_extended_messages_always_fail(data, draw):
    cut = draw.draw(st.integers(0, len(data) - 1))
    for decode in (decode_event, decode_output):
        with pytest.raises(CodecError):
            decode(data[:cut])
        with pytest.raises(CodecError):
            decode(data + draw.draw(st.binary(min_size=1, max_size=8)))


@pytest.mark.parametrize("data", [None, "c301", 42, 3.5, ["x"], object()])
def test_non_bytes(data):
    for decode in DECODERS:
        with pytest.raises(CodecError):
            decode(data)


def test_bytes_like_inputs_are_accepted():
    data = encode_event({"table_id": "T", "seq": 1, "ts": 2, "type": "TableClosed"})
    for view in (bytearray(data), memoryview(data)):
        assert decode_event(view)["type"] == "TableClosed"


def test_clear_messages():
    with pytest.raises(CodecError, match="magic"):
        decode_event(b"\x00" * 20)
    with pytest.raises(CodecError, match="truncated"):
        decode_event(MAGIC + b"\x01")
    with pytest.raises(CodecError, match="fingerprint"):
        decode_event(MAGIC + bytes(8) + b"\x00")
    good = encode_event({"table_id": "T", "seq": 1, "ts": 2, "type": "TableClosed"})
    with pytest.raises(CodecError, match="trailing"):
        decode_event(good + b"\x00")
    with pytest.raises(CodecError, match="malformed") as info:
        decode_event(good[:-1])
    assert info.value.__cause__ is not None


def test_type_contradicting_body_is_refused():
    c = default_codec()
    data = encode_event({"table_id": "T", "seq": 1, "ts": 2, "type": "ComeBetsOnly", "active": True})
    # rewrite the type string "ComeBetsOnly" into "ComeBetsOnlx" (same length): body stays ComeBetsOnly
    forged = data.replace(b"ComeBetsOnly", b"ComeBetsOnlx")
    with pytest.raises(CodecError, match="does not match"):
        c.decode_event(forged)


def test_invalid_rules_json_is_a_codec_error():
    data = encode_event({"table_id": "T", "seq": 1, "ts": 2, "type": "TableOpened", "table_kind": "live",
                         "rules": {"a": 1}})
    text, bad = b'{"a":1}', b'{"a":1,'  # same length: valid Avro, invalid JSON text
    assert data.count(text) == 1
    with pytest.raises(CodecError, match="JSON"):
        decode_event(data.replace(text, bad))
