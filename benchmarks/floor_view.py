"""The floor view's lag and memory: 200 tables at 20x real time through a settling worker and one
view instance on the real broker.

    python benchmarks/floor_view.py [--tables 200] [--speed 20] [--seconds 120]

Lag: from a settlement's commit to the page's data. A read_committed consumer of the settlements
topic notes when each settlement becomes readable (that is its commit, as any reader can see it);
a client of the view's pushed floor stream (/events/floor, what the floor page renders) notes when
that table's settled count first reaches it. Both clocks are this process's. The first
--warmup seconds are left out (the view starting, the group forming).

Memory: the view process's RSS before the floor starts and at the end, per table; and the JSON size
of each table's detail (the Faust tables' values, what a restart recovers).

Environment: CRAPS_KAFKA_BOOTSTRAP (default 127.0.0.1:9092); topics and groups of its own.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
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

from tests.conftest import free_port  # noqa: E402


def rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


class Committed(threading.Thread):
    """Settlements as they become readable (read_committed): (table -> [time of k-th settlement])."""

    def __init__(self, topic: str, bootstrap: str):
        super().__init__(daemon=True)
        from streams.codec import decode_output
        from streams.kafka.settings import client_settings
        from kafka import KafkaConsumer

        self.decode = decode_output
        self.consumer = KafkaConsumer(topic, **client_settings("viewer", bootstrap), group_id=None,
                                      isolation_level="read_committed", auto_offset_reset="earliest",
                                      enable_auto_commit=False, fetch_max_wait_ms=10)
        self.seen: dict[str, list[float]] = {}
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            for messages in self.consumer.poll(timeout_ms=100).values():
                now = time.time()
                for m in messages:
                    table = self.decode(m.value)["table_id"]
                    self.seen.setdefault(table, []).append(now)
        self.consumer.close()


async def follow_floor(port: int, shown: dict[str, list[float]], stop: asyncio.Event) -> None:
    """The view's pushed floor: the time each table's settled count first reached k."""
    import aiohttp

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as http:
        async with http.get(f"http://127.0.0.1:{port}/events/floor") as r:
            pending = b""
            async for chunk in r.content.iter_any():  # a snapshot line of 200 tables is > 64 KB
                if stop.is_set():
                    return
                pending += chunk
                *lines, pending = pending.split(b"\n")
                now = time.time()
                for raw in lines:
                    if not raw.startswith(b"data: "):
                        continue
                    for row in json.loads(raw[6:])["tables"]:
                        times = shown.setdefault(row["table_id"], [])
                        while len(times) < row["settled"]:
                            times.append(now)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", type=int, default=200)
    p.add_argument("--speed", type=float, default=20)
    p.add_argument("--seconds", type=float, default=120)
    p.add_argument("--warmup", type=float, default=20)
    args = p.parse_args()
    bootstrap = os.environ.get("CRAPS_KAFKA_BOOTSTRAP", "127.0.0.1:9092")
    tag = uuid.uuid4().hex[:8]
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="craps-floor-bench-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CRAPS_KAFKA_BOOTSTRAP": bootstrap,
           "CRAPS_TOPIC_PREFIX": f"fb{tag}.", "CRAPS_APP_ID": f"craps-fb-{tag}"}
    cli = [sys.executable, "-m", "streams.cli"]
    subprocess.run(cli + ["topics"], env=env, cwd=ROOT, check=True, capture_output=True)
    view_port = free_port()
    procs = []
    try:
        procs.append(subprocess.Popen(cli + ["worker", "--web-port", str(free_port())], env=env, cwd=ROOT,
                                      stdout=open(tmp / "worker.log", "wb"), stderr=subprocess.STDOUT))
        view = subprocess.Popen(cli + ["floor", "--port", str(view_port), "--instance", "bench"],
                                env={**env, "CRAPS_FLOOR_DATADIR": str(tmp / "view")}, cwd=ROOT,
                                stdout=open(tmp / "view.log", "wb"), stderr=subprocess.STDOUT)
        procs.append(view)
        for _ in range(120):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{view_port}/api/floor", timeout=2).read()
                break
            except OSError:
                time.sleep(0.5)
        time.sleep(2)
        rss_start = rss_mb(view.pid)

        committed = Committed(f"fb{tag}.settlements", bootstrap)
        committed.start()
        shown: dict[str, list[float]] = {}
        hours = args.seconds * args.speed / 3600 + 0.05
        feed = subprocess.Popen(cli + ["simulate", "--live", "--tables", str(args.tables), "--hours", f"{hours:.3f}",
                                       "--speed", str(args.speed), "--seed", "7"], env=env, cwd=ROOT,
                                stdout=open(tmp / "feed.log", "wb"), stderr=subprocess.STDOUT)
        procs.append(feed)
        started = time.time()

        async def watch():
            stop = asyncio.Event()
            task = asyncio.create_task(follow_floor(view_port, shown, stop))
            await asyncio.sleep(args.seconds)
            feed.terminate()
            await asyncio.sleep(5)  # the last settlements reach the page
            stop.set()
            if task.done():
                task.result()  # the stream broke: say why
            task.cancel()
        asyncio.run(watch())
        committed.stop.set()
        committed.join(10)
        rss_end = rss_mb(view.pid)
        floor = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{view_port}/api/floor", timeout=60).read())
        sizes = [len(urllib.request.urlopen(f"http://127.0.0.1:{view_port}/api/table?id={t['table_id']}",
                                            timeout=60).read()) for t in floor["tables"][:20]]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()

    lags, missing = [], 0
    for table, times in committed.seen.items():
        page = shown.get(table, [])
        for k, t in enumerate(times):
            if t < started + args.warmup:
                continue
            if k < len(page):
                lags.append(max(0.0, page[k] - t) * 1000)
            else:
                missing += 1
    settled = sum(len(v) for v in committed.seen.values())
    tables = len(floor["tables"])
    print(f"floor view: {args.tables} tables at {args.speed:g}x real time for {args.seconds:g} s "
          f"({settled:,} settlements committed, {tables} tables on the page)")
    if lags:
        print(f"lag, settlement committed -> floor page data: p50 {statistics.median(lags):.0f} ms, "
              f"p99 {percentile(lags, 0.99):.0f} ms, max {max(lags):.0f} ms over {len(lags):,} settlements "
              f"(after {args.warmup:g} s warmup; {missing} not on the page by the end)")
    print(f"view memory: RSS {rss_start:.1f} MB before the floor, {rss_end:.1f} MB after: "
          f"{(rss_end - rss_start) * 1024 / max(tables, 1):.0f} KB per table")
    print(f"a table's detail as served (JSON, what its Faust tables hold): median {statistics.median(sizes) / 1024:.1f} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
