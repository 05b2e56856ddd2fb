"""`make run LEDGER=postgres`'s ledger, as infra/run-floor.sh starts and stops it: infra/run-ledger.sh
and infra/run-floor-cleanup.sh sourced the same way, on the real broker. The run starts a PostgreSQL
of its own (infra/postgres/postgres.sh), the ledger writes a settling floor into it (finance's
read-only login reads the rows), and a Ctrl-C stops the ledger and the PostgreSQL.

The rest of `make run` (the floor view, Prometheus, the tables' controllers) is not what this is
about; the worker is the pipeline fixture's."""
from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import tempfile

import pytest
import sqlalchemy

from tests.conftest import ROOT, free_port, terminal_sigint, wait_for
from tests.ledger.test_ledger_broker import ledger_login  # noqa: F401 - a fixture
from tests.pipeline.test_pipeline import write_floor

pytestmark = pytest.mark.kafka

# What infra/run-floor.sh does around its ledger: set -euo pipefail, the cleanup's traps, the
# ledger started, the foreground waiting (the status panel's place).
DRIVER = """set -euo pipefail
cd "$ROOT"
pids=()
started_kafka=0
started_postgres=0
source infra/run-floor-cleanup.sh
floor_stop_on_exit
source infra/run-ledger.sh
floor_ledger_start
echo "ledger: $ledger_where"
echo "started ${pids[*]} $started_postgres"
sleep 1000 &
wait $!
"""


def settlements(url: str) -> int:
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(sqlalchemy.text("SELECT count(*) FROM settlements")).scalar()
    except sqlalchemy.exc.DBAPIError:  # not migrated yet
        return 0
    finally:
        engine.dispose()


def test_ctrl_c_stops_the_ledger_and_its_postgres(ledger_login, pipeline, tmp_path):  # noqa: F811
    # Under /tmp: pytest's tmp_path sits under a root-only directory the `postgres` user cannot enter.
    pg_dir = pathlib.Path(tempfile.mkdtemp(prefix="craps-test-run-pg-"))
    env = {**pipeline.env, "ROOT": str(ROOT), "RUN": str(tmp_path / "run"), "LEDGER": "postgres",
           "LEDGER_PORT": str(free_port()), "PG_DIR": str(pg_dir), "PG_PORT": str(free_port()), "PG_FSYNC": "off",
           "PYTHONPATH": str(ROOT), "CRAPS_SECRETS_DIR": os.environ.get("CRAPS_SECRETS_DIR", "")}
    env.pop("CRAPS_LEDGER_DB", None)
    (tmp_path / "run").mkdir()
    shell = subprocess.Popen(["bash", "-c", DRIVER], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True, text=True, preexec_fn=terminal_sigint)
    worker = None
    try:
        out = []
        while not (out and out[-1].startswith("started ")):
            line = shell.stdout.readline()
            assert line, "the run ended:\n" + "".join(out)
            out.append(line)
        assert f"ledger: PostgreSQL on 127.0.0.1:{env['PG_PORT']}, database ledger" in "".join(out)
        ledger_pid, started_postgres = (int(x) for x in out[-1].split()[1:])
        assert started_postgres == 1
        pg = subprocess.run([str(ROOT / "infra/postgres/postgres.sh"), "url", "finance"], env=env, check=True,
                            capture_output=True, text=True).stdout.strip()

        worker = pipeline.start_worker()
        write_floor(tmp_path / "floor.jsonl", tables=2, hours=0.3, seed=5)
        pipeline.run("produce", str(tmp_path / "floor.jsonl"), "--quiet")
        wait_for(lambda: settlements(pg) > 0, 90, "the ledger's rows in its PostgreSQL (read as finance)")

        os.killpg(shell.pid, signal.SIGINT)  # what the terminal sends the foreground job at Ctrl-C
        shell.wait(60)
        assert shell.returncode == 0
        wait_for(lambda: not os.path.exists(f"/proc/{ledger_pid}"), 10, "the ledger to stop")
        status = subprocess.run([str(ROOT / "infra/postgres/postgres.sh"), "status"], env=env,
                                capture_output=True, text=True)
        assert status.returncode == 3, status.stdout
        log = (tmp_path / "run" / "stop.log").read_text()
        assert "postgres.sh: stopped" in log and log.rstrip().endswith("stopped")
    finally:
        if worker is not None:
            pipeline.stop_worker(worker)
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)
        subprocess.run([str(ROOT / "infra/postgres/postgres.sh"), "stop", "--immediate"], env=env,
                       capture_output=True)
        shutil.rmtree(pg_dir, ignore_errors=True)
