"""Archive, replay and audit on the real broker: a simulated floor through a worker, archived in
two runs (no duplicates), replayed from the archive as from the file, audited clean against the
settlements topic."""
from __future__ import annotations

import json

import pytest

from craps_streams.archive import iter_archive, load_index, verify
from tests.conftest import wait_for

pytestmark = pytest.mark.kafka


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    from craps_streams.kafka.reader import end_offsets as topic_end_offsets

    return topic_end_offsets(topic, "admin", bootstrap=bootstrap)


def settlement_count(pipeline) -> int:
    from craps_streams.kafka.reader import read_committed

    return sum(1 for _ in read_committed(pipeline.prefix + "settlements", "admin", bootstrap=pipeline.bootstrap))


def test_archive_replay_and_audit_on_kafka(pipeline, tmp_path):
    floor = tmp_path / "floor.jsonl"
    pipeline.run("simulate", "--tables", "4", "--hours", "0.75", "--seed", "4", "--bad-rate", "0.03",
                 "-o", str(floor))
    lines = floor.read_text().splitlines()
    half = len(lines) // 2
    (tmp_path / "first.jsonl").write_text("\n".join(lines[:half]) + "\n")
    (tmp_path / "second.jsonl").write_text("\n".join(lines[half:]) + "\n")
    expected = pipeline.run("replay", str(floor), "--only", "settlements").stdout.splitlines()
    assert len(expected) > 100

    pipeline.start_worker()
    archive = tmp_path / "archive"
    topic = pipeline.prefix + "table-events"

    pipeline.run("produce", str(tmp_path / "first.jsonl"), "--quiet")
    first = pipeline.run("archive", "--out", str(archive), "--no-progress")
    assert "archive OK" in first.stderr, first.stderr
    first_index = load_index(archive)
    assert sum(f["count"] for f in first_index["files"]) == half

    pipeline.run("produce", str(tmp_path / "second.jsonl"), "--quiet")
    second = pipeline.run("archive", "--out", str(archive), "--no-progress")
    assert "archive OK" in second.stderr, second.stderr
    third = pipeline.run("archive", "--out", str(archive), "--no-progress")  # nothing new
    assert "archived 0 messages" in third.stderr

    # resumable: every offset of the topic exactly once, nothing duplicated across the runs
    index = load_index(archive)
    assert index["topic"] == topic and len(index["runs"]) == 3
    offsets = [(p, o) for p, o, _ in iter_archive(archive)]
    assert len(offsets) == len(set(offsets)) == len(lines)
    ends = end_offsets(pipeline.bootstrap, topic)
    assert {p: v["next_offset"] for p, v in ((int(p), v) for p, v in index["partitions"].items())} == \
        {p: o for p, o in ends.items() if o}
    v = verify(archive)
    assert v.archive_ok and v.records == len(lines)
    # torn lines and unencodable records (sent as raw bytes) are kept raw, byte for byte
    from craps_streams.ingest.producer import wire_message
    from craps_streams.replay.engine import json_lines

    sent = [wire_message(record)[1] for record, _ in json_lines(lines, "floor")]
    not_avro = [v for v in sent if not v.startswith(b"\xc3\x01")]
    raw = [item.value for _, _, item in iter_archive(archive) if type(item) is not dict]
    assert b"{not json" in not_avro and sorted(raw) == sorted(not_avro)

    # replay from the archive == replay from the file
    from_archive = pipeline.run("replay", str(archive), "--only", "settlements").stdout.splitlines()
    assert sorted(from_archive) == sorted(expected)
    from_topic = pipeline.run("replay", "--from-topic", "--only", "settlements").stdout.splitlines()
    assert sorted(from_topic) == sorted(expected)

    # the worker's settlements audit clean against the archived history and the topic itself
    wait_for(lambda: settlement_count(pipeline) >= len(expected), 180, f"{len(expected)} settlements")
    audit = pipeline.run("audit", "--history", str(archive), "--settlements-topic", check=False)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert audit.stdout.strip().splitlines()[-1].startswith(f"audit CLEAN: {len(expected):,} settlements replayed")
    audit = pipeline.run("audit", "--from-topic", "--settlements-topic", check=False)
    assert audit.returncode == 0, audit.stdout + audit.stderr

    # and a recorded file missing one settlement is caught
    short = tmp_path / "short.jsonl"
    short.write_text("\n".join(expected[1:]) + "\n")
    audit = pipeline.run("audit", "--history", str(archive), "--recorded", str(short), check=False)
    assert audit.returncode == 1
    assert f"MISSING    {json.loads(expected[0])['id']}" in audit.stdout
