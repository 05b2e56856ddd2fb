"""A simulated floor entered through its controllers, settled by the worker: the settlements equal
a replay of exactly the events the controllers journaled (what they acknowledged), wager by wager,
and the simulator's bad inputs were refused at the controllers, never reaching the topic."""
from __future__ import annotations

import os

import pytest

from craps_streams.authenticity import TagCheck
from craps_streams.authenticity import keyfile
from craps_streams.codec import decode_event
from craps_streams.controller.journal import Journal
from craps_streams.replay.engine import Replay
from tests.conftest import wait_for
from tests.pipeline.test_pipeline import committed, expected_settlement_bytes

pytestmark = pytest.mark.kafka


def settles_as_the_replay_of_the_journals(pipeline, journals, stderr: str) -> int:
    """The worker's settlements equal, byte for byte, a replay of exactly what the controllers
    journaled, every journal gapless and forwarded; -> how many events they acknowledged."""
    replay = Replay(tags=TagCheck(keyfile.load(os.environ["CRAPS_TABLE_KEYS"])))
    outputs, acknowledged = [], 0
    for path in sorted(journals.glob("*.sqlite")):
        j = Journal(path, sync_full=False)
        for table in sorted(j._last):
            rows = j.events(table)
            assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
            assert all(r[3] is not None for r in rows)  # every one acknowledged by the broker
            acknowledged += len(rows)
            for seq, _, value, _ in rows:
                outputs.extend(replay.feed_record(decode_event(value), f"{table}/{seq}"))
        j.close()
    assert f"entered: {acknowledged:,} events acknowledged" in stderr
    assert replay.tally.rejections_by_reason.get("bad_signature", 0) == 0
    expected = expected_settlement_bytes(outputs)
    assert len(expected) > 20
    settled = wait_for(lambda: (s := committed(pipeline, "settlements")) and len(s) >= len(expected) and s,
                       120, f"{len(expected)} settlements")
    ids = [r["id"] for r in settled]
    assert len(ids) == len(set(ids))
    assert set(ids) == set(expected)
    for r in settled:
        assert r["_raw"] == expected[r["id"]]
    return acknowledged


def test_a_floor_entered_through_controllers_settles_as_the_replay_of_what_they_acknowledged(pipeline, tmp_path):
    journals = tmp_path / "controllers"
    pipeline.start_worker()
    run = pipeline.run("controller", "simulate", "--tables", "4", "--hours", "0.5", "--speed", "3000",
                       "--bad-rate", "0.05", "--seed", "5", "--per-controller", "2", "--journal-dir", str(journals))
    assert "refused ({'malformed'" in run.stderr or "refused ({'" in run.stderr, run.stderr
    settles_as_the_replay_of_the_journals(pipeline, journals, run.stderr)


def test_simulate_live_enters_its_floor_through_controllers(pipeline, tmp_path):
    """`simulate --live` takes the controllers' path too: its floor is in their journals, numbered
    and signed by them, and settles as their replay."""
    journals = tmp_path / "live"
    pipeline.start_worker()
    run = pipeline.run("simulate", "--live", "--tables", "3", "--hours", "0.4", "--speed", "3000", "--seed", "8",
                       "--bad-rate", "0.05", "--per-controller", "2", "--journal-dir", str(journals))
    assert sorted(p.name for p in journals.glob("*.sqlite")) == ["T001-T002.sqlite", "T003-T003.sqlite"]
    assert "refused ({'" in run.stderr, run.stderr
    settles_as_the_replay_of_the_journals(pipeline, journals, run.stderr)
