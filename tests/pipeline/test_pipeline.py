"""The live pipeline on the real broker: what the worker settles equals what replay settles."""
from __future__ import annotations

import collections
import signal

import pytest

from craps_streams.codec import decode_output, encode_output
from craps_streams.replay.engine import Replay, json_lines
from craps_streams.kafka.reader import read_committed
from craps_streams.rules import output_to_record
from craps_streams.sim.floor import floor_events
from craps_streams.codec import to_json_line

from tests.conftest import wait_for

pytestmark = pytest.mark.kafka


def write_floor(path, tables=5, hours=1.0, seed=11, bad_rate=0.03) -> list[str]:
    lines = [r if type(r) is str else to_json_line(r) for r in floor_events(tables, hours, seed, bad_rate)]
    path.write_text("\n".join(lines) + "\n")
    return lines


def replayed(lines: list[str]):
    replay = Replay()
    outputs = []
    for record, where in json_lines(lines, "floor"):
        outputs.extend(replay.feed_record(record, where))
    return outputs, replay.tally


def committed(pipeline, name: str) -> list[dict]:
    return [decode_output(m.value) | {"_raw": m.value} for m in read_committed(pipeline.prefix + name, "admin", bootstrap=pipeline.bootstrap)]


def expected_settlement_bytes(outputs) -> dict[str, bytes]:
    return {o.id: encode_output(output_to_record(o)) for o in outputs if type(o).__name__ == "WagerSettled"}


def test_worker_settles_exactly_what_replay_settles(pipeline, tmp_path):
    lines = write_floor(tmp_path / "floor.jsonl")
    outputs, tally = replayed(lines)
    expected = expected_settlement_bytes(outputs)
    assert len(expected) > 200 and tally.rejected > 5

    pipeline.start_worker()
    pipeline.run("produce", str(tmp_path / "floor.jsonl"), "--quiet")
    settled = wait_for(lambda: (s := committed(pipeline, "settlements")) and len(s) >= len(expected) and s,
                       180, f"{len(expected)} settlements")
    ids = [r["id"] for r in settled]
    assert len(ids) == len(set(ids)), "a settlement was written twice"
    assert sorted(ids) == sorted(expected)
    for r in settled:  # byte for byte, after sorting by id
        assert r["_raw"] == expected[r["id"]]

    rejections = wait_for(lambda: (r := committed(pipeline, "rejections")) and len(r) >= tally.rejected and r,
                          60, f"{tally.rejected} rejections")
    assert collections.Counter(r["reason"] for r in rejections if r["reason"] != "undecodable") + \
        collections.Counter("malformed" for r in rejections if r["reason"] == "undecodable") == \
        collections.Counter(tally.rejections_by_reason)
    # The torn lines arrive with their raw bytes and their Kafka coordinates: nothing is lost.
    torn = [r for r in rejections if r["reason"] == "undecodable"]
    assert torn and all(r["raw"] and r["offset"] is not None for r in torn)


def test_worker_restart_resumes_from_changelog_with_nothing_lost_or_repeated(pipeline, tmp_path):
    lines = write_floor(tmp_path / "floor.jsonl", tables=4, hours=1.0, seed=23, bad_rate=0.0)
    outputs, _ = replayed(lines)
    expected = expected_settlement_bytes(outputs)
    half = len(lines) // 2
    (tmp_path / "first.jsonl").write_text("\n".join(lines[:half]) + "\n")
    (tmp_path / "second.jsonl").write_text("\n".join(lines[half:]) + "\n")
    first_expected = expected_settlement_bytes(replayed(lines[:half])[0])

    worker = pipeline.start_worker("a")
    pipeline.run("produce", str(tmp_path / "first.jsonl"), "--quiet")
    wait_for(lambda: len(committed(pipeline, "settlements")) >= len(first_expected), 180, "first half settled")
    pipeline.stop_worker(worker, signal.SIGKILL)  # a crash, not a clean shutdown

    # A fresh data directory: the table states must come back from the changelog topic.
    pipeline.start_worker("b")
    pipeline.run("produce", str(tmp_path / "second.jsonl"), "--quiet")
    settled = wait_for(lambda: (s := committed(pipeline, "settlements")) and len(s) >= len(expected) and s,
                       240, f"{len(expected)} settlements after the restart")
    ids = [r["id"] for r in settled]
    assert len(ids) == len(set(ids)), "a settlement was written twice"
    assert set(ids) == set(expected)
    for r in settled:
        assert r["_raw"] == expected[r["id"]]


def test_forged_events_on_the_broker_are_rejected_and_the_honest_ones_settle_exactly_once(pipeline, tmp_path):
    """Forged throws and wagers (a made-up tag, a tag replayed from another event, a retired key,
    table B under table A's key, no tag, an unknown key) produced between the honest events of a
    tagged floor: every one rejected and alerted, and the honest events settle exactly as their
    replay does: 0 lost, 0 duplicated."""
    from craps_streams.authenticity import FORGED_EVENT, TagCheck, keyfile
    from tests.authenticity.test_forged_events import RING, forgeries, honest_floor

    floor = honest_floor()
    forged = forgeries(floor)
    mixed = list(floor)
    for i, record, _ in sorted(forged, key=lambda f: -f[0]):
        mixed.insert(i, record)
    (tmp_path / "attacked.jsonl").write_text("\n".join(to_json_line(r) for r in mixed) + "\n")
    replay = Replay(tags=TagCheck(RING))
    outputs = [o for record, where in json_lines([to_json_line(r) for r in floor], "floor")
               for o in replay.feed_record(record, where)]
    expected = expected_settlement_bytes(outputs)
    assert len(expected) > 50

    ring = keyfile.save(RING, tmp_path / "keys" / "table-keys.json")
    pipeline.env["CRAPS_TABLE_KEYS"] = str(ring)  # the floor's key ring, for the worker
    pipeline.start_worker()
    pipeline.run("produce", str(tmp_path / "attacked.jsonl"), "--quiet", "--no-tags")  # the bytes as forged
    settled = wait_for(lambda: (s := committed(pipeline, "settlements")) and len(s) >= len(expected) and s,
                       180, f"{len(expected)} settlements")
    ids = [r["id"] for r in settled]
    lost, duplicated = set(expected) - set(ids), len(ids) - len(set(ids))
    assert (len(lost), duplicated) == (0, 0)
    assert set(ids) == set(expected)
    for r in settled:
        assert r["_raw"] == expected[r["id"]]
    rejections = wait_for(lambda: (r := [x for x in committed(pipeline, "rejections")
                                         if x["reason"] in ("bad_signature", "unknown_key")])
                          and len(r) >= len(forged) and r, 60, f"{len(forged)} forged events rejected")
    assert sorted((r["table_id"], r["seq"], r["reason"]) for r in rejections) == \
        sorted((r["table_id"], r["seq"], reason) for _, r, reason in forged)
    alerts = [a for a in committed(pipeline, "surveillance") if a["alert"] == FORGED_EVENT]
    assert len(alerts) == len(forged)
