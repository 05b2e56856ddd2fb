"""Archive replay benchmark: a simulated history written into archive container files, then replayed.

    python benchmarks/archive_replay.py [--events 10000000] [--tables 200] [--dir DIR] [--keep]

1. Write: a simulated floor of N events (streamed from the simulator, never held in memory) into an
   archive directory as `craps-streams archive` lays it out (Avro Object Container Files per
   partition and UTC day, index.json), through `ArchiveWriter`.
2. Replay: in a child process (so its memory is its own), the archive read back in offset order and
   fed to the rules core as `craps-streams replay DIR` does, outputs counted and dropped; events/s
   per CPU second (one thread: one core) and per wall second, peak RSS and RSS sampled along the way
   (flat when streaming).
Target: 150,000 events/s on one core from the Avro files, memory flat.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_EPS = 150_000
PARTITIONS = 8
EVENTS_PER_TABLE_HOUR = 420  # about what the simulator makes


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write(out: Path, events: int, tables: int, seed: int) -> dict:
    from streams.replay.archive import ArchiveWriter
    from streams.sim.floor import floor_events

    hours = events / (tables * EVENTS_PER_TABLE_HOUR) * 1.2 + 0.1
    writer = ArchiveWriter(out, "bench.table-events", sync_interval=256_000)
    offsets = [0] * PARTITIONS
    start_cpu, start = time.process_time(), time.monotonic()
    n = 0
    for record in itertools.islice(floor_events(tables, hours, seed, bad_rate=0.0), events):
        p = int(record["table_id"][1:]) % PARTITIONS
        writer.add_record(p, offsets[p], record)
        offsets[p] += 1
        n += 1
        if n % 1_000_000 == 0:
            print(f"  written {n:,} events, rss {rss_mb():.0f} MB", file=sys.stderr, flush=True)
    result = writer.commit()
    wall, cpu = time.monotonic() - start, time.process_time() - start_cpu
    size = sum(f.stat().st_size for f in out.rglob("*.avro"))
    return {"events": n, "files": len(result.files), "bytes": size, "wall_s": wall, "cpu_s": cpu,
            "peak_rss_mb": peak_rss_mb()}


def replay(out: Path) -> dict:
    from streams.replay.engine import Replay
    from streams.replay.sources import archive_source, feed_item

    r = Replay()
    outputs = 0
    samples = []
    start_cpu, start = time.process_time(), time.monotonic()
    n = 0
    feed_event = r.feed_event
    for item, where in archive_source(out):
        outputs += len(feed_event(item) if where is None else feed_item(r, item, where))
        n += 1
        if n % 500_000 == 0:
            samples.append(round(rss_mb()))
    wall, cpu = time.monotonic() - start, time.process_time() - start_cpu
    t = r.tally
    return {"events": n, "applied": t.applied, "rejected": t.rejected, "duplicates": t.duplicates,
            "settled": t.hold.total().settled, "outputs": outputs, "wall_s": wall, "cpu_s": cpu,
            "eps_cpu": n / cpu, "eps_wall": n / wall, "peak_rss_mb": peak_rss_mb(), "rss_samples_mb": samples}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--tables", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", help="archive directory (default: a temporary one, removed after)")
    ap.add_argument("--keep", action="store_true", help="keep the archive")
    ap.add_argument("--replay-only", metavar="DIR", help=argparse.SUPPRESS)  # the child process
    args = ap.parse_args()

    if args.replay_only:
        print(json.dumps(replay(Path(args.replay_only))))
        return 0

    out = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="archive-bench-"))
    if out.exists() and any(out.iterdir()):
        print(f"{out} is not empty", file=sys.stderr)
        return 2
    try:
        print(f"writing {args.events:,} simulated events ({args.tables} tables) into {out}", file=sys.stderr)
        w = write(out, args.events, args.tables, args.seed)
        print(f"write: {w['events']:,} events into {w['files']} container files ({w['bytes'] / 1e6:,.1f} MB) "
              f"in {w['wall_s']:.1f} s ({w['events'] / w['wall_s']:,.0f} events/s incl. simulation), "
              f"peak RSS {w['peak_rss_mb']:.0f} MB")
        child = subprocess.run([sys.executable, __file__, "--replay-only", str(out)], capture_output=True,
                               text=True, check=True)
        r = json.loads(child.stdout.strip().splitlines()[-1])
        print(f"replay: {r['events']:,} events (applied {r['applied']:,}, rejected {r['rejected']:,}, "
              f"duplicates {r['duplicates']:,}), {r['settled']:,} wagers settled, {r['outputs']:,} outputs")
        print(f"replay: {r['eps_cpu']:,.0f} events/s per CPU second ({r['cpu_s']:.1f} s CPU), "
              f"{r['eps_wall']:,.0f} events/s wall ({r['wall_s']:.1f} s); peak RSS {r['peak_rss_mb']:.0f} MB; "
              f"RSS every 500k events (MB): {r['rss_samples_mb']}")
        verdict = "meets" if r["eps_cpu"] >= TARGET_EPS else "MISSES"
        print(f"target {TARGET_EPS:,} events/s on one core from Avro files: {verdict}")
        return 0
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
