"""The lines of the days a report's pass has left behind, written out and read back a gaming day at
a time (craps_streams/report/days.py): the same report as the lines held whole, to the byte, by
either books, in one process and in jobs; the parts of a line added back together; nothing left
on disk."""
from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import tempfile

import pytest

from craps_streams.report import build, days
from craps_streams.report.books import Line
from craps_streams.report.days import LeftDays, day_lines
from craps_streams.rules.hold import HoldLine
from tests.report.report_fixtures import floor, ms, report, write
from tests.replay.replay_fixtures import messages_of

FIRST, LAST = dt.date(2026, 1, 5), dt.date(2026, 1, 7)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """Three tables over two and a half gaming days, a few bad lines among them; and its archive."""
    from tests.report.test_report_jobs import _archive

    d = tmp_path_factory.mktemp("report-days")
    path = write(d / "floor.jsonl", floor(3, 56.0, ms("2026-01-05T12:00:00-05:00"), seed=5, bad_rate=0.01))
    archive = _archive(d / "archive", messages_of(pathlib.Path(path).read_text().splitlines()))
    return path, archive


def made(path: str, jobs: int = 1) -> str:
    rep = report(path, FIRST, LAST, jobs=jobs)
    rep.pop("provenance")
    return json.dumps(rep)


@pytest.fixture
def written(monkeypatch, tmp_path):
    """Every line written out after every batch, the shift in hand too (so lines are written in
    parts), into a temporary directory of the test's; the parts written, counted by key."""
    monkeypatch.setattr(build, "SPILL_LINES", 0)
    monkeypatch.setattr(build, "KEPT_MS", 0)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    parts: dict = {}
    real = LeftDays.write_days

    def counted(self, by_day: dict) -> None:
        for pairs in by_day.values():
            for key, _ in pairs:
                parts[key] = parts.get(key, 0) + 1
        real(self, by_day)

    monkeypatch.setattr(LeftDays, "write_days", counted)
    real_close = LeftDays.close

    def close(self) -> None:  # the files found when the report removes its directory (jobs' too)
        if self.owned and self.directory is not None:
            parts["files at the end"] = parts.get("files at the end", 0) + len(os.listdir(self.directory))
        real_close(self)

    monkeypatch.setattr(LeftDays, "close", close)
    return tmp_path, parts


@pytest.mark.parametrize("books", ["native", "python"])
def test_a_report_written_out_is_the_report_held_whole(history, written, monkeypatch, books):
    path, _ = history
    if books == "python":
        monkeypatch.setattr(build, "report_book", lambda *a, **k: None)
    with monkeypatch.context() as whole:
        whole.setattr(build, "SPILL_LINES", 1 << 62)
        held = made(path)
    tmp, parts = written
    assert not parts  # held whole: nothing was written, no directory made
    assert made(path) == held
    lines = {key: n for key, n in parts.items() if type(key) is tuple}
    assert len({key[0] for key in lines}) == 3 and max(lines.values()) > 1  # every day, lines in parts
    assert not list(tmp.iterdir())  # the directory went with the report


def test_jobs_writing_their_days_out_make_the_report_of_one_process(history, written):
    """An archive booked in two jobs, each writing the days it leaves into the parent's directory:
    the report one process makes holding its lines whole."""
    _, archive = history
    tmp, parts = written
    one = made(archive)
    assert parts
    parts.clear()
    assert made(archive, jobs=2) == one
    assert parts["files at the end"] > 3  # written by the jobs (the counts of their writes are theirs)
    assert not list(tmp.iterdir())


def test_a_failed_pass_leaves_nothing_on_disk(history, written, monkeypatch):
    path, _ = history
    tmp, parts = written
    calls = []

    def failing(self, outputs):
        calls.append(1)
        if len(calls) > 20:
            raise OSError("the disk went away")
        return real(self, outputs)

    real = build.ReportPass._book
    monkeypatch.setattr(build.ReportPass, "_book", failing)
    with pytest.raises(OSError):
        made(path)
    assert parts and not list(tmp.iterdir())


def _line(handle: int, stakes: dict) -> Line:
    return Line(HoldLine(settled=1, handle_cents=handle, collected_cents=handle), len(stakes),
                sum(s * c for s, c in stakes.items()), handle, dict(stakes))


def test_a_lines_parts_add_back_to_the_line(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    left = LeftDays()
    day = dt.date(2026, 1, 5)
    key, other = (day, "day", "T1", "fire", "fire-623a.5", ""), (day, "swing", "T1", "fire", "fire-623a.5", "")
    left.write_days({day: [(key, _line(500, {500: 1}))]})
    left.write_days({day: [(key, _line(700, {500: 2, 200: 1})), (other, _line(100, {100: 1}))]})
    held = {key: _line(1000, {1000: 1}), (dt.date(2026, 1, 6), *key[1:]): _line(5, {5: 1})}
    lines = day_lines(held, left, day)
    whole = _line(500, {500: 1})
    for part in (_line(700, {500: 2, 200: 1}), _line(1000, {1000: 1})):
        whole.merge(part)
    assert lines == {key: whole, other: _line(100, {100: 1})}
    assert held[key] == _line(1000, {1000: 1})  # the held line itself is not changed
    assert left.written == 3
    left.close()
    assert not list(tmp_path.iterdir())
    shared = LeftDays(str(tmp_path))  # a job's: the directory is the parent's to remove
    shared.write_days({day: [(key, _line(1, {1: 1}))]})
    shared.close()
    assert list(tmp_path.iterdir())
    assert days.SPILL_LINES > 0


def test_rows_written_out_make_the_same_files(history, monkeypatch, tmp_path):
    """Past `ROWS_HELD` a grain's rows are on disk (rows.py): the CSV, the JSON (a chunk of rows at
    a time) and the page are the files of the rows held, byte for byte."""
    from craps_streams.report import figures, files, rows

    path, _ = history

    def written(name: str) -> dict:
        rep = report(path, FIRST, LAST)
        out = tmp_path / name
        files.write_csv(rep, out)
        files.write_json(rep, out / "report.json")
        files.write_html(rep, out / "report.html")
        return rep, {p.name: p.read_bytes() for p in out.iterdir()}

    held, held_files = written("held")
    assert all(type(held[grain]) is list for grain in figures.COLUMNS)
    with monkeypatch.context() as small:  # the lists themselves written a few rows at a time
        small.setattr(files, "CHUNK", 3)
        small.setattr(rows, "CHUNK", 3)
        assert written("chunked")[1] == held_files
    monkeypatch.setattr(figures, "ROWS_HELD", 0)
    monkeypatch.setattr(rows, "CHUNK", 7)
    spilled, spilled_files = written("written-out")
    assert all(isinstance(spilled[grain], rows.RowFile) and spilled[grain].written for grain in figures.COLUMNS)
    assert len(spilled["kinds"]) > 7 * 3  # several chunks
    for grain in figures.COLUMNS:
        assert spilled[grain] == held[grain] and list(spilled[grain]) == held[grain]
    assert spilled_files.keys() == held_files.keys() and len(spilled_files) == 6
    for name in spilled_files:
        assert spilled_files[name] == held_files[name], name


def test_the_pass_holds_about_three_days_of_lines(history, monkeypatch):
    """Past `SPILL_LINES`, the pass holds the lines of the shifts within `KEPT_MS` of the latest:
    over two and a half gaming days, never all of them."""
    from craps_streams.authenticity import TagCheck
    from craps_streams.replay.sources import jsonl_batches
    from craps_streams.report import Period, ReportSettings
    from tests.report.report_fixtures import NY, RING

    path, _ = history
    monkeypatch.setattr(build, "KEPT_MS", 8 * 3_600_000)  # a shift on each side, on a floor this short
    rp = build.ReportPass(ReportSettings(NY, Period(FIRST, LAST)), TagCheck(RING), spill_lines=10)
    most = []
    real = build.ReportPass._leave

    def leave(self) -> None:
        real(self)
        most.append(self.held())

    monkeypatch.setattr(build.ReportPass, "_leave", leave)
    rp.feed(jsonl_batches(path))
    collected = rp.finish()
    try:
        held, written = len(collected.lines), collected.left.written
        assert most and max(most) < (held + written) / 2  # never half of the period's lines held
    finally:
        collected.left.close()


def test_a_full_temporary_directory_is_said_as_such(history, monkeypatch, capsys):
    """No room for the report's temporary files: the command says so (exit 3), not that the history
    cannot be read, and leaves nothing behind."""
    import errno

    from craps_streams.cli import main
    from tests.report.report_fixtures import RING

    path, _ = history
    monkeypatch.setattr(build, "SPILL_LINES", 0)

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "mkstemp", full)
    keys = pathlib.Path(path).with_name("keys.json")
    from craps_streams.authenticity import keyfile

    keyfile.save(RING, keys)
    code = main(["report", path, "--keys", str(keys), "--from", FIRST.isoformat(), "--to", LAST.isoformat(),
                 "--out", str(pathlib.Path(path).with_name("full")), "--no-html", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "cannot write the report's temporary files" in err and "No space left on device" in err
    assert "cannot read" not in err


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_audit_riding_on_a_pass_that_writes_its_days_out(history, written, tmp_path, jobs):
    """`report --audit`: the pass by partition writes its days out as any other; the report is the
    one held whole, and the riding audit meets every recorded settlement."""
    from craps_streams.authenticity import TagCheck, keyfile
    from craps_streams.replay.agreement import PassAudit
    from craps_streams.report import Period, ReportSettings, make_report
    from tests.conftest import craps_cli
    from tests.report.report_fixtures import NY, RING

    _, archive = history
    keys = keyfile.save(RING, tmp_path / "keys.json")
    recorded = tmp_path / "recorded.jsonl"
    r = craps_cli("replay", archive, "--keys", str(keys), "--only", "settlements", "-o", str(recorded))
    assert r.returncode == 0, r.stderr
    audit = PassAudit(str(recorded))
    try:
        rep = make_report(ReportSettings(NY, Period(FIRST, LAST)), archive, tags=TagCheck(RING), jobs=jobs,
                          audit=audit)
    finally:
        audit.close()
    _, parts = written
    assert parts and audit.settlements == len(recorded.read_text().splitlines())
    rep.pop("provenance")
    assert json.dumps(rep) == made(archive)  # the report without the audit
