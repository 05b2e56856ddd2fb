"""Avro Object Container Files of table events (replay archives)."""
from __future__ import annotations

import copy
import io
import json
import types

import fastavro
import pytest
from codec_strategies import ANY_EVENT, expected_event
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.exploration import examples

from craps_streams.codec import (
    CodecError,
    default_container_codec,
    read_container,
    write_container,
)
from craps_streams.codec.container import SCHEMA_VERSION_KEY
from craps_streams.codec.schemas import make_loaded
from craps_streams.codec.wire import AvroCodec, default_codec


def _events(n: int):
    for i in range(n):
        yield {"table_id": f"T{i % 3}", "seq": i + 1, "ts": 1_700_000_000_000 + i, "type": "DiceThrown",
               "die1": i % 6 + 1, "die2": (i * 7) % 6 + 1, "valid": i % 11 != 0}


def test_default_codec_is_zstandard_or_deflate():
    try:
        import zstandard  # noqa: F401
        assert default_container_codec() == "zstandard"
    except ImportError:
        assert default_container_codec() == "deflate"


@pytest.mark.parametrize("codec", [None, "null", "deflate"])
def test_round_trip(tmp_path, codec):
    path = tmp_path / "day.avro"
    assert write_container(path, _events(5000), codec=codec) == 5000
    assert list(read_container(path)) == list(_events(5000))
    with open(path, "rb") as fo:
        meta = fastavro.reader(fo).metadata
    assert meta["avro.codec"] == (codec or default_container_codec())
    assert meta[SCHEMA_VERSION_KEY] == "2"
    assert not list(tmp_path.glob("*.tmp"))


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(ANY_EVENT, max_size=30))
def test_every_kind_in_a_file_object(records):
    buf = io.BytesIO()
    write_container(buf, records)
    buf.seek(0)
    assert list(read_container(buf)) == [expected_event(r) for r in records]


def test_reading_streams(tmp_path):
    path = tmp_path / "big.avro"
    write_container(path, _events(100_000), sync_interval=4000)
    it = read_container(path)
    assert isinstance(it, types.GeneratorType)
    assert next(it)["seq"] == 1
    assert sum(1 for _ in it) == 99_999


def test_a_bad_record_leaves_no_file(tmp_path):
    path = tmp_path / "bad.avro"
    records = [*_events(10), {"type": "DiceThrown", "table_id": "T", "seq": 11, "ts": 0, "die1": "six", "die2": 1}]
    with pytest.raises(CodecError, match="die1"):
        write_container(path, records)
    assert not path.exists() and not list(tmp_path.iterdir())


def test_garbage_and_corruption_are_codec_errors(tmp_path):
    garbage = tmp_path / "garbage.avro"
    garbage.write_bytes(b"this is not avro at all")
    with pytest.raises(CodecError):
        list(read_container(garbage))
    path = tmp_path / "ok.avro"
    write_container(path, _events(3000), codec="deflate", sync_interval=2000)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    corrupt = tmp_path / "corrupt.avro"
    corrupt.write_bytes(bytes(data))
    with pytest.raises(CodecError):
        list(read_container(corrupt))
    truncated = tmp_path / "truncated.avro"
    truncated.write_bytes(path.read_bytes()[: len(data) - 50])
    with pytest.raises(CodecError):
        list(read_container(truncated))


def test_other_container_is_refused(tmp_path):
    path = tmp_path / "other.avro"
    with open(path, "wb") as fo:
        fastavro.writer(fo, fastavro.parse_schema({"type": "record", "name": "Other", "fields": []}), [{}])
    with pytest.raises(CodecError, match="not a table-event container"):
        list(read_container(path))


def test_files_written_with_an_older_schema_are_resolved(tmp_path):
    """A container written before a field was added (with its default) reads with the new schema."""
    current = default_codec().schemas
    old_source = copy.deepcopy(current["TableEvent"].source)
    dice = next(b for b in old_source["fields"][4]["type"] if isinstance(b, dict) and b["name"] == "DiceThrown")
    dice["fields"] = [f for f in dice["fields"] if f["name"] != "valid"]  # v0 had no `valid`
    old = make_loaded(old_source)
    path = tmp_path / "old.avro"
    with open(path, "wb") as fo:
        fastavro.writer(fo, old.parsed, [{"table_id": "T", "seq": 1, "ts": 5, "type": "DiceThrown",
                                          "body": ("casino.craps.v1.DiceThrown", {"die1": 2, "die2": 3})}])
    assert list(read_container(path)) == [
        {"table_id": "T", "seq": 1, "ts": 5, "type": "DiceThrown", "die1": 2, "die2": 3, "valid": True}]
    # the same for single-object messages, once the old schema is registered as history
    codec = AvroCodec(current, [old])
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, old.parsed, {"table_id": "T", "seq": 1, "ts": 5, "type": "DiceThrown",
                                                 "body": ("casino.craps.v1.DiceThrown", {"die1": 2, "die2": 3})})
    data = b"\xc3\x01" + old.fingerprint + buf.getvalue()
    assert codec.decode_event(data)["valid"] is True
    with pytest.raises(CodecError, match="fingerprint"):
        default_codec().decode_event(data)
    assert json.loads(old.canonical)  # sanity: a real canonical form
