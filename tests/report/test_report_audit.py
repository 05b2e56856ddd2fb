"""`report --audit FILE`: the audit's quick pass riding on the report's pass over an archive (the
settlements of the whole history, those after the period too), the same verdict and lines as
`craps-streams audit`, and the report's files unchanged by it."""
from __future__ import annotations

import json
import pathlib
import re

import pytest

from craps_streams.archive import ArchiveWriter
from craps_streams.authenticity import keyfile
from tests.conftest import craps_cli
from tests.replay.replay_fixtures import messages_of
from tests.report.report_fixtures import RING, floor, ms, write

COMMAND = re.compile(r"craps-streams report[^\n<\"]*")


@pytest.fixture(scope="module")
def archived(tmp_path_factory):
    """A signed floor of 4 tables from 21:00 to 03:00 UTC (its archive's files a UTC day each, over
    its partitions), and the settlements its replay records."""
    d = tmp_path_factory.mktemp("report-audit")
    records = floor(4, 6.0, ms("2026-01-05T21:00:00+00:00"), seed=31, bad_rate=0.01)
    keys = str(keyfile.save(RING, d / "keys.json"))
    lines = write(d / "floor.jsonl", records)
    w = ArchiveWriter(d / "archive", "x.table-events", codec="deflate", sync_interval=4_000)
    for p, o, k, v in messages_of(pathlib.Path(lines).read_text().splitlines()):
        w.add(p, o, v, k)
    w.commit()
    r = craps_cli("replay", str(d / "archive"), "--keys", keys, "--only", "settlements", "-o", str(d / "recorded.jsonl"))
    assert r.returncode == 0, r.stderr
    return d, keys, (d / "recorded.jsonl").read_text().splitlines()


def _report(d, keys, name, *extra, history=None):
    out = d / name
    run = craps_cli("report", history or str(d / "archive"), "--keys", keys, "--out", str(out), "--no-html",
                    "--no-progress", *extra)
    return out, run


def _audit(d, keys, recorded, history=None):
    return craps_cli("audit", "--history", history or str(d / "archive"), "--recorded", str(recorded), "--keys", keys)


def _audit_lines(stdout: str) -> list[str]:
    """The audit's lines a report prints after its own."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("chain ") or line.startswith("audit "))
    return lines[start:]


PERIODS = {
    "the whole history": ["--day", "2026-01-05"],  # New York's gaming day: 11:00 to 11:00 UTC
    "files after the end": ["--day", "2026-01-05", "--tz", "UTC", "--day-start", "00:00"],  # a UTC day's file unread
    "events after the end": ["--day", "2026-01-05", "--tz", "UTC", "--day-start", "02:00"],  # a file read in part
    "a range": ["--from", "2026-01-05", "--to", "2026-01-06"],
}


@pytest.mark.parametrize("period", list(PERIODS))
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_clean_recording_is_clean_as_the_audit_finds_it_and_the_report_is_unchanged(archived, period, jobs):
    """The audit rides on the pass, the settlements of the events after the period included (what
    the period leaves unread, settled after the books): the audit's own verdict and lines."""
    d, keys, recorded = archived
    name = period.replace(" ", "-")
    plain, run = _report(d, keys, f"plain-{jobs}-{name}", *PERIODS[period], "--jobs", jobs)
    assert run.returncode == 0, run.stderr
    audited, run = _report(d, keys, f"audited-{jobs}-{name}", *PERIODS[period], "--jobs", jobs,
                           "--audit", str(d / "recorded.jsonl"))
    assert run.returncode == 0, run.stdout + run.stderr
    alone = _audit(d, keys, d / "recorded.jsonl")
    assert alone.returncode == 0
    assert _audit_lines(run.stdout) == alone.stdout.splitlines()
    assert f"{len(recorded):,} settlements replayed, {len(recorded):,} recorded" in run.stdout
    for name in ("kinds.csv", "tables.csv", "shifts.csv", "floor.csv"):
        assert (plain / name).read_text() == (audited / name).read_text(), name
    a, b = json.loads((plain / "report.json").read_text()), json.loads((audited / "report.json").read_text())
    block = b.pop("audit")
    assert block["clean"] and block["replayed"] == block["recorded_settlements"] == len(recorded)
    assert COMMAND.sub("", json.dumps(a)) == COMMAND.sub("", json.dumps(b))


@pytest.mark.parametrize("how", ["a line twice", "a line left out", "a line changed", "another order"])
def test_any_other_recording_gets_the_audits_own_findings(archived, tmp_path, how):
    d, keys, recorded = archived
    lines = list(recorded)
    k = len(lines) // 3
    if how == "a line twice":
        lines.insert(k, lines[k])
    elif how == "a line left out":
        del lines[k]
    elif how == "a line changed":
        lines[k] = lines[k].replace('"won_cents":0', '"won_cents":500', 1).replace('"outcome":"lose"', '"outcome":"win"', 1)
    else:
        lines = lines[::-1]
    path = tmp_path / "recording.jsonl"
    path.write_text("\n".join(lines) + "\n")
    for jobs in ("1", "2"):
        _, run = _report(d, keys, f"bad-{how}-{jobs}", "--from", "2026-01-05", "--to", "2026-01-06", "--jobs", jobs,
                         "--audit", str(path))
        alone = _audit(d, keys, path)
        assert run.returncode == alone.returncode == (0 if how == "another order" else 1), run.stdout
        assert _audit_lines(run.stdout) == alone.stdout.splitlines()


def test_a_json_lines_history_is_audited_on_its_own_pass(archived):
    d, keys, recorded = archived
    _, run = _report(d, keys, "lines", "--day", "2026-01-05", "--audit", str(d / "recorded.jsonl"),
                     history=str(d / "floor.jsonl"))
    alone = _audit(d, keys, d / "recorded.jsonl", history=str(d / "floor.jsonl"))
    assert run.returncode == alone.returncode == 0, run.stdout + run.stderr
    assert _audit_lines(run.stdout) == alone.stdout.splitlines()


@pytest.mark.parametrize("history, extra", [("archive", ["--tables", "T001"]), ("-", [])])
def test_an_audit_of_part_of_the_history_or_of_stdin_is_refused(archived, history, extra):
    d, keys, _ = archived
    run = craps_cli("report", history if history == "-" else str(d / history), *extra, "--keys", keys,
                    "--day", "2026-01-05", "--audit", str(d / "recorded.jsonl"), "--out", str(d / "refused"))
    assert run.returncode != 0 and "--audit" in run.stderr


@pytest.mark.parametrize("period", list(PERIODS))
@pytest.mark.parametrize("jobs", [1, 2])
def test_the_pass_itself_agrees_with_a_clean_recording(archived, period, jobs):
    """No second pass: the riding audit's own lines (the period's and what followed it) agree, and
    its tally counts every event of the history, where the report's counts the period's."""
    import datetime as dt

    from craps_streams.authenticity import TagCheck
    from craps_streams.replay.agreement import PassAudit
    from craps_streams.report import GamingCalendar, Period, ReportSettings, make_report
    from tests.report.report_fixtures import NY

    d, keys, recorded = archived
    args = PERIODS[period]
    if "--tz" in args:
        start = int(args[args.index("--day-start") + 1][:2])
        cal = GamingCalendar("UTC", dt.time(start, 0), tuple((name, dt.time((start + 8 * i) % 24, 0))
                                                            for i, name in enumerate(("day", "swing", "grave"))))
    else:
        cal = NY
    first = dt.date.fromisoformat(args[1])
    last = dt.date.fromisoformat(args[3]) if "--to" in args else first
    audit = PassAudit(str(d / "recorded.jsonl"))
    try:
        report = make_report(ReportSettings(cal, Period(first, last)), str(d / "archive"), tags=TagCheck(RING),
                             jobs=jobs, audit=audit)
    finally:
        audit.close()
    assert audit.settlements == len(recorded)
    every = craps_cli("replay", str(d / "archive"), "--keys", keys, "--only", "none")
    assert f"events read {audit.tally.read:,}" in every.stderr
    if period != "the whole history" and period != "a range":
        assert report["provenance"]["history"]["events_read"] < audit.tally.read


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_archive_whose_offsets_have_a_hole_is_a_finding_of_both_audits(archived, tmp_path, jobs):
    """The audit checks the archive's index as `archive verify` does: an offset archived by no file
    (a file lost) is a finding, though every event there is settles as recorded."""
    d, keys, recorded = archived
    holed = tmp_path / "holed"
    w = ArchiveWriter(holed, "x.table-events", codec="deflate", sync_interval=4_000)
    for p, o, k, v in messages_of((d / "floor.jsonl").read_text().splitlines()):
        w.add(p, o + (5 if p == 0 and o >= 10 else 0), v, k)  # partition 0's offsets 10..14 in no file
    w.commit()
    for run in (_audit(d, keys, d / "recorded.jsonl", history=str(holed)),
                _report(d, keys, f"holed-{jobs}", *PERIODS["a range"], "--jobs", jobs,
                        "--audit", str(d / "recorded.jsonl"), history=str(holed))[1]):
        assert run.returncode == 1, run.stdout + run.stderr
        assert "offset gap: partition 0 offsets 10..14 not archived" in run.stdout
        assert "archive offsets INCONSISTENT" in run.stdout
        summary = next(line for line in run.stdout.splitlines() if line.startswith("audit FINDINGS"))
        assert f"{len(recorded):,} settlements replayed, {len(recorded):,} recorded: 0 missing, 0 extra" in summary
        assert "archive INCONSISTENT (1 offset gaps" in summary
