"""The simulated dealers through a controller stopped, killed -9 and started again on its journal, twice,
while they enter a floor: they wait for it, enter again what it had not answered with the same
request ids, and the journal ends with every valid entry exactly once, in the floor's order, seqs
gapless. No broker: the controller's sender points at a port where nothing listens (the events are
held at the table, which is what this is about)."""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter

from craps_streams.authenticity import keyfile
from craps_streams.controller.journal import Journal
from craps_streams.sim.dealers import deal
from craps_streams.sim.floor import floor_events
from tests.conftest import ROOT, free_port

TABLES = ["T001", "T002"]


def _controller(tmp_path, keys, n: int) -> subprocess.Popen:
    log_path = tmp_path / f"controller-{n}.log"
    env = {**os.environ, "CRAPS_SECRETS_DIR": str(tmp_path / "no-secrets")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "craps_streams.cli", "controller", "--tables", ",".join(TABLES),
         "--journal", str(tmp_path / "journal.sqlite"), "--socket", str(tmp_path / "c.sock"), "--key-file", str(keys),
         "--bootstrap", f"127.0.0.1:{free_port()}", "--new-tables", "--loglevel", "warning"],
        cwd=ROOT, env=env, stdout=open(log_path, "ab"), stderr=subprocess.STDOUT)
    proc.log_path = log_path  # type: ignore[attr-defined]
    return proc


def _wait_listening(proc, timeout=60.0) -> None:
    log_path = proc.log_path
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, log_path.read_text()
        if "controller ready" in log_path.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"the controller did not start: {log_path.read_text()}")


def test_the_dealers_reconnect_after_a_controller_is_killed_and_nothing_is_entered_twice_or_lost(tmp_path):
    keys = tmp_path / "keys.json"
    keyfile.init(keys, TABLES)
    records = list(floor_events(len(TABLES), 1.0, 11, 0.0))
    valid = Counter(r["table_id"] for r in records if type(r) is dict)
    procs = [_controller(tmp_path, keys, 0)]
    _wait_listening(procs[-1])

    async def scenario():
        # An hour of floor time at 200x: about 18 s of dealing (slack for a slow restart on a busy
        # machine), the controller killed twice meanwhile.
        dealing = asyncio.create_task(deal(records, {t: str(tmp_path / "c.sock") for t in TABLES}, speed=200.0))
        for _ in range(2):
            await asyncio.sleep(0.8)
            assert not dealing.done(), "the floor was entered before the kills"
            # Stopped first (a hung host), so entries are waiting unanswered when it is killed.
            procs[-1].send_signal(signal.SIGSTOP)
            await asyncio.sleep(0.3)
            procs[-1].send_signal(signal.SIGKILL)
            procs[-1].wait()
            await asyncio.sleep(0.3)
            procs.append(_controller(tmp_path, keys, len(procs)))
            await asyncio.get_running_loop().run_in_executor(None, _wait_listening, procs[-1])
        return await asyncio.wait_for(dealing, 120)

    try:
        entered = asyncio.run(scenario())
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(10)
    assert entered.reconnects >= 2, entered
    assert entered.reentered > 0, entered  # the unanswered entries were entered again
    assert dict(entered.acknowledged) == dict(valid) and not entered.refused
    j = Journal(tmp_path / "journal.sqlite", sync_full=False)
    try:
        for table in TABLES:
            rows = list(j._db.execute("SELECT seq, request_id FROM events WHERE table_id = ? ORDER BY seq", (table,)))
            assert [s for s, _ in rows] == list(range(1, valid[table] + 1))
            # Each entry once, in the floor's order: the request ids name the simulated seqs.
            assert [r for _, r in rows] == [f"sim.{table}.{n}" for n in range(1, valid[table] + 1)]
    finally:
        j.close()
