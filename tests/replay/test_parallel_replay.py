"""`craps-streams replay DIR --jobs N`: the archive by partition in several processes, the same bytes
and the same summary as one process; and the fast single-process path equal to the item by item one."""
from __future__ import annotations

import json

import pytest

from craps_streams.archive import ArchiveWriter, iter_archive_batches, partition_groups
from craps_streams.replay.engine import Replay
from craps_streams.replay.parallel import replay_archive_parallel
from craps_streams.replay.run import ReplayRun, wanted_types
from craps_streams.replay.sources import Slice, archive_source, feed_item
from tests.replay.replay_fixtures import floor_lines, messages_of
from tests.conftest import craps_cli as cli

TOPIC = "x.table-events"


def archive(out, messages) -> None:
    w = ArchiveWriter(out, TOPIC, codec="deflate", sync_interval=4_000)  # small blocks: many batches
    for p, o, k, v in messages:
        w.add(p, o, v, k)
    w.commit()


@pytest.fixture(scope="module")
def floor(tmp_path_factory):
    """A floor of 6 tables over a UTC midnight, with bad input (torn lines, malformed records,
    undecodable messages), archived over 4 partitions."""
    d = tmp_path_factory.mktemp("parallel")
    lines = floor_lines(tables=6, hours=2.0, seed=11, bad_rate=0.03)
    messages = messages_of(lines)
    archive(d / "archive", messages)
    return d, lines, messages


def test_jobs_give_the_bytes_and_summary_of_one_process(floor, tmp_path):
    d, _, _ = floor
    assert len(partition_groups(d / "archive")) == 4
    for options in ([], ["--only", "settlements,rejections"], ["--only", "none"],
                    ["--tables", "T002,T003,T005", "--since", "1767223800000", "--until", "1767227400000"]):
        one = cli("replay", str(d / "archive"), "--no-progress", *options)
        assert one.returncode == 0, one.stderr
        for jobs in ("2", "3"):
            many = cli("replay", str(d / "archive"), "--no-progress", "--jobs", jobs, *options)
            assert many.returncode == 0, many.stderr
            assert many.stdout == one.stdout, (options, jobs)
            assert many.stderr == one.stderr, (options, jobs)
        if "none" not in options:
            assert len(one.stdout.splitlines()) > 200, options
        else:
            assert one.stdout == ""
    # -o FILE as well
    cli("replay", str(d / "archive"), "--no-progress", "-o", str(tmp_path / "one.jsonl"))
    cli("replay", str(d / "archive"), "--no-progress", "-j", "2", "-o", str(tmp_path / "two.jsonl"))
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()
    full = (tmp_path / "one.jsonl").read_text().splitlines()
    assert {"WagerSettled", "MarkerPlaced", "MarkerCleared", "EventRejected"} <= \
        {json.loads(line)["type"] for line in full}


def test_a_table_on_two_partitions_keeps_them_in_one_job(floor, tmp_path):
    """A table whose events moved to another partition mid-history: its two partitions form one
    group, replayed in one process in partition order, as the single process does."""
    _, _, messages = floor
    moved, nxt = [], {}
    t002 = [m for m in messages if m[2] == b"T002"]
    late = {(p, o) for p, o, _, _ in t002[len(t002) // 2:]}
    for p, o, k, v in messages:
        q = 3 if (p, o) in late else p  # the second half of T002 (partition 2) on partition 3
        moved.append((q, nxt.get(q, 0), k, v))
        nxt[q] = nxt.get(q, 0) + 1
    archive(tmp_path / "moved", moved)
    groups = partition_groups(tmp_path / "moved")
    assert [g for g, _ in groups] == [(0,), (1,), (2, 3)]
    one = cli("replay", str(tmp_path / "moved"), "--no-progress")
    two = cli("replay", str(tmp_path / "moved"), "--no-progress", "--jobs", "2")
    assert one.returncode == two.returncode == 0, two.stderr
    assert (one.stdout, one.stderr) == (two.stdout, two.stderr)
    assert "unknown_table" not in one.stderr  # T002 kept its state across the move


def test_parallel_tally_and_outputs_in_process(floor, tmp_path):
    import io

    d, _, _ = floor
    sl = Slice(None, None, None)
    one = io.StringIO()
    run = ReplayRun(sl, None, one)
    run.feed(iter_archive_batches(d / "archive"))
    many = io.StringIO()
    result = replay_archive_parallel(d / "archive", 2, sl=sl, out=many, tmp_dir=str(tmp_path))
    assert many.getvalue() == one.getvalue()
    t1, t2 = run.tally(), result.tally
    assert (t1.read, t1.applied, t1.rejected, t1.duplicates, t1.rejections_by_reason) == \
        (t2.read, t2.applied, t2.rejected, t2.duplicates, t2.rejections_by_reason)
    assert t1.hold.lines == t2.hold.lines
    assert result.jobs == 2 and result.groups == 4
    assert not list(tmp_path.iterdir())  # the jobs' output files are gone


def test_feed_batch_equals_item_by_item(floor):
    """The batch loop (fast reader, feed_batch, summed hold) against the item by item replay of
    the same archive: the same outputs, tally and hold lines."""
    d, _, _ = floor
    slow = Replay()
    expected = [o for item, where in archive_source(d / "archive", fast=False) for o in feed_item(slow, item, where)]
    fast = Replay()
    got = [o for items in iter_archive_batches(d / "archive") for o in fast.feed_batch(items)]
    assert got == expected and len(got) > 500
    a, b = slow.tally, fast.tally
    assert (a.read, a.applied, a.rejected, a.duplicates, a.rejections_by_reason) == \
        (b.read, b.applied, b.rejected, b.duplicates, b.rejections_by_reason)
    assert a.rejected > 10 and a.hold.lines == b.hold.lines


def test_output_lines_equal_the_json_of_the_records(floor):
    from craps_streams.replay.run import LINE_OF, dumps
    from craps_streams.rules import output_to_record

    d, _, _ = floor
    replay = Replay()
    seen = set()
    for items in iter_archive_batches(d / "archive"):
        for o in replay.feed_batch(items):
            assert LINE_OF[type(o)](o) == dumps(output_to_record(o))
            seen.add(type(o).__name__)
    assert {"WagerSettled", "MarkerPlaced", "MarkerCleared", "EventRejected"} <= seen


def test_only_kinds():
    assert wanted_types(None) is None
    assert wanted_types("none") == frozenset()
    assert {c.__name__ for c in wanted_types("markers,alerts")} == \
        {"MarkerPlaced", "MarkerCleared", "SurveillanceAlerted"}
    with pytest.raises(ValueError):
        wanted_types("settlement")
