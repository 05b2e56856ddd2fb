"""Finance's ledger's lag on a live floor: 200 tables at 20x real time through a settling worker
into the ledger, on SQLite and on PostgreSQL.

    python3 benchmarks/ledger_lag.py [--tables 200] [--speed 20] [--seconds 60] [--runs 5] [--db sqlite,postgresql]

Lag: from a settlement's commit to the commit of its row in the ledger's database. A
read_committed consumer of the settlements topic notes when each record becomes readable (its
commit, as any reader sees it: benchmarks/floor_view.py's Committed); a reader of the ledger's
database reads its consumed_offsets every --poll seconds: the ledger commits each partition's
position in the same transaction as the rows of the records before it, so the first read that
finds a partition's position past an offset is when that record's row was committed (late by at
most the poll's interval and the read's own time). Both clocks are this process's. The first
--warmup seconds of each run are left out (the ledger and the worker starting, the groups forming).

Each run is a fresh floor (its own topics, worker, ledger and database); the figures are each
run's p50 and p99, and the medians of the runs'. The ledger is the real command
(`craps-streams ledger`). PostgreSQL: a server of the benchmark's own started by
infra/postgres/postgres.sh (Debian's package, TLS, the ledger's login, fsync on as a floor's), in
a temporary directory, a fresh database per run. SQLite: WAL, synchronous=FULL, a temporary file.

Needs the broker (`make kafka-up`) with the `ledger` role's login (`kafka.sh up` makes it);
CRAPS_KAFKA_BOOTSTRAP (default 127.0.0.1:9092).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import sqlalchemy  # noqa: E402

from benchmarks.floor_view import Committed, cpu_seconds, percentile, stop_all  # noqa: E402
from craps_streams.kafka.topics import delete_floor  # noqa: E402
from tests.conftest import free_port  # noqa: E402

POSTGRES_SH = ROOT / "infra" / "postgres" / "postgres.sh"


class Positions(threading.Thread):
    """The ledger database's consumed_offsets of one topic, read every `poll_s`: for each
    partition, the times its position first passed each offset ((partition, offset) -> time)."""

    def __init__(self, url: str, topic: str, poll_s: float):
        super().__init__(daemon=True)
        # A plain engine, not the ledger's: its SQLite engine begins every transaction IMMEDIATE (a
        # writer's lock), and this reader must not hold the ledger up.
        self.engine = sqlalchemy.create_engine(url)
        self.topic, self.poll_s = topic, poll_s
        self.known: dict[int, int] = {}
        self.at: dict[tuple[int, int], float] = {}
        self.stop = threading.Event()
        self.query = sqlalchemy.text("SELECT partition, next_offset FROM consumed_offsets WHERE topic = :topic")

    def run(self):
        while not self.stop.is_set():
            try:
                with self.engine.connect() as conn:
                    rows = conn.execute(self.query, {"topic": self.topic}).all()
            except sqlalchemy.exc.DBAPIError:  # not migrated yet
                rows = []
            now = time.time()
            for partition, position in rows:
                for offset in range(self.known.get(partition, 0), position):
                    self.at[partition, offset] = now
                self.known[partition] = max(self.known.get(partition, 0), position)
            self.stop.wait(self.poll_s)
        self.engine.dispose()


def batch_seconds(metrics_text: str) -> tuple[int, float, float, int]:
    """From the ledger's craps_ledger_batch_seconds: (batches, the upper bounds of the buckets
    holding their median and their 99th percentile, batches over 0.5 s) since it started."""
    from prometheus_client.parser import text_string_to_metric_families

    buckets = sorted((float(s.labels["le"]), s.value) for f in text_string_to_metric_families(metrics_text)
                     for s in f.samples if s.name == "craps_ledger_batch_seconds_bucket")
    total = buckets[-1][1] if buckets else 0

    def bound(q: float) -> float:
        return next((le for le, n in buckets if n >= q * total), float("nan")) if total else float("nan")
    under = dict(buckets).get(0.5, total)
    return int(total), bound(0.5), bound(0.99), int(total - under)


def postgres_env(pg_dir: pathlib.Path, port: int) -> dict:
    return {**os.environ, "PG_DIR": str(pg_dir), "PG_PORT": str(port)}


def one_run(kind: str, args, bootstrap: str, tmp: pathlib.Path, pg: dict | None, n: int) -> dict:
    tag = uuid.uuid4().hex[:8]
    prefix = f"ll{tag}."
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CRAPS_KAFKA_BOOTSTRAP": bootstrap, "CRAPS_TOPIC_PREFIX": prefix,
           "CRAPS_APP_ID": f"craps-ll-{tag}", "CRAPS_DATA_DIR": str(tmp / f"worker-{kind}-{n}")}
    if kind == "sqlite":
        db = f"sqlite:///{tmp / f'ledger-{n}.db'}"
        read_url = db
    else:
        name = f"ledger_lag_{n}"
        subprocess.run([str(POSTGRES_SH), "database", name, "--fresh"], env=pg, check=True, capture_output=True)
        db = subprocess.run([str(POSTGRES_SH), "url", "ledger", name], env=pg, check=True, capture_output=True,
                            text=True).stdout.strip()
        read_url = subprocess.run([str(POSTGRES_SH), "url", "finance", name], env=pg, check=True,
                                  capture_output=True, text=True).stdout.strip()
    cli = [sys.executable, "-m", "craps_streams.cli"]
    subprocess.run(cli + ["topics"], env=env, cwd=ROOT, check=True, capture_output=True)
    procs: list[subprocess.Popen] = []
    feed_killed = False
    committed = Committed(prefix + "settlements", bootstrap)
    positions = Positions(read_url, prefix + "settlements", args.poll)
    try:
        worker = subprocess.Popen(cli + ["worker", "--web-port", str(free_port())], env=env, cwd=ROOT,
                                  stdout=open(tmp / f"worker-{kind}-{n}.log", "wb"), stderr=subprocess.STDOUT)
        procs.append(worker)
        # The ledger's login in its environment, as make run passes it.
        metrics_port = free_port()
        ledger = subprocess.Popen(cli + ["ledger", "--metrics-port", str(metrics_port), "--loglevel", "info"], env={**env, "CRAPS_LEDGER_DB": db},
                                  cwd=ROOT, stdout=open(tmp / f"ledger-{kind}-{n}.log", "wb"), stderr=subprocess.STDOUT)
        procs.append(ledger)
        committed.start()
        positions.start()
        hours = args.seconds * args.speed / 3600 + 0.05
        feed = subprocess.Popen(cli + ["simulate", "--live", "--tables", str(args.tables), "--hours", f"{hours:.3f}",
                                       "--speed", str(args.speed), "--seed", str(7 + n)], env=env, cwd=ROOT,
                                stdout=open(tmp / f"feed-{kind}-{n}.log", "wb"), stderr=subprocess.STDOUT)
        procs.append(feed)
        started = time.time()
        load_before = os.getloadavg()[0]
        time.sleep(args.warmup)
        cpu_start = cpu_seconds(ledger.pid)
        time.sleep(args.seconds - args.warmup)
        ledger_cpu = cpu_seconds(ledger.pid) - cpu_start
        feed.terminate()
        try:
            feed.wait(20)
        except subprocess.TimeoutExpired:  # its controllers still sending: the floor has stopped either way
            print(f"  the feed did not stop within 20 s of SIGTERM: killed ({tmp / f'feed-{kind}-{n}.log'})", flush=True)
            feed.kill()
            feed_killed = True
        time.sleep(args.drain)  # the last settlements reach the ledger
        if ledger.poll() is not None:
            raise SystemExit(f"the ledger stopped: {tmp / f'ledger-{kind}-{n}.log'}")
        metrics_text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=30).read().decode()
        (tmp / f"ledger-{kind}-{n}.metrics").write_text(metrics_text)
        writes = batch_seconds(metrics_text)
    finally:
        committed.stop.set()
        positions.stop.set()
        stop_all(procs)
        committed.join(10)
        positions.join(10)
        delete_floor(prefix, bootstrap, timeout_s=10)
    lags, missing = [], 0
    for where, t in committed.at.items():
        if t < started + args.warmup:
            continue
        if where in positions.at:
            lags.append(max(0.0, positions.at[where] - t) * 1000)
        else:
            missing += 1
    return {"lags": lags, "missing": missing, "settled": len(committed.at), "ledger_cpu": ledger_cpu,
            "load": (load_before, os.getloadavg()[0]), "writes": writes,
            "measured_s": args.seconds - args.warmup, "feed_killed": feed_killed}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", type=int, default=200)
    p.add_argument("--speed", type=float, default=20)
    p.add_argument("--seconds", type=float, default=60, help="each run's floor, warmup included (default 60)")
    p.add_argument("--warmup", type=float, default=15)
    p.add_argument("--drain", type=float, default=5, help="seconds after the floor stops (default 5)")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--poll", type=float, default=0.02, help="seconds between two reads of the positions")
    p.add_argument("--db", default="sqlite,postgresql", help="sqlite, postgresql or both (default both)")
    args = p.parse_args()
    bootstrap = os.environ.get("CRAPS_KAFKA_BOOTSTRAP", "127.0.0.1:9092")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="craps-ledger-lag-"))
    # Under /tmp: the `postgres` user must enter it.
    pg_dir = pathlib.Path(tempfile.mkdtemp(prefix="craps-ledger-lag-pg-"))
    kinds = args.db.split(",")
    pg = postgres_env(pg_dir, free_port()) if "postgresql" in kinds else None
    results: dict[str, list[dict]] = {k: [] for k in kinds}
    keep = False  # a run that measured nothing keeps its logs (the worker's, the ledger's, the feed's)
    try:
        if pg is not None:
            subprocess.run([str(POSTGRES_SH), "up"], env=pg, check=True, capture_output=True)
        print(f"{args.tables} tables at {args.speed:g}x real time, {args.seconds:g} s a run ({args.warmup:g} s "
              f"warmup left out), {args.runs} runs per database, positions read every {args.poll * 1000:.0f} ms",
              flush=True)
        for n in range(args.runs):  # the databases' runs interleaved: each sees the same machine
            for kind in kinds:
                r = one_run(kind, args, bootstrap, tmp, pg, n)
                results[kind].append(r)
                lags = r["lags"]
                print(f"  {kind} run {n + 1}: {len(lags):,} settlements, lag p50 {statistics.median(lags):.0f} ms, "
                      f"p99 {percentile(lags, 0.99):.0f} ms, max {max(lags):.0f} ms; {r['missing']} not in the ledger "
                      f"by the end; {r['writes'][0]:,} batches, their write p50 <= {r['writes'][1] * 1000:.0f} ms, "
                      f"p99 <= {r['writes'][2] * 1000:.0f} ms, {r['writes'][3]} over 500 ms; the ledger's CPU {r['ledger_cpu'] / r['measured_s']:.0%} of a core; "
                      f"load {r['load'][0]:.1f} -> {r['load'][1]:.1f}" if lags else
                      f"  {kind} run {n + 1}: no settlement measured: {r['settled']:,} settlements committed in "
                      f"the run, {r['missing']:,} of those after the warmup not in the ledger; the run's logs kept "
                      f"in {tmp}", flush=True)
                if not lags or r["feed_killed"]:
                    keep = True
    finally:
        if pg is not None:
            subprocess.run([str(POSTGRES_SH), "stop"], env=pg, capture_output=True)
        shutil.rmtree(pg_dir, ignore_errors=True)
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    for kind, runs in results.items():
        measured = [r for r in runs if r["lags"]]
        if not measured:
            continue
        p50 = statistics.median(statistics.median(r["lags"]) for r in measured)
        p99 = statistics.median(percentile(r["lags"], 0.99) for r in measured)
        rate = statistics.median(len(r["lags"]) / r["measured_s"] for r in measured)
        print(f"{kind}: lag settlement commit -> ledger row commit, medians of {len(measured)} runs: "
              f"p50 {p50:.0f} ms, p99 {p99:.0f} ms ({rate:,.0f} settlements/s; "
              f"{sum(r['missing'] for r in measured)} not in the ledger by a run's end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
