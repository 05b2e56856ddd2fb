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

CPU: the seconds of CPU the view and the settling worker took while the floor ran (/proc), and
the machine's load average before and at the end.

--profile FILE samples the view with py-spy (https://github.com/benfred/py-spy; as root, or where
ptrace is allowed) while the floor runs, writes its raw stacks to FILE and prints the view's
samples by stage (`STAGES`).

Environment: CRAPS_KAFKA_BOOTSTRAP (default 127.0.0.1:9092); topics and groups of its own.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import signal
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


def cpu_seconds(pid: int) -> float:
    """The user and system CPU time a process has taken, in seconds."""
    fields = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# The view's stages, each named by the frames that run it ("function (file" as py-spy's raw format
# writes a frame). A sample is charged to the innermost frame of its stack that names a stage.
STAGES = (
    ("folds (craps_streams/floor/folding.py)", ("(craps_streams/floor/folding.py",)),
    ("decoding the outputs (Avro)", ("decode_output (craps_streams/codec/",)),
    ("changelog writes (JSON, produce)", ("write_due (craps_streams/floor/app.py", "_store (craps_streams/floor/app.py")),
    ("pages and pushes (craps_streams/floor/web.py, JSON)", ("(craps_streams/floor/web.py",)),
    ("Faust's streams, events and acks", ("(faust/streams.py", "(faust/events.py", "(faust/channels.py",
                                         "(faust/topics.py", "(faust/transport/conductor.py",
                                         "(faust/transport/consumer.py", "(faust/agents/")),
    ("aiokafka consumer (fetch, records parsed)", ("(aiokafka/consumer/",)),
    ("aiokafka producer", ("(aiokafka/producer/",)),
    ("network (connections, TLS)", ("(aiokafka/conn.py", "ssl.py", "sslproto.py", "selector_events.py")),
    ("garbage collector", ("gc_collect_main", "collect (gc")),
)
IDLE = ("epoll_wait", "select (selectors.py", "_queue_SimpleQueue_get", "pthread_cond_timedwait",
        "PyThread_acquire_lock_timed", "wait (threading.py")
REST = "the event loop and the rest"


def stage_of(stack: list[str]) -> str:
    if any(mark in frame for frame in stack[-3:] for mark in IDLE):
        return "idle"
    for frame in reversed(stack):
        for name, marks in STAGES:
            if any(mark in frame for mark in marks):
                return name
    return REST


def print_profile(path: pathlib.Path) -> None:
    counts: dict[str, int] = {}
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if stack and n.isdigit():
            stage = stage_of(stack.split(";"))
            counts[stage] = counts.get(stage, 0) + int(n)
    busy = sum(v for k, v in counts.items() if k != "idle")
    print(f"the view's samples (py-spy, every thread; raw stacks in {path}): {busy:,} busy, "
          f"{counts.get('idle', 0):,} idle")
    for name in [n for n, _ in STAGES] + [REST]:
        if counts.get(name):
            print(f"  {name:<50}{counts[name] / max(busy, 1):>7.1%}")


def stop_all(procs: list[subprocess.Popen], timeout_s: float = 20) -> None:
    """TERM to every process still running, then KILL to any still running `timeout_s` later."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


class Committed(threading.Thread):
    """Settlements as they become readable (read_committed): (table -> [time of k-th settlement]),
    and the time each record became readable ((partition, offset) -> time)."""

    def __init__(self, topic: str, bootstrap: str):
        super().__init__(daemon=True)
        from craps_streams.codec import decode_output
        from craps_streams.kafka.settings import client_settings
        from kafka import KafkaConsumer

        self.decode = decode_output
        self.consumer = KafkaConsumer(topic, **client_settings("viewer", bootstrap), group_id=None,
                                      isolation_level="read_committed", auto_offset_reset="earliest",
                                      enable_auto_commit=False, fetch_max_wait_ms=10)
        self.seen: dict[str, list[float]] = {}
        self.at: dict[tuple[int, int], float] = {}
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            for messages in self.consumer.poll(timeout_ms=100).values():
                now = time.time()
                for m in messages:
                    table = self.decode(m.value)["table_id"]
                    self.seen.setdefault(table, []).append(now)
                    self.at[m.partition, m.offset] = now
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
    p.add_argument("--profile", type=pathlib.Path, help="sample the view with py-spy into this file")
    args = p.parse_args()
    load_before = os.getloadavg()
    bootstrap = os.environ.get("CRAPS_KAFKA_BOOTSTRAP", "127.0.0.1:9092")
    tag = uuid.uuid4().hex[:8]
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="craps-floor-bench-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CRAPS_KAFKA_BOOTSTRAP": bootstrap,
           "CRAPS_TOPIC_PREFIX": f"fb{tag}.", "CRAPS_APP_ID": f"craps-fb-{tag}"}
    cli = [sys.executable, "-m", "craps_streams.cli"]
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
        worker = procs[0]
        for _ in range(120):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{view_port}/api/floor", timeout=2).read()
                break
            except OSError:
                time.sleep(0.5)
        time.sleep(2)
        rss_start = rss_mb(view.pid)
        cpu_start = cpu_seconds(view.pid), cpu_seconds(worker.pid)
        spy = None
        if args.profile:
            spy = subprocess.Popen(["py-spy", "record", "--rate", "50", "--format", "raw", "--threads",
                                    "--pid", str(view.pid), "-o", str(args.profile)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

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
        cpu = cpu_seconds(view.pid) - cpu_start[0], cpu_seconds(worker.pid) - cpu_start[1]
        elapsed = time.time() - started
        load_end = os.getloadavg()
        if spy is not None:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
            spy.wait(60)
        rss_end = rss_mb(view.pid)
        floor = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{view_port}/api/floor", timeout=60).read())
        sizes = [len(urllib.request.urlopen(f"http://127.0.0.1:{view_port}/api/table?id={t['table_id']}",
                                            timeout=60).read()) for t in floor["tables"][:20]]
    finally:
        stop_all(procs)

    lags, missing = [], 0
    windows: dict[int, list[float]] = {}  # 20 s of the run -> its lags
    for table, times in committed.seen.items():
        page = shown.get(table, [])
        for k, t in enumerate(times):
            if t < started + args.warmup:
                continue
            if k < len(page):
                lags.append(max(0.0, page[k] - t) * 1000)
                windows.setdefault(int((t - started) // 20), []).append(lags[-1])
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
        print("  p50 / p99 by 20 s of the run: " + ", ".join(
            f"{w * 20}-{w * 20 + 20} s {statistics.median(xs):.0f} / {percentile(xs, 0.99):.0f} ms"
            for w, xs in sorted(windows.items())))
    print(f"view memory: RSS {rss_start:.1f} MB before the floor, {rss_end:.1f} MB after: "
          f"{(rss_end - rss_start) * 1024 / max(tables, 1):.0f} KB per table")
    print(f"a table's detail as served (JSON, what its Faust tables hold): median {statistics.median(sizes) / 1024:.1f} KB")
    print(f"CPU over the {elapsed:.0f} s of the floor: the view {cpu[0]:.1f} s ({cpu[0] / elapsed:.0%} of a core), "
          f"the settling worker {cpu[1]:.1f} s ({cpu[1] / elapsed:.0%}); load average "
          f"{load_before[0]:.1f} before, {load_end[0]:.1f} at the end")
    if args.profile:
        print_profile(args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
