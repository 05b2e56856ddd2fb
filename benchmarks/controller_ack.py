"""Acknowledgement at the table: input to durable (the answer with its seq), measured at the client.

Starts `craps-streams controller` (its journal in a temporary directory on the disk under test),
then sends `--events` events through POST /events from `--clients` concurrent clients (a burst:
each client sends its next event as soon as its last is answered) over `--tables` tables, and
prints the answer latency's p50/p99/max and the journal's group commits. The broker is not needed:
with --bootstrap pointing nowhere the events are held in the journal, which is what is measured.

    python benchmarks/controller_ack.py --events 5000 --clients 50 --tables 20 --runs 3
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=5000)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--tables", type=int, default=20)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--dir", help="where the journal goes (default: the system's temporary directory)")
    p.add_argument("--bootstrap", help="a broker to forward to (default: none listening, events held)")
    args = p.parse_args()
    results = [one_run(args, r + 1) for r in range(args.runs)]
    for r in results:
        print(json.dumps({k: round(v, 2) if type(v) is float else v for k, v in r.items()}))
    print(json.dumps({"median_p50_ms": round(statistics.median(r["p50_ms"] for r in results), 2),
                      "median_p99_ms": round(statistics.median(r["p99_ms"] for r in results), 2),
                      "median_events_per_s": round(statistics.median(r["events_per_s"] for r in results))}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
