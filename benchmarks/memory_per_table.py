"""Memory of open tables: the settling worker's per-table state, RSS per 1,000 open tables.

    python benchmarks/memory_per_table.py [--tables 2000 --minutes 30]

The worker keeps, per table it owns, the table's state (`TableState`: shooter, point, cohorts,
wagers in action, the feed's held events) and its hold book, exactly what `Replay` keeps (one
`book_event` for both). A floor of `--tables` tables is fed for `--minutes` of play (every table
open, shooters on, wagers in action, books filled), in a child process of its own, and its RSS is
measured as the memory allocated while feeding that is still held after a full collection, the
events fed freed (tracemalloc: the Python heap the states and books keep, which is what the
worker's RSS grows by per table; pymalloc's arenas hold it without much slack), per 1,000 open
tables, and the whole child's RSS beside it; and, in a run without tracemalloc, how much the process grew while feeding (RSS: the native rules core keeps its tables outside Python's allocator, where tracemalloc does not look). Two sizes by default, to see it is linear (the per-table figure stays put).
Beside it, the pause of one full collection of Python's cyclic collector with those tables held
(median of 5, wall time): the worker's event loop stands still for it, so it bounds how many tables
one worker process should own for the latency goal (docs/performance.md).
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def measure(tables: int, minutes: float, traced: bool = True) -> dict:
    from craps_streams.replay.engine import Replay
    from craps_streams.rules import record_to_event
    from craps_streams.sim.floor import floor_events

    # The simulator closes its tables at the end: the floor is taken mid-play, before the closes.
    events = [record_to_event(r) for r in floor_events(tables, minutes / 60, 3, 0.0)
              if type(r) is dict and r["type"] != "TableClosed"]
    replay = Replay()
    replay.feed_event(events[0])  # imports and first-use caches before the baseline
    replay = Replay()
    gc.collect()
    rss_before = rss_kib()
    if traced:
        tracemalloc.start()
    for i in range(0, len(events), 512):
        replay.feed_batch(events[i:i + 512])
    gc.collect()
    # The native core's tables live outside Python's allocator, where tracemalloc does not look:
    # the process's RSS growth while feeding (the events were made before it was read) counts
    # them, with the allocator's slack; measured in a run without tracemalloc (its own traces
    # would count too).
    grown_kib = rss_kib() - rss_before
    del events
    gc.collect()
    kept_kib = tracemalloc.get_traced_memory()[0] // 1024 if traced else 0
    tracemalloc.stop()
    open_tables = sum(1 for s in replay.tables.values() if not s.closed)
    in_action = sum(len(s.pending) for s in replay.tables.values())
    # What the tables cost the cyclic collector: a full collection traverses every tracked object
    # the process holds (the states' lists, dicts and slotted records), and stops the worker's
    # event loop for as long (wall time: the pause a settlement waiting behind it sees).
    pauses = []
    for _ in range(5):
        start = time.perf_counter()
        gc.collect()
        pauses.append((time.perf_counter() - start) * 1000)
    from craps_streams.accelerator.rules import chosen

    return {"tables": open_tables, "wagers_in_action": in_action, "rss_kib": kept_kib, "process_rss_kib": rss_kib(),
            "grown_kib": grown_kib, "core": chosen().name,
            "tracked": len(gc.get_objects()), "full_collection_ms": statistics.median(pauses)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, nargs="+", default=[1000, 3000])
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--untraced", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        import os

        from craps_streams.accelerator.rules import choose

        choose(os.environ.get("CRAPS_CORE") or "auto")  # as the command line chooses the core
        print(json.dumps(measure(args.tables[0], args.minutes, traced=not args.untraced)))
        return 0
    for n in args.tables:
        child = [sys.executable, __file__, "--child", "--tables", str(n), "--minutes", str(args.minutes)]
        r = json.loads(subprocess.run(child, check=True, capture_output=True, text=True).stdout)
        bare = json.loads(subprocess.run(child + ["--untraced"], check=True, capture_output=True, text=True).stdout)
        print(f"{r['tables']:,} open tables, {r['core']} rules core: the process grew by {bare['grown_kib'] / 1024:.1f} MiB "
              f"while feeding (RSS, untraced: what the native core's tables take is only seen here), "
              f"{bare['grown_kib'] / 1024 / r['tables'] * 1000:.1f} MiB per 1,000 open tables")
        print(f"{r['tables']:,} open tables ({r['wagers_in_action']:,} wagers in action, {args.minutes:g} min of "
              f"play): state + hold books {r['rss_kib'] / 1024:.1f} MiB (child RSS {r['process_rss_kib'] / 1024:.0f} MiB), "
              f"{r['rss_kib'] / 1024 / r['tables'] * 1000:.1f} MiB per 1,000 open tables; a full collection "
              f"{r['full_collection_ms']:.1f} ms (median of 5, {r['tracked']:,} tracked objects)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
