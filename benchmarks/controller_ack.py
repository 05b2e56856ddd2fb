"""Acknowledgement at the table: input to durable (the answer with its seq), measured at the client;
and, with --floor, a simulated floor at real pace through controllers to settlement.

Burst (the default): starts `craps-streams controller` (its journal in a temporary directory on
the disk under test), then sends `--events` events through POST /events from `--clients`
concurrent clients (each client sends its next event as soon as its last is answered) over
`--tables` tables, and prints the answer latency's p50/p99/max and the journal's group commits.
The broker is not needed: with --bootstrap pointing nowhere the events are held in the journal,
which is what is measured.

    python benchmarks/controller_ack.py --events 5000 --clients 50 --tables 20 --runs 5

Floor (--floor, needs the broker: CRAPS_SECRETS_DIR and CRAPS_KAFKA_BOOTSTRAP as for the tests):
each run makes a floor of its own (topics and ACLs, `craps-streams topics`), starts a settling
worker, and runs `craps-streams controller simulate --tables N --speed 1` for `--minutes` (the
simulator as the dealers, 20 tables a controller); it reads the answers' p50/p99 at the dealers
(input to durable: the target is a p99 under 20 ms) from the simulate's summary, and input to
settlement from the worker's craps_settlement_latency_seconds (the controller's stamp, taken at
the input, to the settlement committed: the target is a p99 under 100 ms; a histogram, so the p99
is the upper bound of its bucket).

    python benchmarks/controller_ack.py --floor --tables 200 --minutes 3 --runs 5

Every mode prints each run, then the medians over the runs.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def burst(url: str, tables: list[str], events: int, clients: int) -> list[float]:
    latencies: list[float] = []
    counter = iter(range(events))

    async def client(session):
        for i in counter:
            body = json.dumps({"type": "DiceThrown", "table_id": tables[i % len(tables)], "die1": 1 + i % 6,
                               "die2": 1 + i // 6 % 6}).encode()
            t0 = time.perf_counter()
            async with session.post(url + "/events", data=body) as r:
                answer = await r.json()
            latencies.append(time.perf_counter() - t0)
            assert r.status == 200, answer

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(client(session) for _ in range(clients)))
    return latencies


def one_run(args, run: int) -> dict:
    tables = [f"T{i:03d}" for i in range(1, args.tables + 1)]
    port = free_port()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        proc = subprocess.Popen(
            [sys.executable, "-m", "craps_streams.cli", "controller", "--tables", ",".join(tables),
             "--journal", str(Path(tmp) / "journal.sqlite"), "--http-port", str(port), "--shared-key-file",
             "--bootstrap", args.bootstrap or f"127.0.0.1:{free_port()}", "--loglevel", "error"],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), 1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit("the controller did not start")
                    time.sleep(0.1)
            url = f"http://127.0.0.1:{port}"
            t0 = time.perf_counter()
            lat = sorted(asyncio.run(burst(url, tables, args.events, args.clients)))
            wall = time.perf_counter() - t0
            import urllib.request

            metrics = urllib.request.urlopen(url + "/metrics").read().decode()
        finally:
            proc.terminate()
            proc.wait(15)
    commits = float(re.search(r"^craps_controller_journal_commit_seconds_count (\S+)", metrics, re.M).group(1))
    commit_sum = float(re.search(r"^craps_controller_journal_commit_seconds_sum (\S+)", metrics, re.M).group(1))
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000  # noqa: E731
    return {"run": run, "events": len(lat), "p50_ms": q(0.50), "p99_ms": q(0.99), "max_ms": lat[-1] * 1000,
            "events_per_s": len(lat) / wall, "commits": int(commits), "mean_commit_ms": commit_sum / commits * 1000}


def _wait_http(url: str, timeout_s: float) -> str:
    import urllib.request

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return urllib.request.urlopen(url, timeout=2).read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"{url} did not answer in {timeout_s:g} s")
            time.sleep(0.5)


def _bucket_p99(metrics: str, name: str) -> tuple[float, int]:
    """(upper bound of the bucket holding the 99th percentile, observations) of a histogram."""
    buckets = sorted((float("inf") if le == "+Inf" else float(le), float(n))
                     for le, n in re.findall(rf'^{name}_bucket{{le="([^"]+)"}} (\S+)', metrics, re.M))
    total = buckets[-1][1] if buckets else 0
    if not total:
        return float("nan"), 0
    return next(le for le, n in buckets if n >= 0.99 * total), int(total)


def floor_run(args, run: int) -> dict:
    """One floor at real pace through controllers, settled by a worker of its own."""
    import uuid

    tag = uuid.uuid4().hex[:8]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CRAPS_TOPIC_PREFIX": f"ack{tag}.", "CRAPS_APP_ID": f"craps-ack-{tag}"}
    cli = [sys.executable, "-m", "craps_streams.cli"]
    subprocess.run(cli + ["topics"], env=env, cwd=ROOT, check=True, capture_output=True)
    web = free_port()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        worker = subprocess.Popen(cli + ["worker", "--web-port", str(web)], env=env, cwd=ROOT,
                                  stdout=open(Path(tmp) / "worker.log", "wb"), stderr=subprocess.STDOUT)
        try:
            _wait_http(f"http://127.0.0.1:{web}/metrics", 60)
            sim = subprocess.run(cli + ["controller", "simulate", "--tables", str(args.tables), "--hours",
                                        f"{args.minutes / 60:.4f}", "--speed", "1", "--seed", str(run),
                                        "--per-controller", "20", "--journal-dir", str(Path(tmp) / "controllers")],
                                 env=env, cwd=ROOT, capture_output=True, text=True, timeout=args.minutes * 60 + 600)
            answers = re.search(r"p50 ([\d.]+) ms, p99 ([\d.]+) ms, max ([\d.]+) ms over ([\d,]+)", sim.stderr)
            if sim.returncode != 0 or answers is None:
                raise SystemExit(f"controller simulate failed ({sim.returncode}): {sim.stderr[-2000:]}")
            time.sleep(5)  # the last settlements committed
            settle_p99, settled = _bucket_p99(_wait_http(f"http://127.0.0.1:{web}/metrics", 30),
                                              "craps_settlement_latency_seconds")
        finally:
            worker.terminate()
            worker.wait(30)
    return {"run": run, "entries": int(answers.group(4).replace(",", "")), "ack_p50_ms": float(answers.group(1)),
            "ack_p99_ms": float(answers.group(2)), "ack_max_ms": float(answers.group(3)),
            "settlements": settled, "settle_p99_le_ms": settle_p99 * 1000, "load_1m": os.getloadavg()[0]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=5000)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--tables", type=int, default=20, help="tables (default 20; --floor: 200 is the target's floor)")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--floor", action="store_true", help="a simulated floor at real pace, through to settlement")
    p.add_argument("--minutes", type=float, default=3.0, help="--floor: minutes of play a run (default 3)")
    p.add_argument("--dir", help="where the journal goes (default: the system's temporary directory)")
    p.add_argument("--bootstrap", help="a broker to forward to (default: none listening, events held)")
    args = p.parse_args()
    results = []
    for r in range(args.runs):
        results.append(floor_run(args, r + 1) if args.floor else one_run(args, r + 1))
        print(json.dumps({k: round(v, 2) if type(v) is float else v for k, v in results[-1].items()}), flush=True)
    keys = ("ack_p50_ms", "ack_p99_ms", "settle_p99_le_ms") if args.floor else ("p50_ms", "p99_ms", "events_per_s")
    print(json.dumps({f"median_{k}": round(statistics.median(r[k] for r in results), 2) for k in keys}
                     | {"runs": len(results)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
