"""`craps-streams status` in a real terminal (tmux) and in a pipe, against real sources: a worker's
metrics served by prometheus_client over HTTP and the floor view's pages served by
craps_streams/floor/web.py, both over a simulated floor that goes on settling while the panel runs.

On the terminal the panel stays on one screen and is redrawn in place (two captures of the pane: the
figures and the clock change, the panel's title is in the pane's history once); in a pipe it is one
plain line per look, no escape codes."""
from __future__ import annotations

import asyncio
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time

import pytest
from aiohttp import web
from prometheus_client import generate_latest

from craps_streams.app.shell import SettlementShell
from craps_streams.app.web_security import WebConfig
from craps_streams.codec import encode_event, to_json_line
from craps_streams.floor.hub import ChangeHub
from craps_streams.floor.web import make_floor_web
from craps_streams.metrics.exporter import FloorMetrics

from tests.conftest import ROOT, free_port, wait_for
from tests.floor.replayed import ReplayedFloor
from tests.metrics.test_panel import floor_records

WIDTH, HEIGHT = 110, 32


class ServedFloor:
    """A worker's /metrics and a floor view's pages over one simulated floor, fed on demand. The
    settling shell lives on the serving loop's thread (the native core's tables stay on the thread
    that made them, as in the worker)."""

    def __init__(self, records=None, first_share: float = 0.5):
        self.records = records if records is not None else floor_records(share=1.0, gap_table="T004")
        self.first_share = first_share
        self.fed = 0
        self.metrics_port, self.floor_port = free_port(), free_port()
        self.floor = ReplayedFloor([])
        self.loop = asyncio.new_event_loop()
        self.loop_thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.loop_thread.start()
        self.runners = self.call(self._start)

    def call(self, fn, *args):
        """`fn(*args)` on the serving loop's thread."""
        async def run():
            result = fn(*args)
            return await result if asyncio.iscoroutine(result) else result
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(120)

    async def _start(self):
        self.shell = SettlementShell(lambda t: None)
        self.metrics = FloorMetrics(tables=lambda: ((s, self.shell.books.get(t)) for t, s in self.shell.states.items()))

        async def metrics(request):
            return web.Response(body=generate_latest(self.metrics.registry), content_type="text/plain")
        metrics_app = web.Application()
        metrics_app.router.add_get("/metrics", metrics)
        runners = []
        for app, port in ((metrics_app, self.metrics_port),
                          (make_floor_web(self, ChangeHub(), WebConfig(), "1"), self.floor_port)):
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            runners.append(runner)
        self._feed(int(len(self.records) * self.first_share))
        return runners

    def feed(self, n: int) -> int:
        """Settle the next `n` events; the settlements so far."""
        return self.call(self._feed, n)

    def _feed(self, n: int) -> int:
        for r in self.records[self.fed:self.fed + n]:
            handled = self.shell.handle(encode_event(r), "t", 0, self.fed)
            self.metrics.observe([handled], time.time())
            self.fed += 1
        self.floor = ReplayedFloor([to_json_line(r) for r in self.records[:self.fed]])
        return sum(line.settled for book in self.shell.books.values() for line in book.lines.values())

    # The floor view's reader (craps_streams.floor.web.FloorReader), over the folds of what was fed.
    def table_ids(self):
        return self.floor.table_ids()

    def row(self, table_id):
        return self.floor.row(table_id)

    def detail(self, table_id):
        return self.floor.detail(table_id)

    def observed(self):
        return self.floor.observed()

    def args(self) -> list[str]:
        return ["--metrics-url", f"http://127.0.0.1:{self.metrics_port}/metrics",
                "--floor-url", f"http://127.0.0.1:{self.floor_port}/", "--prometheus-url", ""]

    def close(self) -> None:
        for runner in self.runners:
            self.call(runner.cleanup)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.loop_thread.join(10)


@pytest.fixture(scope="module")
def served():
    floor = ServedFloor()
    yield floor
    floor.close()


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def test_the_panel_stays_on_one_screen_and_is_redrawn_in_place(served, tmp_path):
    assert shutil.which("tmux"), "tmux is not installed: apt-get install -y tmux (infra/setup.sh test does)"
    session = f"craps-status-{free_port()}"
    command = shlex.join([sys.executable, "-m", "craps_streams.cli", "status", "--interval", "1", *served.args(),
                          "--note", "Ctrl-C quits"]) + f" 2>{tmp_path / 'stderr'}"
    tmux("new-session", "-d", "-s", session, "-x", str(WIDTH), "-y", str(HEIGHT), "-c", str(ROOT),
         f"env PYTHONPATH={ROOT} TERM=xterm-256color CRAPS_TOPIC_PREFIX=craps.run-test. {command}; sleep 60")
    try:
        def pane():
            return tmux("capture-pane", "-p", "-t", session).rstrip("\n").split("\n")

        def history():
            return tmux("capture-pane", "-p", "-t", session, "-S", "-").split("\n")

        def settled(lines):
            m = re.search(r"settled ([\d,]+) \(", "\n".join(lines))
            return int(m.group(1).replace(",", "")) if m else None

        first = wait_for(lambda: (lambda p: p if settled(p) and any("╰" in x for x in p) else None)(pane()),
                         60, "the panel to show the floor", interval=0.3)
        total = served.feed(len(served.records))  # the floor settles the rest, T004's gap included
        assert total > settled(first)
        second = wait_for(lambda: (lambda p: p if settled(p) == total else None)(pane()),
                          30, f"the panel to show the {total} settlements", interval=0.3)

        for shot in (first, second):
            top = next(i for i, x in enumerate(shot) if x.startswith("╭─ craps-streams · craps.run-test"))
            bottom = next(i for i, x in enumerate(shot) if x.startswith("╰"))
            assert 0 <= top < bottom < HEIGHT and "Ctrl-C quits" in shot[bottom]
            assert all(len(x) <= WIDTH for x in shot)
        assert not any(re.match(r"│ T004 +SUSPENDED", x) for x in first)
        assert any(re.match(r"│ T004 +SUSPENDED", x) for x in second)
        # In place: the same rows hold the panel, and the pane's history holds one panel, not two.
        assert first.index(next(x for x in first if x.startswith("╭"))) == \
            second.index(next(x for x in second if x.startswith("╭")))
        assert sum(1 for x in history() if x.startswith("╭─ craps-streams")) == 1
        assert first[1] != second[1]  # the head's figures were redrawn

        tmux("send-keys", "-t", session, "C-c")
        wait_for(lambda: tmux("display-message", "-p", "-t", session, "#{pane_current_command}").strip() == "sleep",
                 10, "the panel to stop at Ctrl-C")
        assert "Traceback" not in (tmp_path / "stderr").read_text()
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def test_in_a_pipe_it_prints_plain_lines(served):
    served.feed(len(served.records))  # the whole floor: T004 suspended
    once = subprocess.run([sys.executable, "-m", "craps_streams.cli", "status", "--once", *served.args()],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(ROOT),
                                                                                       "PATH": "/usr/bin:/bin"})
    assert once.returncode == 0, once.stderr
    lines = once.stdout.splitlines()
    assert len(lines) == 1 and "\x1b" not in once.stdout
    assert re.match(r"\d\d:\d\d:\d\d UTC · tables 8 open \d+ suspended 1 · settled [\d,]+ \([\d.]+/s\) · hold ", lines[0])
    assert "open alerts 1 (T004:sequence_gap)" in lines[0]

    follow = subprocess.Popen([sys.executable, "-m", "craps_streams.cli", "status", "--interval", "0.5", *served.args()],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True, env={"PYTHONPATH": str(ROOT)})
    try:
        got = [follow.stdout.readline() for _ in range(3)]
    finally:
        follow.terminate()
        follow.wait(10)
    assert all(re.match(r"\d\d:\d\d:\d\d UTC · tables 8 ", x) and x.endswith("\n") for x in got), got
    assert "\x1b" not in "".join(got)

    down = subprocess.run([sys.executable, "-m", "craps_streams.cli", "status", "--once", "--metrics-url",
                           f"http://127.0.0.1:{free_port()}/metrics", "--floor-url", "", "--prometheus-url", ""],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(ROOT)})
    assert down.returncode == 5 and down.stdout.rstrip().endswith("unreachable: metrics")  # nothing up
    assert "Traceback" not in down.stderr


def test_the_panel_names_the_least_probable_line_by_the_reports_p_in_words(tmp_path):
    """On a floor whose report flags a line, the panel's "most unusual" line is that report's least
    probable line, its p to the report's digits and what it means (tests/metrics/test_one_measure.py
    holds every line's figure equal to the report's)."""
    from datetime import date

    from craps_streams.metrics.unusual import meaning, p_text
    from tests.report.report_fixtures import floor, ms, report, write

    records = floor(4, 4.0, ms("2026-03-10T09:00:00-04:00"), seed=11)
    rep = report(write(tmp_path / "floor.jsonl", records), date(2026, 3, 10))
    worst = min((r for r in rep["kinds"] if r["decisions"]), key=lambda r: r["p_value"])
    assert worst["investigate"]
    served = ServedFloor([r for r in records if type(r) is dict], first_share=1.0)
    session = f"craps-status-{free_port()}"
    width = 190
    command = shlex.join([sys.executable, "-m", "craps_streams.cli", "status", "--interval", "1", *served.args()])
    tmux("new-session", "-d", "-s", session, "-x", str(width), "-y", str(HEIGHT), "-c", str(ROOT),
         f"sleep 0.5; env PYTHONPATH={ROOT} TERM=xterm-256color {command} 2>{tmp_path / 'stderr'}; sleep 60")
    # A tmux server started earlier may keep new windows at its default size: this one is wide.
    tmux("resize-window", "-t", session, "-x", str(width), "-y", str(HEIGHT))
    try:
        line = wait_for(lambda: next((x for x in tmux("capture-pane", "-p", "-t", session).split("\n")
                                      if "most unusual" in x), None), 60, "the panel's most unusual line", interval=0.3)
        (tmp_path / "pane.txt").write_text(tmux("capture-pane", "-p", "-t", session))
        shown = line.strip("│ ").rstrip()
        assert shown.startswith(f"most unusual {worst['table_id']} {worst['wager']} ({worst['paytable']}) "
                                f"p {p_text(worst['p_value'])} (z "), (shown, tmp_path / "pane.txt")
        assert shown.endswith(f"): {meaning(worst['p_value'])}") and shown.endswith("at or below 0.05, investigate")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        served.close()


def test_the_ledgers_lag_is_read_from_its_metrics(served):
    """`status --ledger-url`: the ledger's /metrics, served as `craps-streams ledger` serves them,
    read beside the worker's; its lag in the plain line, and a ledger that does not answer named so."""
    from prometheus_client import start_http_server

    from craps_streams.ledger.metrics import LedgerMetrics

    ledger = LedgerMetrics()
    now = time.time()
    ledger.positions({("craps.run-test.settlements", 0): 10}, {("craps.run-test.settlements", 0): 25}, now,
                     {("craps.run-test.settlements", 0): int((now - 7.5) * 1000)})
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=ledger.registry)
    try:
        once = subprocess.run([sys.executable, "-m", "craps_streams.cli", "status", "--once", *served.args(),
                               "--ledger-url", f"http://127.0.0.1:{port}/metrics"],
                              cwd=ROOT, capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(ROOT)})
    finally:
        server.shutdown()
        thread.join(10)
    assert once.returncode == 0, once.stderr
    assert "· ledger 15 settlements behind, 7.5 s: falling behind" in once.stdout
    gone = subprocess.run([sys.executable, "-m", "craps_streams.cli", "status", "--once", *served.args(),
                           "--ledger-url", f"http://127.0.0.1:{port}/metrics"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(ROOT)})
    assert gone.returncode == 1 and gone.stdout.rstrip().endswith("unreachable: ledger")
