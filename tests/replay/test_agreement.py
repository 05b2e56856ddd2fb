"""The audit's quick pass (craps_streams/replay/agreement.py): a recording that is, line for line
in any order, the replay's own settlement lines is clean; any other recording is left to the
record-by-record comparison, and the audit's report is the one that comparison gives."""
from __future__ import annotations

import pytest

from craps_streams.replay import agreement
from craps_streams.replay.agreement import DistinctIds, recording_agrees
from craps_streams.replay.audit import audit_replay, run_audit
from craps_streams.replay.sources import Slice, open_history_batches
from craps_streams.rules import WagerSettled
from tests.conftest import craps_cli
from tests.replay.replay_fixtures import floor_lines, write_lines


@pytest.fixture(scope="module")
def floor(tmp_path_factory):
    """A history and the settlement lines its replay writes (`replay --only settlements`)."""
    d = tmp_path_factory.mktemp("agreement")
    write_lines(d / "floor.jsonl", floor_lines(tables=3, hours=1.0, seed=5, bad_rate=0.03))
    r = craps_cli("replay", str(d / "floor.jsonl"), "--only", "settlements", "-o", str(d / "settlements.jsonl"))
    assert r.returncode == 0, r.stderr
    lines = (d / "settlements.jsonl").read_text().splitlines()
    assert len(lines) > 100
    return d, lines


def agrees(d, text: str, pending=None):
    path = d / "candidate.jsonl"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    return recording_agrees(audit_replay(), open_history_batches(str(d / "floor.jsonl")), str(path), pending)


def interleaved(lines: list) -> list:
    """Another order: the odd lines, then the even ones reversed."""
    return lines[1::2] + lines[0::2][::-1]


@pytest.mark.parametrize("shape", ["as written", "other order", "CRLF", "blank lines and spaces"])
def test_the_replays_own_lines_agree_in_any_order_and_layout(floor, shape):
    d, lines = floor
    text = {"as written": "\n".join(lines) + "\n",
            "other order": "\n".join(interleaved(lines)) + "\n",
            "CRLF": "\r\n".join(lines) + "\r\n",
            "blank lines and spaces": "\n\n".join(f"  {line}\t" for line in lines)}[shape]
    assert agrees(d, text) == len(lines)


def changed(lines: list, how: str) -> str:
    k = len(lines) // 2
    out = list(lines)
    if how == "a byte":
        out[k] = out[k].replace('"won_cents":', '"won_cents": ', 1)  # the same JSON, not the same line
    elif how == "a line left out":
        del out[k]
    elif how == "a line twice":
        out.insert(k, out[k])
    elif how == "another output kind":
        out.insert(k, '{"cohort":"c","id":"m","table_id":"T1","type":"MarkerCleared"}')
    elif how == "two lines as one":  # split by str.splitlines, one line (and unreadable) to the audit
        out[k:k + 2] = [out[k] + "\x1c" + out[k + 1]]
    elif how == "a line swapped for another table's":
        out[k] = out[k].replace('"table_id":"', '"table_id":"X', 1)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("how", ["a byte", "a line left out", "a line twice", "another output kind",
                                 "two lines as one", "a line swapped for another table's"])
def test_any_other_recording_is_left_to_the_comparison(floor, how):
    d, lines = floor
    assert agrees(d, changed(lines, how)) is None


def test_a_recording_beyond_the_pending_bound_is_given_up(floor):
    d, lines = floor
    reversed_text = "\n".join(lines[::-1]) + "\n"
    assert agrees(d, reversed_text, pending=10) is None
    assert agrees(d, reversed_text) == len(lines)


def settled(table, seq, wager):
    return WagerSettled(wager_id=wager, table_id=table, position=1, wager="fire", outcome="lose", stake_cents=100,
                        won_cents=0, paytable="A", detail="points=0", seq=seq, ts=0, placed_seq=1,
                        id=f"{table}/{seq}/settle/{wager}")


def test_distinct_ids_vouches_only_for_ids_in_seq_order():
    ids = DistinctIds()
    assert ids.add([settled("T1", 5, "a"), settled("T1", 5, "b"), settled("T2", 3, "a"), settled("T1", 6, "a")])
    assert not DistinctIds().add([settled("T1", 5, "a"), settled("T1", 5, "a")])  # an id twice
    assert not DistinctIds().add([settled("T1", 6, "a"), settled("T1", 5, "b")])  # a seq back: cannot vouch


def test_the_audit_report_is_the_comparisons_with_or_without_the_pass(floor, monkeypatch):
    d, lines = floor
    for name, text in [("clean", "\n".join(interleaved(lines)) + "\n"), ("findings", changed(lines, "a line twice"))]:
        path = d / f"{name}.jsonl"
        path.write_text(text)
        quick = run_audit(str(d / "floor.jsonl"), Slice(), recorded=str(path))
        with monkeypatch.context() as m:
            m.setattr(agreement, "PENDING", -1)  # the pass gives up at once: the comparison alone
            compared = run_audit(str(d / "floor.jsonl"), Slice(), recorded=str(path))
        assert (quick.clean, quick.replayed, quick.recorded, quick.forged, quick.untagged, quick.lines(1000)) == \
            (compared.clean, compared.replayed, compared.recorded, compared.forged, compared.untagged,
             compared.lines(1000))
        assert quick.clean == (name == "clean")


@pytest.fixture(scope="module")
def archived(floor, tmp_path_factory):
    """The floor archived over its partitions, and its settlement lines in the archive's order."""
    from craps_streams.archive import ArchiveWriter, partition_groups
    from tests.replay.replay_fixtures import messages_of

    d, _ = floor
    out = tmp_path_factory.mktemp("agreement-archive")
    w = ArchiveWriter(out / "archive", "x.table-events", codec="deflate", sync_interval=4_000)
    for p, o, k, v in messages_of((d / "floor.jsonl").read_text().splitlines()):
        w.add(p, o, v, k)
    w.commit()
    r = craps_cli("replay", str(out / "archive"), "--only", "settlements", "-o", str(out / "settlements.jsonl"))
    assert r.returncode == 0, r.stderr
    assert len(partition_groups(out / "archive")) >= 3
    return out, (out / "settlements.jsonl").read_text().splitlines()


@pytest.mark.parametrize("jobs", [2, 3])
def test_an_archive_settled_in_processes_agrees_as_in_one(archived, jobs):
    from craps_streams.archive import partition_groups
    from craps_streams.replay.agreement import recording_agrees_in_processes
    from craps_streams.replay.engine import Replay

    out, lines = archived
    groups = partition_groups(out / "archive")
    for name, text, expected in [("same", "\n".join(lines) + "\n", len(lines)),
                                 ("other order", "\n".join(interleaved(lines)) + "\n", len(lines)),
                                 ("a line twice", changed(lines, "a line twice"), None),
                                 ("a line left out", changed(lines, "a line left out"), None)]:
        path = out / "candidate.jsonl"
        path.write_text(text)
        agreed, tally = recording_agrees_in_processes(str(out / "archive"), groups, jobs, str(path))
        assert agreed == expected, name
        if agreed is not None:  # the jobs' tallies merged: the one process's counts
            one = Replay()
            for batch in open_history_batches(str(out / "archive")):
                one.feed_batch(batch)
            assert (tally.read, tally.applied, tally.rejected, tally.rejections_by_reason) == \
                (one.tally.read, one.tally.applied, one.tally.rejected, one.tally.rejections_by_reason)


def test_the_audit_of_an_archive_with_jobs_reports_as_without(archived, monkeypatch):
    out, lines = archived
    for name, text in [("clean", "\n".join(lines) + "\n"), ("findings", changed(lines, "a line twice"))]:
        path = out / f"{name}.jsonl"
        path.write_text(text)
        reports = [run_audit(str(out / "archive"), Slice(), recorded=str(path), jobs=jobs) for jobs in (1, 2)]
        with monkeypatch.context() as m:
            m.setattr(agreement, "PENDING", -1)
            reports.append(run_audit(str(out / "archive"), Slice(), recorded=str(path)))
        shown = [(r.clean, r.replayed, r.recorded, r.forged, r.untagged, r.lines(1000)) for r in reports]
        assert shown[0] == shown[1] == shown[2], name
        assert reports[0].clean == (name == "clean")


def test_the_recordings_lines_are_read_from_bytes_as_the_audit_reads_its_text(tmp_path):
    """`_recorded_lines` on raw bytes (cut at newlines) gives the lines the comparison reads from the
    file in text mode: CR LF and lone CR, characters `str.splitlines` would split at, undecodable
    and truncated UTF-8, a byte-order mark, whitespace around."""
    from craps_streams.replay.agreement import _recorded_lines

    raw = (b'\xef\xbb\xbf{"a":1}\r\n  {"b":2}\t\r{"c":3}\x1c{"d":4}\n\n\xc2\x85{"e":5}\xc2\x85\n'
           b'{"f":"\xe2\x82"}\n\xff\xfe{"g":7}\r\r\n{"h":8}\xe2\x80\xa8{"i":9}\n \x0b\x0c \n{"j":10}')
    path = tmp_path / "odd.jsonl"
    path.write_bytes(raw)
    with open(path, encoding="utf-8", errors="replace") as f:
        audit_reads = [s for s in (line.strip() for line in f) if s]
    chunks = [raw[:raw.index(b"\n", 40) + 1], raw[raw.index(b"\n", 40) + 1:]]  # cut at a newline, as read
    assert [line for chunk in chunks for line in _recorded_lines(chunk)] == audit_reads
    assert len(audit_reads) >= 8


def _digests(parts: list[bytes]) -> list:
    out = []
    for part in parts:
        d = agreement.LineDigest()
        for k in range(0, len(part), 7):  # written in pieces, as batches come
            d.write(part[k:k + 7])
        out.append(d.sealed())
    return out


@pytest.mark.parametrize("recording, agrees", [
    (b"a\nbb\nccc\n", True),
    (b"a\nbb\ncxc\n", False),  # a byte changed
    (b"a\nbb\nccc\nd\n", False),  # a line more
    (b"a\nbb\n", False),  # a line less
    (b"bb\na\nccc\n", False),  # another order: the audit's own pass matches that line by line
    (b"a\r\nbb\nccc\n", False),  # another layout: the same
])
def test_digested_segments_agree_with_those_very_bytes_only(tmp_path, recording, agrees):
    path = tmp_path / "recorded.jsonl"
    path.write_bytes(recording)
    matching = agreement.Matching(str(path))
    try:
        matching.digested(_digests([b"a\n", b"", b"bb\nccc\n"]))  # a partition, an empty tail, the next
        assert (matching.agreed and matching.finish()) is agrees
    finally:
        matching.close()
