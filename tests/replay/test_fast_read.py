"""The generated block decoder of `fastread` against fastavro's datums: the same items (core events
or flat records) for every kind of record, odd ones included, and the same failures. The native
block reader (native/src/avro.rs) is held to the generated decoder in lockstep
(tests/native/test_lockstep.py, the `avro-reader` path: every floor, these odd records, every byte
of a block changed); here, only what it reads itself and where it declines."""
from __future__ import annotations

import io
import pickle
import typing

import fastavro
import msgspec
import pytest

from craps_streams.codec import CodecError, default_codec, write_container
from craps_streams.codec import fastread
from craps_streams.codec.fastread import read_event_batches, read_events
from craps_streams.accelerator.rules import chosen
from craps_streams.rules import ContractError, record_to_event
from craps_streams.rules.events import (
    INPUT_TYPES,
    NEW,
    OUTPUT_TYPES,
    DiceThrown,
    WagerSettled,
    field_names,
    settlement_id,
)
from craps_streams.rules.submission import RulesSubmission

TS = 1_767_225_600_000


PATHS = ({"native": False}, {"generated": False})  # generated, fastavro's


def both(path, where=True) -> list:
    """The items of every path, which must be equal."""
    where_of = (lambda n: f"f:{n}") if where else None
    fast, *others = ([item for items in read_event_batches(path, where_of, **how) for item in items]
                     for how in PATHS)
    for other in others:
        assert fast == other
        assert [type(x) for x in fast] == [type(x) for x in other]
    return fast


def outcome(path, **how):
    """The items of a path, or "CodecError"."""
    try:
        return [x for items in read_event_batches(path, lambda n: n, **how) for x in items]
    except CodecError:
        return "CodecError"


def contract_event(record):
    try:
        return record_to_event(record)
    except ContractError:
        return None


def native_blocks(path) -> list:
    """What the native reader makes of each block of a container: its items, or None (declined)."""
    _, decoder, reader = fastread._setup(default_codec())
    assert reader, "the native code is in use but fastread has no native reader"
    out = []
    with open(path, "rb") as fo:
        for block in fastavro.block_reader(fo, return_record_name=True):
            def slow(data, start, k):
                return ("slow", start, k), start + len(data)  # never the block's real end: a marker
            out.append(reader.decode(block.bytes_.getvalue(), block.num_records, 0, slow))
    return out


def records() -> list[dict]:
    long_id = "T" + "x" * 200  # lengths of two-byte varints
    out = []
    for n, (table, seq, ts) in enumerate([("T1", 1, TS), (long_id, 2, 0), ("Tä€😀", 3, TS), ("T1", 2**40, 2**62),
                                           ("T1", 4, 1), ("T1", 0, TS), ("T1", -5, TS), ("T1", 6, -1), ("", 7, TS)]):
        out += [
            {"type": "TableOpened", "table_id": table, "seq": seq, "ts": ts, "table_kind": "live"},
            {"type": "TableOpened", "table_id": table, "seq": seq, "ts": ts, "table_kind": "hybrid",
             "rules": {"hot_roller_paytable": "B"}},
            {"type": "ShooterChanged", "table_id": table, "seq": seq, "ts": ts, "shooter_id": f"s{n}" * 40,
             "position": -3, "reason": "table_open"},
            {"type": "ShooterChanged", "table_id": table, "seq": seq, "ts": ts, "shooter_id": "", "position": 3,
             "reason": "voluntary"},
            {"type": "DiceThrown", "table_id": table, "seq": seq, "ts": ts, "die1": 3, "die2": 4, "valid": False},
            {"type": "DiceThrown", "table_id": table, "seq": seq, "ts": ts, "die1": -2**31, "die2": 2**31 - 1},
            {"type": "WagerPlaced", "table_id": table, "seq": seq, "ts": ts, "wager_id": "w" * 63, "position": 64,
             "wager": "fire", "amount_cents": 2**63 - 1},
            {"type": "WagerPlaced", "table_id": table, "seq": seq, "ts": ts, "wager_id": "w" * 64, "position": -65,
             "wager": "", "amount_cents": -2**63},
            {"type": "WagerChangeRequested", "table_id": table, "seq": seq, "ts": ts, "wager_id": "w1",
             "amount_cents": 0},
            {"type": "ComeBetsOnly", "table_id": table, "seq": seq, "ts": ts, "active": True},
            {"type": "ComeBetsOnly", "table_id": table, "seq": seq, "ts": ts, "active": False},
            {"type": "TableClosed", "table_id": table, "seq": seq, "ts": ts},
            {"type": "SomethingNew", "table_id": table, "seq": seq, "ts": ts},  # a null body
            {"type": "DiceThrown", "table_id": table, "seq": seq, "ts": ts, "die1": 1, "die2": 2,
             "key_id": "k-T1", "tag": "A" * 43},  # tagged (schema v2)
            {"type": "WagerPlaced", "table_id": table, "seq": seq, "ts": ts, "wager_id": "w-2", "position": 2,
             "wager": "fire", "amount_cents": 500, "key_id": "k" * 129, "tag": None},  # a key id too long
            {"type": "WagerPlaced", "table_id": table, "seq": seq, "ts": ts, "wager_id": "<img src=x>",
             "position": 2, "wager": "fire", "amount_cents": 500},  # an id out of the id format
        ]
    return out


def test_every_kind_and_odd_values(tmp_path):
    rs = records()
    for sync in (64_000, 300):  # one block, many blocks
        path = tmp_path / f"odd-{sync}.avro"
        write_container(path, rs, codec="deflate", sync_interval=sync)
        items = both(path)
        assert len(items) == len(rs)
        events = [x for x in items if type(x) is not tuple]
        assert len(events) > len(rs) // 8  # the rows with a valid id, seq and ts
        # each core event is the record's event; the others are the records with their source, and
        # a record that is not a TableOpened comes as a record only when the contract refuses it
        for n, (item, record) in enumerate(zip(items, rs)):
            if type(item) is tuple:
                assert item[1] == f"f:{n}" and item[0]["type"] == record["type"]
                if record["type"] in INPUT_TYPES and record["type"] != "TableOpened":
                    with pytest.raises(ContractError):
                        record_to_event(record)
            else:
                assert item == record_to_event(record)
        assert [x for x in read_events(path)] == [x if type(x) is not tuple else x[0] for x in items]


def test_a_body_that_is_not_its_type_fails_both_ways(tmp_path):
    schema = default_codec().event_schema.parsed
    datum = {"table_id": "T1", "seq": 1, "ts": TS, "type": "DiceThrown",
             "body": ("casino.craps.v1.ComeBetsOnly", {"active": True})}
    path = tmp_path / "mismatch.avro"
    with open(path, "wb") as fo:
        fastavro.writer(fo, schema, [datum])
    for how in ({}, *PATHS):  # and natively, where the native code is in use
        with pytest.raises(CodecError, match="does not match"):
            list(read_event_batches(path, **how))


def test_corrupt_blocks_fail_both_ways(tmp_path):
    rs = [r for r in records() if r["type"] == "DiceThrown"] * 50
    good = tmp_path / "good.avro"
    write_container(good, rs, codec="null", sync_interval=1_000)
    data = good.read_bytes()
    for cut in (len(data) - 40, len(data) // 2):  # truncated inside a block
        bad = tmp_path / f"cut-{cut}.avro"
        bad.write_bytes(data[:cut])
        for how in PATHS:
            with pytest.raises(CodecError):
                list(read_event_batches(bad, **how))
    # a byte changed inside a record: the same items or the same failure either way
    header = data.index(b"T1")
    for offset in range(header, header + 400, 3):
        bad = tmp_path / f"flip-{offset}.avro"
        bad.write_bytes(data[:offset] + bytes([data[offset] ^ 0x85]) + data[offset + 1:])
        outcomes = [outcome(bad, **how) for how in PATHS]
        assert outcomes[0] == outcomes[1], offset


@pytest.mark.skipif(not chosen().native, reason="the native reader is the native code's (CRAPS_CORE=python runs)")
def test_the_native_reader_reads_what_it_is_sure_of(tmp_path):
    """It reads every record of a kind it plans, hands each other record to `slow` at the record's
    first byte, and declines (None) a block whose records do not end where it does or that it
    cannot read to the end; the generated decoder then reads it (the tests above: same items)."""
    rs = records()
    path = tmp_path / "odd.avro"
    write_container(path, rs, codec="null", sync_interval=64_000)
    [one] = native_blocks(path)
    assert one is None  # every slow item claims to end at the block's end + its start: never the end
    clean = [r for r in rs if r["table_id"] == "T1" and r["seq"] == 1 and r["type"] != "TableOpened"]
    path = tmp_path / "clean.avro"
    write_container(path, clean, codec="null", sync_interval=64_000)
    [items] = native_blocks(path)
    expected = [contract_event(r) for r in clean]  # the contract's event, or None where it refuses
    assert [e for e in expected if e is not None]  # some read natively, some not
    assert None in expected
    assert items is None  # the marker `slow` makes every block with an odd record end elsewhere
    read = [r for r, e in zip(clean, expected) if e is not None]
    path = tmp_path / "read.avro"
    write_container(path, read, codec="null", sync_interval=64_000)
    [items] = native_blocks(path)
    assert items == [e for e in expected if e is not None]
    # a string length running beyond the block: declined, not read short
    data = path.read_bytes()
    at = data.index(b"\x04T1")  # the first record's table id: length 2, "T1"
    bad = tmp_path / "long-string.avro"
    bad.write_bytes(data[:at] + b"\x7eT1" + data[at + 3:])
    assert outcome(bad) == outcome(bad, native=False) == outcome(bad, generated=False)


def test_random_byte_changes_give_the_same_outcome_every_way(tmp_path):
    """Pinned changes (xor masks at every offset of a stretch) to a tagged floor's block: both
    paths give the same items or the same failure (invalid UTF-8, varints beyond ten bytes, union
    indexes, lengths past the end...)."""
    rs = [r for r in records() if r["table_id"] in ("T1", "Tä€😀")][:40]
    good = tmp_path / "good.avro"
    write_container(good, rs, codec="null", sync_interval=64_000)
    data = good.read_bytes()
    start = data.index(b"T1")
    for offset in range(start, min(len(data) - 20, start + 900)):
        for mask in (0x80, 0x01, 0xFF):
            bad = tmp_path / "flip.avro"
            bad.write_bytes(data[:offset] + bytes([data[offset] ^ mask]) + data[offset + 1:])
            outcomes = [outcome(bad, **how) for how in PATHS]
            assert outcomes[0] == outcomes[1], (offset, mask)


def test_events_are_frozen_values():
    for cls in (*INPUT_TYPES.values(), *OUTPUT_TYPES.values()):
        hints = typing.get_type_hints(cls, localns={"RulesSubmission": RulesSubmission})
        values = [{int: 7, bool: True, str: "x"}.get(hints[name], ("a", "b")) for name in field_names(cls)]
        a, b = cls(*values), NEW[cls](*values)
        assert type(b) is cls and a == b and hash(a) == hash(b) and repr(a) == repr(b)
        assert pickle.loads(pickle.dumps(b)) == a and msgspec.structs.replace(b) == a
        assert a != msgspec.structs.replace(b, table_id="z")
        with pytest.raises(AttributeError):
            b.table_id = "y"
    assert NEW[DiceThrown]("T", 1, 2, 3, 4) == DiceThrown("T", 1, 2, 3, 4)  # defaults
    s = NEW[WagerSettled](wager_id="w", table_id="T", position=1, wager="fire", outcome="win", stake_cents=1,
                          won_cents=2, paytable="p", detail="d", seq=3, ts=4, placed_seq=2,
                          id=settlement_id("T", 3, "w"))
    assert s.id == "T/3/settle/w"


def test_older_schema_files_still_come_as_records(tmp_path):
    """A container of another writer schema is resolved by fastavro, records only."""
    codec = default_codec()
    source = dict(codec.event_schema.source)
    source["doc"] = "an older writer"  # the same fields, another fingerprint
    source["fields"] = [dict(f) for f in source["fields"]] + [{"name": "extra", "type": "string", "default": ""}]
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(source), [{"table_id": "T1", "seq": 1, "ts": TS, "type": "TableClosed",
                                                         "body": ("casino.craps.v1.TableClosed", {}), "extra": ""}])
    path = tmp_path / "other.avro"
    path.write_bytes(buf.getvalue())
    items = both(path)
    assert items == [({"table_id": "T1", "seq": 1, "ts": TS, "type": "TableClosed"}, "f:0")]
