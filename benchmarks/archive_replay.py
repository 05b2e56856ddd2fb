"""Archive replay benchmark: a simulated history written into archive container files, then replayed.

    python benchmarks/archive_replay.py [--events 10000000] [--tables 200] [--repeat 3] [--jobs 2]
                                        [--dir DIR] [--keep]

1. Write: a simulated floor of N events (streamed from the simulator, never held in memory) into an
   archive directory as `craps-streams archive` lays it out (Avro Object Container Files per
   partition and UTC day, index.json), through `ArchiveWriter`.
2. Replay, one process: in a child process (so its memory is its own), the archive replayed as
   `craps-streams replay DIR --only none` does (`ReplayRun` over `iter_archive_batches`: blocks
   decoded straight into the core's events, the core, the tally and hold; outputs counted, not
   encoded); events/s per CPU second (one thread: one core) and per wall second, the child's own
   peak RSS (VmHWM: ru_maxrss would count the parent's pages at fork time) and RSS sampled every
   500k events (flat when streaming). --repeat runs, medians.
3. Replay, --jobs processes (`craps-streams replay DIR --jobs N`, `craps_streams.replay.parallel`): the
   same archive by partition groups in a process pool; wall events/s against the one-process wall
   rate (the ratio), CPU seconds of all processes, the largest job's peak RSS, and whether its
   summary equals the one-process summary. Interleaved with the one-process runs, medians.
Target: 150,000 events/s on one core from the Avro files, memory flat.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import statistics
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
    """This process's own peak RSS (VmHWM of its address space since exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write(out: Path, events: int, tables: int, seed: int) -> dict:
    from craps_streams.archive import ArchiveWriter
    from craps_streams.sim.floor import floor_events

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
    """One process, as `craps-streams replay DIR --only none`."""
    from craps_streams.cli import format_summary
    from craps_streams.archive import iter_archive_batches
    from craps_streams.replay.run import ReplayRun, batch_gc

    samples = []
    seen = [0, 500_000]

    def tick(n):
        seen[0] += n
        if seen[0] >= seen[1]:
            seen[1] += 500_000
            samples.append(round(rss_mb()))

    run = ReplayRun(tick=tick)
    start_cpu, start = time.process_time(), time.monotonic()
    with batch_gc():
        run.feed(iter_archive_batches(out))
    wall, cpu = time.monotonic() - start, time.process_time() - start_cpu
    t = run.tally()
    n = t.read
    return {"events": n, "applied": t.applied, "rejected": t.rejected, "duplicates": t.duplicates,
            "settled": t.hold.total().settled, "outputs": run.outputs, "wall_s": wall, "cpu_s": cpu,
            "eps_cpu": n / cpu, "eps_wall": n / wall, "peak_rss_mb": peak_rss_mb(), "rss_samples_mb": samples,
            "summary": format_summary(t)}


def replay_jobs(out: Path, jobs: int) -> dict:
    """`jobs` processes, as `craps-streams replay DIR --jobs N --only none`."""
    from craps_streams.cli import format_summary
    from craps_streams.replay.parallel import replay_archive_parallel

    start_cpu, start = time.process_time(), time.monotonic()
    result = replay_archive_parallel(out, jobs, wanted=frozenset())
    wall = time.monotonic() - start
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - start_cpu + children.ru_utime + children.ru_stime
    n = result.tally.read
    return {"events": n, "jobs": result.jobs, "groups": result.groups, "wall_s": wall, "cpu_s": cpu,
            "jobs_cpu_s": result.cpu_s, "eps_wall": n / wall, "eps_cpu": n / cpu,
            "peak_rss_mb": max(result.peak_rss_kib) / 1024 if result.peak_rss_kib else 0.0,
            "parent_peak_rss_mb": peak_rss_mb(), "summary": format_summary(result.tally)}


def runs(results: list, key: str) -> str:
    return ", ".join(f"{x[key]:,.0f}" for x in results)


def child(out: Path, jobs: int) -> dict:
    args = [sys.executable, __file__, "--replay-only", str(out), "--jobs", str(jobs)]
    result = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--tables", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="replay runs of each kind (medians)")
    ap.add_argument("--jobs", type=int, default=2, help="processes of the parallel replay (0: none)")
    ap.add_argument("--dir", help="archive directory (default: a temporary one, removed after)")
    ap.add_argument("--keep", action="store_true", help="keep the archive")
    ap.add_argument("--replay-only", metavar="DIR", help=argparse.SUPPRESS)  # the child process
    args = ap.parse_args()

    if args.replay_only:
        d = Path(args.replay_only)
        print(json.dumps(replay(d) if args.jobs <= 1 else replay_jobs(d, args.jobs)))
        return 0

    out = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="archive-bench-"))
    reuse = out.exists() and (out / "index.json").exists()
    if out.exists() and any(out.iterdir()) and not reuse:
        print(f"{out} is not empty", file=sys.stderr)
        return 2
    try:
        if reuse:
            from craps_streams.archive import load_index

            n = sum(f["count"] for f in load_index(out)["files"])
            print(f"replaying the archive in {out} ({n:,} events)")
        else:
            print(f"writing {args.events:,} simulated events ({args.tables} tables) into {out}", file=sys.stderr)
            w = write(out, args.events, args.tables, args.seed)
            print(f"write: {w['events']:,} events into {w['files']} container files ({w['bytes'] / 1e6:,.1f} MB) "
                  f"in {w['wall_s']:.1f} s ({w['events'] / w['wall_s']:,.0f} events/s incl. simulation), "
                  f"peak RSS {w['peak_rss_mb']:.0f} MB")
        singles, parallels = [], []
        for _ in range(args.repeat):  # interleaved: both kinds see the same machine noise
            singles.append(child(out, 1))
            if args.jobs > 1:
                parallels.append(child(out, args.jobs))
        r = singles[0]
        eps_cpu = statistics.median(x["eps_cpu"] for x in singles)
        eps_wall = statistics.median(x["eps_wall"] for x in singles)
        print(f"replay: {r['events']:,} events (applied {r['applied']:,}, rejected {r['rejected']:,}, "
              f"duplicates {r['duplicates']:,}), {r['settled']:,} wagers settled, {r['outputs']:,} outputs")
        print(f"replay, 1 process: {eps_cpu:,.0f} events/s per CPU second (median of "
              f"{runs(singles, 'eps_cpu')}), {eps_wall:,.0f} events/s wall; "
              f"peak RSS {max(x['peak_rss_mb'] for x in singles):.0f} MB; RSS every 500k events (MB): "
              f"{r['rss_samples_mb']}")
        verdict = "meets" if eps_cpu >= TARGET_EPS else "MISSES"
        print(f"target {TARGET_EPS:,} events/s on one core from Avro files: {verdict} ({eps_cpu / TARGET_EPS:.2f}x)")
        if parallels:
            p = parallels[0]
            p_wall = statistics.median(x["eps_wall"] for x in parallels)
            p_cpu = statistics.median(x["eps_cpu"] for x in parallels)
            same = all(x["summary"] == r["summary"] for x in parallels + singles)
            print(f"replay, {p['jobs']} processes ({p['groups']} partition groups): {p_wall:,.0f} events/s wall "
                  f"(median of {runs(parallels, 'eps_wall')}), "
                  f"{p_cpu:,.0f} events/s per CPU second of all processes; largest job peak RSS "
                  f"{max(x['peak_rss_mb'] for x in parallels):.0f} MB")
            print(f"parallel/1 process, wall: {p_wall / eps_wall:.2f}x on {os.cpu_count()} cores; "
                  f"summary identical to the one-process run: {'yes' if same else 'NO'}")
        return 0
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
