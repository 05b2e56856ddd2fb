"""`report --jobs N`: the same files as one process; and the line of where the report's time went."""
from __future__ import annotations

import pathlib
import re
import subprocess

import pytest

from craps_streams.authenticity import keyfile
from craps_streams.report import STAGES
from tests.report.report_fixtures import RING, floor, ms, write
from tests.conftest import craps_cli

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


def test_the_stages_line_says_where_the_time_went(history):
    _, run = _report(history, "stages", "--no-html")
    got = stages_of(run.stderr)
    assert list(got) == [STAGES[s] for s in ("reading", "settling", "figures", "files")]
    assert got["settling and booking"] > 0
    _, run = _report(history, "pdf", "--pdf")
    got = stages_of(run.stderr)
    assert list(got) == list(STAGES.values())  # every stage, in order, the PDF's last
    assert got["PDF (Chromium)"] > 0 and got["page"] > 0
