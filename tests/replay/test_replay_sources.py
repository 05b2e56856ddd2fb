"""`craps-streams replay` from JSON Lines, an archive, Avro files; tables and time slices."""
from __future__ import annotations

import json

import pytest

from craps_streams.codec import write_container
from craps_streams.archive import ArchiveWriter
from craps_streams.replay.sources import Slice, parse_time
from tests.replay.replay_fixtures import floor_lines, messages_of, replay_settlements_of, write_lines
from tests.conftest import craps_cli

TOPIC = "x.table-events"


def settlements(text: str) -> dict[str, dict]:
    out = {}
    for line in text.splitlines():
        r = json.loads(line)
        assert r["id"] not in out
        out[r["id"]] = r
    return out


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    d = tmp_path_factory.mktemp("history")
    lines = floor_lines(tables=4, hours=2.0, seed=9, bad_rate=0.02)
    write_lines(d / "floor.jsonl", lines)
    w = ArchiveWriter(d / "archive", TOPIC)
    for p, o, k, v in messages_of(lines):
        w.add(p, o, v, k)
    w.commit()
    return d, lines


def test_parse_time():
    assert parse_time("1767225600000") == 1_767_225_600_000
    assert parse_time("2026-01-01T00:00:00Z") == 1_767_225_600_000
    assert parse_time("2026-01-01") == 1_767_225_600_000
    assert parse_time("2026-01-01T01:00:00+01:00") == 1_767_225_600_000
    with pytest.raises(ValueError):
        parse_time("yesterday")


def test_jsonl_replay_still_works(history):
    d, lines = history
    r = craps_cli("replay", str(d / "floor.jsonl"), "--only", "settlements")
    assert r.returncode == 0, r.stderr
    assert settlements(r.stdout) == replay_settlements_of(lines)
    assert "events read" in r.stderr
    r = craps_cli("replay", "-", "--only", "settlements", input=(d / "floor.jsonl").read_text())
    assert r.returncode == 0 and settlements(r.stdout) == replay_settlements_of(lines)
    assert craps_cli("replay", str(d / "nope.jsonl")).returncode == 3  # a file that cannot be read


def test_archive_replay_equals_jsonl_replay(history):
    d, lines = history
    from_jsonl = craps_cli("replay", str(d / "floor.jsonl"), "--only", "settlements,alerts")
    from_archive = craps_cli("replay", str(d / "archive"), "--only", "settlements,alerts")
    assert from_archive.returncode == 0, from_archive.stderr
    assert sorted(from_archive.stdout.splitlines()) == sorted(from_jsonl.stdout.splitlines())
    assert len(from_jsonl.stdout.splitlines()) > 100
    # the tallies agree on what was applied, rejected and duplicate; the hold lines are the same
    jl, ar = from_jsonl.stderr.splitlines(), from_archive.stderr.splitlines()
    assert jl[2:] == ar[2:]
    assert jl[0].split("rejected")[0] == ar[0].split("rejected")[0]


def test_avro_files_replay(history, tmp_path):
    d, lines = history
    from craps_streams.codec import CodecError, encode_event

    def encodable(line):
        try:
            encode_event(json.loads(line))
            return True
        except (ValueError, CodecError):
            return False
    records = [json.loads(line) for line in lines if encodable(line)]
    assert len(records) > len(lines) * 0.9
    half = len(records) // 2
    write_container(tmp_path / "a.avro", records[:half])
    write_container(tmp_path / "b.avro", records[half:])
    write_lines(tmp_path / "same.jsonl", [json.dumps(r) for r in records])
    r = craps_cli("replay", str(tmp_path / "a.avro"), str(tmp_path / "b.avro"), "--only", "settlements")
    assert r.returncode == 0, r.stderr
    assert settlements(r.stdout) == replay_settlements_of((tmp_path / "same.jsonl").read_text().splitlines())


def test_tables_and_time_slice(history):
    d, lines = history
    full = replay_settlements_of(lines)
    ts = sorted(s["ts"] for s in full.values())
    since, until = ts[len(ts) // 3], ts[2 * len(ts) // 3]
    expected = {i: s for i, s in full.items()
                if s["table_id"] in ("T001", "T003") and since <= s["ts"] <= until}
    # settled in the slice but placed before it: the whole history is fed, not only the slice
    assert any(s["placed_seq"] < s["seq"] - 2 for s in expected.values())
    for source in ("floor.jsonl", "archive"):
        r = craps_cli("replay", str(d / source), "--only", "settlements", "--tables", "T001,T003",
                "--since", str(since), "--until", str(until))
        assert r.returncode == 0, r.stderr
        assert settlements(r.stdout) == expected, source
    # ISO times give the same slice boundaries
    from datetime import datetime, timezone
    iso = datetime.fromtimestamp(since / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")
    r = craps_cli("replay", str(d / "archive"), "--only", "settlements", "--tables", "T001,T003", "--since", iso,
            "--until", str(until))
    assert settlements(r.stdout) == expected


def test_slice_feeds_history_up_to_until_and_keeps_outputs_by_deciding_ts():
    sl = Slice(frozenset({"T1"}), 100, 200)
    assert sl.feeds({"table_id": "T1", "ts": 5})  # before the slice: fed (state), not reported
    assert not sl.feeds({"table_id": "T1", "ts": 201})
    assert not sl.feeds({"table_id": "T2", "ts": 150})
    assert not sl.feeds("torn line")

    class O:
        def __init__(self, ts):
            self.ts = ts
    assert [sl.keeps(O(t)) for t in (99, 100, 200, 201)] == [False, True, True, False]


def test_progress_line_on_long_runs():
    import io

    from craps_streams.cli.progress import Progress

    out = io.StringIO()
    p = Progress(True, after_s=0.0, stream=out)
    p.last -= 5
    p.tick(20_000)
    p.done()
    assert "events/s" in out.getvalue() and "20,000 events" in out.getvalue()


def test_progress_is_whole_lines_in_a_log_and_redrawn_on_a_terminal():
    """A log (make run's .run/floor.log) gets one line per look, at most one every LOG_INTERVAL_S,
    no carriage returns; a terminal gets the line redrawn in place."""
    import io

    from craps_streams.cli import Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    log, terminal = io.StringIO(), Terminal()
    for out in (log, terminal):
        p = Progress(True, "floor sent", after_s=0.0, stream=out, every=1, interval_s=0.5)
        for _ in range(3):
            p.last -= Progress.LOG_INTERVAL_S  # a look's interval gone by
            p.tick(1_000)
        p.tick(1)  # within the interval: no line
        p.done()
    lines = log.getvalue().split("\n")
    assert "\r" not in log.getvalue() and lines[-1] == "" and len(lines) == 5
    assert [x.split(" events")[0] for x in lines[:4]] == ["floor sent 1,000", "floor sent 2,000", "floor sent 3,000",
                                                           "floor sent 3,001"]
    assert terminal.getvalue().count("\r") == 4 and terminal.getvalue().count("\n") == 1
