"""`report --jobs N`: the same files as one process; and the line of where the report's time went."""
from __future__ import annotations

import json
import pathlib
import re
import subprocess

import pytest

from craps_streams.archive import ArchiveWriter, partition_groups
from craps_streams.authenticity import keyfile
from craps_streams.report import STAGES
from tests.report.report_fixtures import RING, floor, ms, write
from tests.conftest import craps_cli
from tests.replay.replay_fixtures import messages_of

COMMAND = re.compile(r"craps-streams report[^\n<\"]*")  # the command line a report records
STAGE = re.compile(r"(?:^|, )([a-zA-Z ()]+) (\d+\.\d\d) s")


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    d = tmp_path_factory.mktemp("report-jobs")
    records = floor(4, 5.0, ms("2026-01-05T15:00:00-05:00"), seed=21, bad_rate=0.01)
    keys = keyfile.save(RING, d / "keys.json")
    return d, write(d / "floor.jsonl", records), str(keys)


def _report(history, name: str, *extra) -> tuple[pathlib.Path, subprocess.CompletedProcess]:
    d, path, keys = history
    out = d / name
    run = craps_cli("report", path, "--keys", keys, "--from", "2026-01-05", "--to", "2026-01-06", "--out", str(out), *extra)
    assert run.returncode == 0, run.stderr
    return out, run


def stages_of(stderr: str) -> dict:
    line = next(x for x in stderr.splitlines() if x.startswith("report of "))
    assert re.fullmatch(r"report of [\d,]+ events in \d+\.\d\d s: .*", line), line
    return {words: float(s) for words, s in STAGE.findall(line.split(": ", 1)[1])}


def test_jobs_make_the_same_report_as_one_process(history):
    one, _ = _report(history, "one", "--no-progress")
    two, run = _report(history, "two", "--jobs", "2")
    names = sorted(p.name for p in one.iterdir())
    assert names == sorted(p.name for p in two.iterdir()) and "report.html" in names
    for name in names:
        a, b = (one / name).read_text(), (two / name).read_text()
        if name.endswith((".json", ".html")):
            assert COMMAND.search(a) and COMMAND.search(b)
            a, b = COMMAND.sub("", a), COMMAND.sub("", b)
        assert a == b, name
    assert "id=\"plot-data\"" in (two / "report.html").read_text()
    assert "report of " not in _report(history, "quiet", "--no-progress")[1].stderr


def test_tails_shared_or_not_are_the_tails_of_one_process(history, monkeypatch):
    """With --jobs, the tails are computed in the jobs where enough lines take the lattice
    (`SHARED_LATTICE_LINES`), else in this process: the same report as one process either way."""
    import datetime as dt

    from craps_streams.metrics import unusual
    from craps_streams.report import figures
    from tests.report.report_fixtures import report

    _, path, _ = history

    def made(jobs: int) -> dict:
        unusual._tail.cache_clear()  # each tail computed where this report computes it
        rep = report(path, dt.date(2026, 1, 5), dt.date(2026, 1, 6), jobs=jobs)
        rep.pop("provenance")
        return rep

    one = made(1)
    shared = []
    real = figures.tails_in_processes
    monkeypatch.setattr(figures, "tails_in_processes", lambda c, g, jobs: shared.append(jobs) or real(c, g, jobs))
    for lines, shares in ((10**9, False), (0, True)):
        monkeypatch.setattr(figures, "SHARED_LATTICE_LINES", lines)
        assert made(2) == one, lines
        assert shared == ([2] if shares else []), lines


def test_the_stages_line_says_where_the_time_went(history):
    _, run = _report(history, "stages", "--no-html")
    got = stages_of(run.stderr)
    assert list(got) == [STAGES[s] for s in ("reading", "settling", "figures", "files")]
    assert got["settling and booking"] > 0
    _, run = _report(history, "pdf", "--pdf")
    got = stages_of(run.stderr)
    assert list(got) == list(STAGES.values())  # every stage, in order, the PDF's last
    assert got["PDF (Chromium)"] > 0 and got["page"] > 0


def _archive(out, messages) -> str:
    w = ArchiveWriter(out, "x.table-events", codec="deflate", sync_interval=4_000)
    for p, o, k, v in messages:
        w.add(p, o, v, k)
    w.commit()
    return str(out)


def _same_files(one: pathlib.Path, two: pathlib.Path) -> None:
    names = sorted(p.name for p in one.iterdir())
    assert names == sorted(p.name for p in two.iterdir()) and "kinds.csv" in names
    for name in names:
        a, b = COMMAND.sub("", (one / name).read_text()), COMMAND.sub("", (two / name).read_text())
        assert a == b, name


def test_an_archive_is_booked_in_processes_table_by_partition_as_one_process_books_it(history):
    """The pass itself split by partition group (craps_streams/report/parallel.py): the same files,
    bad events, alerts and month-to-date lines included; an archive whose groups are not runs of
    consecutive partitions (a table moved far) booked in one process, the same files again."""
    from craps_streams.report.parallel import consecutive_groups

    d, path, keys = history
    messages = messages_of(pathlib.Path(path).read_text().splitlines())
    spread = _archive(d / "spread", messages)
    assert len(partition_groups(spread)) >= 3
    moved, nxt = [], {}
    first = min(p for p, *_ in messages)
    far = max(p for p, *_ in messages)
    mover = next(k for p, _, k, _ in messages if p == first)
    late = {(p, o) for p, o, k, _ in messages if k == mover}
    late = set(sorted(late)[len(late) // 2:])
    for p, o, k, v in messages:
        q = far if (p, o) in late else p  # the second half of a table of the first partition on the last
        moved.append((q, nxt.get(q, 0), k, v))
        nxt[q] = nxt.get(q, 0) + 1
    apart = _archive(d / "apart", moved)
    from craps_streams.report import ReportSettings
    from craps_streams.report.calendar import Period
    from tests.report.report_fixtures import NY
    import datetime as dt

    settings = ReportSettings(NY, Period(dt.date(2026, 1, 5), dt.date(2026, 1, 6)))
    assert consecutive_groups(spread, settings, 1 << 62) is not None
    assert consecutive_groups(apart, settings, 1 << 62) is None
    for name, archive in (("spread", spread), ("apart", apart)):
        runs = []
        for jobs in ("1", "2", "3"):
            out = d / f"{name}-{jobs}"
            run = craps_cli("report", archive, "--keys", keys, "--from", "2026-01-05", "--to", "2026-01-06",
                            "--out", str(out), "--no-html", "--no-progress", "--jobs", jobs)
            assert run.returncode == 0, run.stderr
            runs.append(out)
        for other in runs[1:]:
            _same_files(runs[0], other)
    report = json.loads((d / "spread-2" / "report.json").read_text())
    assert report["exceptions"]["rejections"] and report["kinds"]
    # the archive's pass (its core events looked at inline) books what the JSON Lines pass books
    lines, _ = _report(history, "from-lines", "--no-html", "--no-progress")
    for name in ("kinds.csv", "tables.csv", "shifts.csv", "floor.csv"):
        assert (lines / name).read_text() == (d / "spread-1" / name).read_text(), name
