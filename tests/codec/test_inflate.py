"""The deflate blocks inflated by ISA-L (craps_streams/codec/inflate.py): the bytes zlib gives, every
block of a container; the records fastavro's own reader gives; a corrupt or cut block a failure."""
from __future__ import annotations

import io
import zlib

import fastavro
import fastavro.read
import pytest

from craps_streams.codec import CodecError, read_container, write_container
from craps_streams.codec import inflate
from craps_streams.codec.fastread import read_event_batches

def _events(n: int):
    for i in range(n):
        yield {"table_id": f"T{i % 7}", "seq": i + 1, "ts": 1_700_000_000_000 + i, "type": "DiceThrown",
               "die1": i % 6 + 1, "die2": (i * 5) % 6 + 1, "valid": i % 13 != 0}


@pytest.fixture
def container(tmp_path):
    path = tmp_path / "events.avro"
    write_container(path, _events(20_000), codec="deflate", sync_interval=3_000)
    return path


def test_it_is_the_deflate_reader_in_use():
    assert inflate.install() and fastavro.read.BLOCK_READERS["deflate"] is inflate.read_deflate_block


def test_every_block_inflates_to_the_bytes_zlib_gives(container, monkeypatch):
    raw = []

    def keep(fo):
        size = inflate._long(fo)
        raw.append(fo.read(size))
        return io.BytesIO(zlib.decompress(raw[-1], -15))

    monkeypatch.setitem(fastavro.read.BLOCK_READERS, "deflate", keep)
    with open(container, "rb") as fo:
        blocks = [b.bytes_.getvalue() for b in fastavro.block_reader(fo)]
    assert len(raw) == len(blocks) > 5
    for data, block in zip(raw, blocks):
        assert inflate._inflate(data, -15) == zlib.decompress(data, -15) == block


def test_the_records_are_fastavros_own(container, monkeypatch):
    ours = list(read_container(container))
    batches = [item for items in read_event_batches(container) for item in items]
    with monkeypatch.context() as m:
        m.setitem(fastavro.read.BLOCK_READERS, "deflate", _zlib_reader)
        assert list(read_container(container)) == ours
        assert [item for items in read_event_batches(container) for item in items] == batches
    assert len(ours) == 20_000


def _zlib_reader(fo):
    size = inflate._long(fo)
    return io.BytesIO(zlib.decompress(fo.read(size), -15))


def test_a_corrupt_or_cut_block_fails_the_read(container, tmp_path):
    data = container.read_bytes()
    for name, bad in [("flipped", data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0xFF]) + data[len(data) // 2 + 1:]),
                      ("cut", data[:len(data) - 500])]:
        path = tmp_path / f"{name}.avro"
        path.write_bytes(bad)
        with pytest.raises(CodecError):
            list(read_container(path))
        with pytest.raises(CodecError):
            list(read_event_batches(path))
