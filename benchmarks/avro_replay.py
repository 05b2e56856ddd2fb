"""Replay from an Avro container file against a bare fastavro reader loop over the same file.

    python benchmarks/avro_replay.py [--tables 100 --hours 24 --rounds 5 --file /tmp/craps-bench-day.avro]

A simulated floor (100 tables, a day: about a million events) written once into one Avro Object
Container File (deflate, the archive's codec), then in interleaved rounds, medians:
  1. bare fastavro: `for record in fastavro.reader(f): pass`, only iterating the records (no
     events, no rules), CPU seconds of the loop alone (its interpreter start and imports not
     counted: a bound in fastavro's favour);
  2. `craps-streams replay FILE.avro --only none` as a whole command in a child process: user +
     system CPU seconds (interpreter start, imports, decoding, the core, the hold books, the
     summary).
Both rates are records (events) per CPU second; the ratio is the command's over the loop's.
Target (issue 15): ratio >= 1.0.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LOOP = """
import sys, time, fastavro
with open(sys.argv[1], "rb") as f:
    start = time.process_time()
    n = 0
    for record in fastavro.reader(f):
        n += 1
    print(n, time.process_time() - start)
"""


def write(path: str, tables: int, hours: float, seed: int) -> int:
    from streams.codec import write_container
    from streams.sim.floor import floor_events

    return write_container(path, (r for r in floor_events(tables, hours, seed, bad_rate=0.0) if type(r) is dict))


def bare_loop(path: str) -> tuple[int, float]:
    out = subprocess.run([sys.executable, "-c", LOOP, path], check=True, capture_output=True, text=True)
    n, seconds = out.stdout.split()
    return int(n), float(seconds)


def command(path: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "streams.cli", "replay", path, "--only", "none", "--no-progress"],
                   check=True, env=env, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=100)
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--file", default="/tmp/craps-bench-day.avro", help="reused when it exists")
    args = ap.parse_args()
    if not Path(args.file).exists():
        t = time.monotonic()
        n = write(args.file, args.tables, args.hours, args.seed)
        print(f"wrote {n:,} events ({args.tables} tables x {args.hours} h) to {args.file} "
              f"({Path(args.file).stat().st_size / 1e6:.1f} MB) in {time.monotonic() - t:.0f} s")
    loops, replays = [], []
    n = 0
    for _ in range(args.rounds):  # interleaved: both see the same machine noise
        n, seconds = bare_loop(args.file)
        loops.append(n / seconds)
        replays.append(n / command(args.file))
    loop, replay = statistics.median(loops), statistics.median(replays)
    print(f"{n:,} records in {args.file}")
    print(f"{'bare fastavro.reader loop (records/s per CPU s)':<62}{loop:>12,.0f}   "
          f"{', '.join(f'{x:,.0f}' for x in loops)}")
    print(f"{'craps-streams replay FILE.avro --only none (whole command)':<62}{replay:>12,.0f}   "
          f"{', '.join(f'{x:,.0f}' for x in replays)}")
    print(f"ratio replay / bare loop: {replay / loop:.2f} (target >= 1.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
