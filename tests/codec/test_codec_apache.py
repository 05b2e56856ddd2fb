"""The bytes are standard Avro: the apache ``avro`` package, an independent implementation, reads
what we write (single-object messages and container files) and we read what it writes."""
from __future__ import annotations

import io
import json

import avro.datafile
import avro.io
import avro.schema
import pytest
from codec_strategies import (
    ANY_EVENT,
    ANY_OUTPUT,
    UNKNOWN_KIND,
    expected_event,
    expected_output,
    wire_fields,
)
from hypothesis import HealthCheck, given, settings

from tests.exploration import examples

from craps_streams.codec import (
    HEADER_LEN,
    MAGIC,
    decode_event,
    decode_output,
    default_codec,
    encode_event,
    encode_output,
    read_container,
    write_container,
)

SETTINGS = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
CODEC = default_codec()
APACHE = {name: avro.schema.parse(s.path.read_text()) for name, s in CODEC.schemas.items()}


def _apache_event_view(record: dict) -> dict:
    """What apache avro gives for a table event: the Avro datum with the body as a plain dict."""
    datum = CODEC.event_datum(record)
    body = datum["body"]
    return {"key_id": None, "tag": None, **datum, "body": None if body is None else body[1]}


def _apache_read(name: str, data: bytes):
    return avro.io.DatumReader(APACHE[name]).read(avro.io.BinaryDecoder(io.BytesIO(data[HEADER_LEN:])))


@pytest.mark.parametrize("name", sorted(CODEC.schemas))
def test_fingerprints_are_apache_crc64_avro(name):
    assert CODEC.schemas[name].fingerprint == APACHE[name].fingerprint("CRC-64-AVRO")
    assert json.loads(CODEC.schemas[name].canonical) == json.loads(APACHE[name].canonical_form)


@SETTINGS
@given(ANY_EVENT | UNKNOWN_KIND)
def test_apache_reads_our_events(record):
    data = encode_event(record)
    assert data[:HEADER_LEN] == MAGIC + APACHE["TableEvent"].fingerprint("CRC-64-AVRO")
    got = _apache_read("TableEvent", data)
    assert got == _apache_event_view(expected_event(record))
    if record["type"] == "TableOpened" and record.get("rules") is not None:
        assert json.loads(got["body"]["rules"]) == record["rules"]


@SETTINGS
@given(ANY_OUTPUT)
def test_apache_reads_our_outputs(record):
    data = encode_output(record)
    got = _apache_read(record["type"], data)
    assert got == wire_fields(expected_output(record))


# apache's Python DatumWriter has no tagged-union notation: it writes a dict as the first record branch
# whose field names contain the dict's keys, so a WagerChangeRequested body {wager_id, amount_cents}
# would go out as a WagerPlaced and a TableClosed body {} as a TableOpened. Those two kinds are
# covered by the other direction (apache reads what we write).
_APACHE_WRITABLE = ANY_EVENT.filter(lambda r: r["type"] not in ("WagerChangeRequested", "TableClosed"))


@SETTINGS
@given(_APACHE_WRITABLE)
def test_we_read_apache_written_events(record):
    buf = io.BytesIO()
    buf.write(MAGIC + APACHE["TableEvent"].fingerprint("CRC-64-AVRO"))
    avro.io.DatumWriter(APACHE["TableEvent"]).write(_apache_event_view(expected_event(record)),
                                                     avro.io.BinaryEncoder(buf))
    assert decode_event(buf.getvalue()) == expected_event(record)


@SETTINGS
@given(ANY_OUTPUT)
def test_we_read_apache_written_outputs(record):
    expected = expected_output(record)
    buf = io.BytesIO()
    buf.write(MAGIC + APACHE[record["type"]].fingerprint("CRC-64-AVRO"))
    avro.io.DatumWriter(APACHE[record["type"]]).write(wire_fields(expected),
                                                       avro.io.BinaryEncoder(buf))
    assert decode_output(buf.getvalue()) == expected


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_apache_datafilereader_reads_our_containers(tmp_path, codec):
    from test_codec_roundtrip import EXAMPLES
    records = EXAMPLES * 50
    path = tmp_path / "events.avro"
    assert write_container(path, records, codec=codec) == len(records)
    with avro.datafile.DataFileReader(open(path, "rb"), avro.io.DatumReader()) as reader:
        assert reader.meta["avro.codec"] == codec.encode()
        got = list(reader)
    assert got == [_apache_event_view(r) for r in records]


def test_we_read_apache_written_containers(tmp_path):
    from test_codec_roundtrip import EXAMPLES
    records = [r for r in EXAMPLES if r["type"] not in ("WagerChangeRequested", "TableClosed")]
    path = tmp_path / "apache.avro"
    with avro.datafile.DataFileWriter(open(path, "wb"), avro.io.DatumWriter(), APACHE["TableEvent"],
                                      codec="deflate") as writer:
        for r in records:
            writer.append(_apache_event_view(r))
    assert list(read_container(path)) == records
