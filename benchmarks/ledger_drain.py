"""Does the ledger keep up with the worker draining a backlog? Both rates, measured in one run.

    python3 benchmarks/ledger_drain.py --tables 40 --hours 2 [--db URL]

A simulated floor's table events are produced first (a backlog); a settling worker is started and
timed until its group's committed offsets reach the events' end (every event settled and
committed); then the ledger is started on the settled outputs and timed until every settlement is
a row. Both times run from the process's start (so both include starting up, joining the group and
the first fetch), and both rates are settlements per second. `--db`: the ledger's database
(default: a SQLite file in a temporary directory); a PostgreSQL URL measures that instead.

`--cpu N`: the ledger's CPU per settlement instead of its rate. After the worker has settled the
backlog, the ledger (the real command) fills a fresh database from it N times, and the CPU time of
its process (utime + stime, /proc/PID/stat) is read when its first settlements are rows and when
the last is: CPU µs per settlement over that span (starting up, imports and joining the group left
out), printed per run and as the median. `--before DIR` (a checkout of other code, e.g.
`git archive <commit> | tar -x -C DIR`) runs that code's ledger too, interleaved with this one's
(before, after, before, ...), on the same backlog, so both see the same machine: in either mode.
`--runs N`: N runs, each producing the backlog to a floor of its own and timing its worker again;
with `--before`, each run times both ledgers on its backlog, taking turns going first.

Needs the broker (`make kafka-up`) with the `ledger` role's login (`kafka.sh up` makes it).
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kafka import KafkaConsumer, TopicPartition  # noqa: E402
from sqlalchemy import text  # noqa: E402

from craps_streams.kafka.settings import client_settings, default_bootstrap  # noqa: E402
from craps_streams.kafka.topics import delete_floor  # noqa: E402
from craps_streams.ledger.store import open_engine  # noqa: E402
from craps_streams.replay.engine import Replay, json_lines  # noqa: E402
from craps_streams.settings import load, use  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def cli(env, *args, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "craps_streams.cli", *args], env=env, cwd=ROOT, **kw)


def settled_count(path: str) -> int:
    replay = Replay()
    n = 0
    with open(path) as fo:
        for record, where in json_lines(fo, path):
            n += sum(1 for o in replay.feed_record(record, where) if type(o).__name__ == "WagerSettled")
    return n


class EventsWatch:
    """Whether every table event is settled: the worker group's committed offsets at the events'
    end. One consumer for the whole watch (a group id only to read the group's offsets: it never
    subscribes, so never joins), the ends taken once (the backlog is produced before): a check
    takes milliseconds, so the worker's time is not stretched by the watch's own."""

    def __init__(self, prefix: str, app_id: str, bootstrap: str):
        topic = prefix + "table-events"
        self.consumer = KafkaConsumer(**client_settings("admin", bootstrap), group_id=app_id, enable_auto_commit=False)
        self.tps = [TopicPartition(topic, p) for p in sorted(self.consumer.partitions_for_topic(topic) or ())]
        self.ends = self.consumer.end_offsets(self.tps)

    def done(self) -> bool:
        return all((self.consumer.committed(tp) or 0) >= self.ends[tp] for tp in self.tps)

    def close(self) -> None:
        self.consumer.close()


def rows(watch) -> int:
    """The settlements in the ledger's database, counted through the watch's engine (one for the
    whole watch: a check is a count, not a new connection)."""
    try:
        with watch.connect() as conn:
            return conn.execute(text("SELECT count(*) FROM settlements")).scalar()
    except Exception:  # noqa: BLE001 - not migrated yet
        return 0


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user + system), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as fo:
        fields = fo.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ledger_cpu(env: dict, root: str, db: str, expected: int, log_path: str,
               spy: str | None = None) -> tuple[float, int]:
    """One ledger (the code at `root`) filling `db` from the backlog: (CPU seconds, settlements)
    between its first settlements written and its last. `spy`: sampled by py-spy into that file."""
    log = open(log_path, "w+")
    command = [sys.executable, "-m", "craps_streams.cli", "ledger", "--db", db, "--metrics-port", "0"]
    if spy:
        command = ["py-spy", "record", "--native", "-r", "200", "--format", "raw", "-o", spy, "--", *command]
    watch = open_engine(db)
    ledger = subprocess.Popen(command, env={**env, "PYTHONPATH": root}, cwd=root, stdout=log, stderr=subprocess.STDOUT)
    pid = ledger.pid
    try:
        first = None
        while True:
            if spy and pid == ledger.pid:  # the ledger is py-spy's child
                with open(f"/proc/{ledger.pid}/task/{ledger.pid}/children") as fo:
                    pid = int((fo.read().split() or [ledger.pid])[0])
            cpu, n = cpu_seconds(pid), rows(watch)
            if first is None and n > 0:
                first = (cpu, n)
            if n >= expected:
                return cpu - first[0], n - first[1]
            if ledger.poll() is not None:
                log.seek(0)
                raise SystemExit(f"the ledger stopped:\n{log.read()[-3000:]}")
            time.sleep(0.05)
    finally:
        if pid != ledger.pid:  # py-spy writes its samples when the ledger has stopped
            os.kill(pid, signal.SIGTERM)
        else:
            ledger.send_signal(signal.SIGTERM)
        ledger.wait(60)
        watch.dispose()


def cpu_runs(env: dict, tmp: str, expected: int, runs: int, before: str | None, db: str | None,
             spy: str | None = None) -> None:
    trees = ([("before", os.path.abspath(before))] if before else []) + [("after", os.path.abspath(ROOT))]
    per: dict[str, list[float]] = {name: [] for name, _ in trees}
    for i in range(runs):
        for name, root in trees:
            url = db or f"sqlite:///{tmp}/ledger-{name}-{i}.db"
            if db:
                reset_postgres(db)
            cpu, n = ledger_cpu(env, root, url, expected, f"{tmp}/ledger-{name}-{i}.log",
                                spy=spy and f"{spy}.{name}.{i}")
            per[name].append(cpu / n * 1e6)
            print(f"run {i + 1} {name:6}: {cpu:.2f} s CPU for {n:,} settlements, {per[name][-1]:.0f} µs each", flush=True)
    for name, values in per.items():
        print(f"{name:6} median: {statistics.median(values):.0f} µs CPU per settlement "
              f"({', '.join(f'{v:.0f}' for v in values)})")


def reset_postgres(db: str) -> None:
    engine = open_engine(db)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def ledger_seconds(env: dict, root: str, db: str, expected: int, log_path: str) -> tuple[float, float]:
    """One ledger (the code at `root`) filling `db` from the backlog: seconds from its process's
    start until every settlement is a row, and until the first is (its start: imports, the
    migration, joining the group, the first fetch)."""
    if db.startswith("postgresql"):  # a fresh database: rows kept from an earlier run would count as this one's
        reset_postgres(db)
    watch = open_engine(db)
    log = open(log_path, "w+")
    t1 = time.monotonic()
    ledger = subprocess.Popen([sys.executable, "-m", "craps_streams.cli", "ledger", "--db", db, "--metrics-port", "0"],
                              env={**env, "PYTHONPATH": root}, cwd=root, stdout=log, stderr=subprocess.STDOUT)
    first = None
    try:
        while (n := rows(watch)) < expected:
            if first is None and n > 0:
                first = time.monotonic() - t1
            if ledger.poll() is not None:
                log.seek(0)
                raise SystemExit(f"the ledger stopped:\n{log.read()[-3000:]}")
            time.sleep(0.05)
        return time.monotonic() - t1, first or 0.0
    finally:
        ledger.send_signal(signal.SIGTERM)
        ledger.wait(60)
        watch.dispose()


def drained(env: dict, prefix: str, app_id: str, bootstrap: str, history: str) -> float:
    """The backlog produced to a new floor, and the seconds its worker takes to settle it all."""
    assert cli(env, "topics", stdout=subprocess.DEVNULL).wait() == 0
    assert cli(env, "produce", history, "--quiet").wait() == 0
    watch = EventsWatch(prefix, app_id, bootstrap)
    try:
        t0 = time.monotonic()
        worker = cli(env, "worker", "--web-port", "0", stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        while not watch.done():
            time.sleep(0.05)
        worker_s = time.monotonic() - t0
    finally:
        watch.close()
    worker.send_signal(signal.SIGTERM)
    worker.wait(60)
    return worker_s


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", type=int, default=40)
    p.add_argument("--hours", type=float, default=2.0)
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--db", help="the ledger's database URL (default: SQLite in a temporary directory)")
    p.add_argument("--runs", type=int, default=1, help="runs, each on a floor of its own (the backlog produced anew)")
    p.add_argument("--cpu", type=int, metavar="N", help="measure the ledger's CPU per settlement, N runs")
    p.add_argument("--before", metavar="DIR", help="another checkout whose ledger runs interleaved with this one's "
                                                   "on the same backlog")
    p.add_argument("--spy", metavar="FILE", help="with --cpu: sample each ledger with py-spy into FILE.<code>.<run> "
                                                 "(its CPU figures then include the sampling's cost)")
    args = p.parse_args()
    use(load())  # this benchmark is an edge: its settings (the broker's logins among them) read once
    bootstrap = default_bootstrap()
    tmp = tempfile.mkdtemp(prefix="craps-ledger-bench-")
    history = f"{tmp}/floor.jsonl"
    base = {**os.environ, "CRAPS_KAFKA_BOOTSTRAP": bootstrap, "PYTHONPATH": ROOT, "CRAPS_WEB_PORT": "0"}
    assert cli(base, "simulate", "--tables", str(args.tables), "--hours", str(args.hours), "--seed", str(args.seed),
               "-o", history).wait() == 0
    expected = settled_count(history)
    print(f"backlog: {args.tables} tables x {args.hours} h, {expected:,} settlements", flush=True)
    trees = ([("before", os.path.abspath(args.before))] if args.before else []) + [("after", os.path.abspath(ROOT))]
    dialect = (args.db or "sqlite").split(":", 1)[0].split("+")[0]
    ratios: dict[str, list[float]] = {name: [] for name, _ in trees}
    for run in range(1 if args.cpu else args.runs):
        prefix, app_id = f"lb{uuid.uuid4().hex[:8]}.", f"craps-ledger-bench-{uuid.uuid4().hex[:8]}"
        env = {**base, "CRAPS_TOPIC_PREFIX": prefix, "CRAPS_APP_ID": app_id, "CRAPS_DATA_DIR": f"{tmp}/worker-{run}"}
        try:
            worker_s = drained(env, prefix, app_id, bootstrap, history)
            print(f"run {run + 1} worker: {worker_s:.1f} s, {expected / worker_s:,.0f} settlements/s", flush=True)
            if args.cpu:
                cpu_runs(env, tmp, expected, args.cpu, args.before, args.db, args.spy)
                return 0
            # the codes take turns going first, run by run: neither always meets a warmer machine
            for name, root in (trees if run % 2 == 0 else trees[::-1]):
                db = args.db or f"sqlite:///{tmp}/ledger-{name}-{run}.db"
                # Each ledger in a group of its own (an app id of its own, its grants made by
                # `topics`): one ledger's static membership left in a shared group would hold up
                # the next one's join.
                own = {**env, "CRAPS_APP_ID": f"{app_id}-{name}"}
                assert cli(own, "topics", stdout=subprocess.DEVNULL).wait() == 0
                ledger_s, start_s = ledger_seconds(own, root, db, expected, f"{tmp}/ledger-{name}-{run}.log")
                ratios[name].append(worker_s / ledger_s)
                print(f"run {run + 1} ledger {name} ({dialect}): {ledger_s:.1f} s (its first row at {start_s:.1f} s), "
                      f"{expected / ledger_s:,.0f} settlements/s ({worker_s / ledger_s:.2f}x the worker's rate)",
                      flush=True)
        finally:
            delete_floor(prefix, bootstrap, timeout_s=10)
    for name, values in ratios.items():
        print(f"ledger {name} median: {statistics.median(values):.2f}x the worker's rate "
              f"({', '.join(f'{v:.2f}' for v in values)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
