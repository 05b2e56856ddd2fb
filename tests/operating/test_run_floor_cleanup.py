"""infra/run-floor.sh's cleanup stops everything it started even when stdout is a closed pipe
(`make run 2>&1 | tee run.log`, then Ctrl-C, which ends `tee` too).

The cleanup of infra/run-floor-cleanup.sh runs here as run-floor.sh runs it (sourced, the same
traps), around stand-in processes: `sleep`s for the worker, the floor view and the feed, and for
the broker a `setsid sleep` that a stand-in kafka.sh stops after printing its status lines, as
the real one does. The real broker is not what this is about (and the shared one must stay up)."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from tests.conftest import ROOT, terminal_sigint

STANDIN_KAFKA = """#!/usr/bin/env bash
set -euo pipefail
# prints before it stops, as infra/kafka/kafka.sh does: a closed stdout must not stop it early
for i in $(seq 1 50); do echo "kafka.sh: stopping pid $(cat "$BROKER_PID") ($i)"; done
kill -TERM "$(cat "$BROKER_PID")"
echo "kafka.sh: stopped"
"""

# What infra/run-floor.sh does around its cleanup: set -euo pipefail, the traps, processes in the
# background, a foreground child that writes to stdout until it is stopped.
DRIVER = """set -euo pipefail
cd "$ROOT"
source infra/run-floor-cleanup.sh
pids=()
started_kafka=0
floor_stop_on_exit
# the broker: not a child of this shell, in a session of its own (kafka.sh starts it with setsid)
(setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >"$BROKER_PID")
started_kafka=1
for name in worker floor-view prometheus feed; do sleep 1000 & pids+=($!); done
echo "${pids[*]} $(cat "$BROKER_PID")" >"$TMP/started"
echo "craps-streams is running"
python3 -u -c 'import signal, time
signal.signal(signal.SIGINT, signal.SIG_DFL)  # ends by the signal, as a C program does, not by a traceback to a closed pipe
while True:
    print("T001 seq 1 hot_roller won $12.00", flush=True)
    time.sleep(0.02)'
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("how", ["ctrl-c", "pipe-closed"])
def test_cleanup_stops_everything_when_stdout_is_a_closed_pipe(tmp_path, how):
    kafka_sh = tmp_path / "kafka.sh"
    kafka_sh.write_text(STANDIN_KAFKA)
    kafka_sh.chmod(0o755)
    env = {**os.environ, "ROOT": str(ROOT), "TMP": str(tmp_path), "RUN": str(tmp_path / "run"),
           "KAFKA_SH": str(kafka_sh), "BROKER_PID": str(tmp_path / "broker.pid"), "STOP_TIMEOUT": "10"}
    # its own session and process group, as a terminal's foreground job; stdout and stderr one pipe
    shell = subprocess.Popen(["bash", "-c", DRIVER], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=terminal_sigint)
    try:
        assert shell.stdout.readline() == b"craps-streams is running\n"
        assert shell.stdout.readline().startswith(b"T001 seq 1")
        started = [int(p) for p in (tmp_path / "started").read_text().split()]
        assert len(started) == 5 and all(alive(p) for p in started)
        if how == "ctrl-c":
            # what the terminal sends the foreground job, `tee` included; signalled first, because a
            # writer that met the closed pipe before the signal would end on EPIPE (the other case)
            os.killpg(shell.pid, signal.SIGINT)
        shell.stdout.close()  # `tee` has gone: nobody reads stdout (nor stderr) any more
        shell.wait(30)
        deadline = time.monotonic() + 15
        while any(alive(p) for p in started) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in started if alive(p)], "left running after the cleanup"
        log = (tmp_path / "run" / "stop.log").read_text()
        assert "kafka.sh: stopped" in log and log.rstrip().endswith("stopped")
        if how == "ctrl-c":
            assert shell.returncode == 0  # a clean stop the operator asked for (make prints no Error 130)
    finally:
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)
        for p in [int(x) for x in (tmp_path / "started").read_text().split()] if (tmp_path / "started").exists() else []:
            if alive(p):
                os.kill(p, signal.SIGKILL)


def test_ctrl_c_of_make_run_reads_as_a_clean_stop(tmp_path):
    """Ctrl-C of `make run`: the run stops what it started and exits 0, so make reports no
    `make: *** [Makefile:..: run] Error 130` after a clean stop."""
    (tmp_path / "Makefile").write_text("run:\n\tbash run.sh\n")
    (tmp_path / "run.sh").write_text(f"""set -euo pipefail
RUN="{tmp_path}/run"
pids=()
started_kafka=0
source "{ROOT}/infra/run-floor-cleanup.sh"
floor_stop_on_exit
sleep 60 &
pids+=($!)
echo "craps-streams is running"
wait
""")
    # As from a terminal: not a sub-make of `make test` (which would announce its directory).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    make = subprocess.Popen(["make", "--no-print-directory", "run"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True, text=True, preexec_fn=terminal_sigint)
    try:
        assert make.stdout.readline() == "bash run.sh\n"
        assert make.stdout.readline() == "craps-streams is running\n"
        os.killpg(make.pid, signal.SIGINT)  # what the terminal sends its foreground job: make and the run
        out = make.stdout.read()
        make.wait(30)
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
    assert "craps-streams stopped" in out and "Error" not in out and "***" not in out, out
