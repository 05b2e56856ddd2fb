"""The archive without a broker: ArchiveWriter fed the messages a producer would have written."""
from __future__ import annotations

import base64
import json

import pytest

from craps_streams.codec import decode_event, read_container
from craps_streams.codec import RawMessage
from craps_streams.archive import ArchiveWriter, day_of, iter_archive, load_index, verify
from tests.replay.replay_fixtures import PARTITIONS, floor_lines, messages_of

TOPIC = "x.table-events"


def archive_messages(out, messages) -> object:
    w = ArchiveWriter(out, TOPIC, codec="deflate")
    for p, o, k, v in messages:
        w.add(p, o, v, k)
    return w.commit()


@pytest.fixture(scope="module")
def floor():
    lines = floor_lines()
    return lines, messages_of(lines)


def test_files_per_partition_and_day_with_an_index(floor, tmp_path):
    _, messages = floor
    result = archive_messages(tmp_path, messages)
    index = load_index(tmp_path)
    assert result.archived == len(messages) == sum(f["count"] for f in index["files"])
    days = {f["day"] for f in index["files"] if f["kind"] == "events"}
    assert days == {"2025-12-31", "2026-01-01"}
    for f in index["files"]:
        path = tmp_path / f["path"]
        assert path.exists()
        if f["kind"] == "events":
            assert f["path"] == f"{f['day']}/p{f['partition']}-{f['first_offset']:012d}.avro"
            records = list(read_container(path))
            assert len(records) == f["count"]
            assert min(r["ts"] for r in records) == f["min_ts"] and max(r["ts"] for r in records) == f["max_ts"]
            assert sorted({r["table_id"] for r in records}) == f["tables"]
            assert {day_of(r["ts"]) for r in records} == {f["day"]}
        assert f["first_offset"] == f["offsets"][0][0] and f["last_offset"] == f["offsets"][-1][1]
    assert not list(tmp_path.rglob("*.tmp"))
    assert {int(p): v["next_offset"] for p, v in index["partitions"].items()} == \
        {p: 1 + max(o for q, o, _, _ in messages if q == p) for p in range(PARTITIONS)}


def test_bad_input_is_kept_raw_byte_for_byte(floor, tmp_path):
    _, messages = floor
    result = archive_messages(tmp_path, messages)
    undecodable = {(p, o): v for p, o, _, v in messages if not v.startswith(b"\xc3\x01")}
    assert undecodable and result.undecodable == len(undecodable)
    raw = {}
    for f in load_index(tmp_path)["files"]:
        if f["kind"] == "undecodable":
            for line in (tmp_path / f["path"]).read_text().splitlines():
                r = json.loads(line)
                raw[(r["partition"], r["offset"])] = base64.b64decode(r["value_b64"])
    assert raw == undecodable


def test_read_back_in_offset_order_equals_the_topic(floor, tmp_path):
    _, messages = floor
    archive_messages(tmp_path, messages)
    got = list(iter_archive(tmp_path))
    expected = sorted(messages)
    assert [(p, o) for p, o, _ in got] == [(p, o) for p, o, _, _ in expected]
    for (p, o, item), (_, _, _, value) in zip(got, expected):
        if type(item) is RawMessage:
            assert item.value == value and (item.partition, item.offset) == (p, o) and item.topic == TOPIC
        else:
            assert item == decode_event(value)


def test_resumable_in_runs_without_duplicates(floor, tmp_path):
    _, messages = floor
    thirds = [messages[: len(messages) // 3], messages[len(messages) // 3: 2 * len(messages) // 3],
              messages[2 * len(messages) // 3:]]
    archive_messages(tmp_path, thirds[0])
    # The second run is handed everything again (as if reading from 0): it skips what is archived.
    second = archive_messages(tmp_path, thirds[0] + thirds[1])
    assert second.archived == len(thirds[1])
    assert archive_messages(tmp_path, thirds[0] + thirds[1]).archived == 0  # nothing new: nothing
    archive_messages(tmp_path, messages)
    index = load_index(tmp_path)
    assert len(index["runs"]) == 4
    got = [(p, o) for p, o, _ in iter_archive(tmp_path)]
    assert got == sorted((p, o) for p, o, _, _ in messages)
    v = verify(tmp_path)
    assert v.archive_ok and v.records == len(messages)
    assert all(info["count"] == info["covered"] for info in v.partitions.values())


def test_an_interrupted_run_leaves_the_archive_as_it_was(floor, tmp_path):
    _, messages = floor
    half = len(messages) // 2
    archive_messages(tmp_path, messages[:half])
    before = (tmp_path / "index.json").read_text()
    w = ArchiveWriter(tmp_path, TOPIC)
    for p, o, k, v in messages[half:]:
        w.add(p, o, v, k)
    # crash: files are still temporary, the index untouched; a renamed file the index does not
    # know (a crash between rename and index update) is debris too
    stray = tmp_path / "2026-01-01" / "p0-000000999999.avro"
    stray.write_bytes(b"half")
    del w
    assert (tmp_path / "index.json").read_text() == before
    archive_messages(tmp_path, messages)
    assert not stray.exists() and not list(tmp_path.rglob("*.tmp"))
    assert [(p, o) for p, o, _ in iter_archive(tmp_path)] == sorted((p, o) for p, o, _, _ in messages)
    assert verify(tmp_path).archive_ok


def test_verify_reports_floor_seq_gaps_and_duplicates_without_failing(tmp_path):
    from craps_streams.codec import encode_event

    def ev(seq, ts):
        return encode_event({"type": "DiceThrown", "table_id": "T9", "seq": seq, "ts": ts, "die1": 1, "die2": 2})

    seqs = [1, 2, 3, 3, 5, 6, 4, 7]
    archive_messages(tmp_path, [(0, o, b"T9", ev(s, 1_767_225_600_000 + o)) for o, s in enumerate(seqs)])
    v = verify(tmp_path)
    assert v.archive_ok
    # each finding where it is: its partition and offset (the events read natively, offsets from the index)
    assert v.seq_gaps == [("T9", 3, 5, 0, 4)]
    assert v.seq_duplicates == [("T9", 3, 3, 0, 3), ("T9", 4, 6, 0, 6)]
    assert "2 seq duplicates" in v.summary() and "archive OK" in v.summary()
    # read in batches of any size, each finding's offset found from its batch's place in the file
    from craps_streams.archive.verify import _seq_walk

    for batch in (1, 2, 3, 5):
        assert _seq_walk(tmp_path, None, batch) == (v.seq_gaps, v.seq_duplicates, 1)


def test_verify_with_jobs_finds_what_one_walk_finds_in_its_order(tmp_path):
    """The seq walk by partition group in processes (`verify(jobs=N)`): the same gaps and
    duplicates, in partition and offset order, and the same count of tables."""
    from craps_streams.codec import encode_event

    def ev(table, seq, o):
        return encode_event({"type": "DiceThrown", "table_id": table, "seq": seq, "ts": 1_767_225_600_000 + o,
                             "die1": 1, "die2": 2})

    seqs = {0: [1, 2, 3, 3, 5, 6, 4, 7], 1: [2, 3, 4], 2: [1, 1, 2, 9], 3: [1, 2, 3]}
    messages = []
    for p, table_seqs in seqs.items():
        for o, s in enumerate(table_seqs):
            messages.append((p, o, f"T{p}".encode(), ev(f"T{p}", s, o)))
        for o in range(len(table_seqs)):  # a clean table beside it
            messages.append((p, o + len(table_seqs), f"U{p}".encode(), ev(f"U{p}", o + 1, o)))
    archive_messages(tmp_path, messages)
    one = verify(tmp_path)
    assert one.seq_gaps and one.seq_duplicates and one.tables == 8
    assert [f[3] for f in one.seq_gaps] == sorted(f[3] for f in one.seq_gaps) and {f[3] for f in one.seq_gaps} == {0, 1, 2}
    for jobs in (2, 3, 5):
        many = verify(tmp_path, jobs=jobs)
        assert (many.seq_gaps, many.seq_duplicates, many.tables, many.lines()) == \
            (one.seq_gaps, one.seq_duplicates, one.tables, one.lines())


def test_verify_reports_an_offset_hole(tmp_path):
    from craps_streams.codec import encode_event

    def ev(seq):
        return encode_event({"type": "TableClosed", "table_id": "T9", "seq": seq, "ts": 1_767_225_600_000})

    archive_messages(tmp_path, [(0, 0, b"T9", ev(1)), (0, 1, b"T9", ev(2)), (0, 5, b"T9", ev(3))])
    v = verify(tmp_path)
    assert not v.archive_ok
    assert v.offset_gaps == [(0, 2, 4)]
    assert v.count_mismatches == [(0, 3, 6)]


def test_fast_read_equals_the_contract_path(floor, tmp_path):
    """The fast path (core events straight from the Avro datums) settles exactly like records fed
    through record_to_event, bad inputs included."""
    from craps_streams.replay.engine import Replay
    from craps_streams.replay.sources import archive_source, feed_item
    from craps_streams.rules import output_to_record

    _, messages = floor
    archive_messages(tmp_path, messages)

    def run(fast):
        replay = Replay()
        out = [output_to_record(o) for item, where in archive_source(tmp_path, fast=fast)
               for o in feed_item(replay, item, where)]
        return out, replay.tally

    fast, fast_tally = run(True)
    slow, slow_tally = run(False)
    assert fast == slow and len(fast) > 500
    assert (fast_tally.read, fast_tally.applied, fast_tally.rejected, fast_tally.duplicates) == \
        (slow_tally.read, slow_tally.applied, slow_tally.rejected, slow_tally.duplicates)
    assert fast_tally.rejected > 10
