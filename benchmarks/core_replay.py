"""Replay benchmark: events/s of the rules core in memory, and of the full `craps-streams replay`.

    python benchmarks/core_replay.py [--tables 100 --hours 24 --repeat 3]

Simulates a floor (at least a million events by default), then measures side by side in one run:
  1. the core alone: `apply` over pre-decoded events, no I/O (median of --repeat runs);
  2. decode + core: JSON text -> record -> event -> apply;
  3. the full command: `craps-streams replay FILE -o /dev/null` in a child process, with its peak RSS;
  4. booked as the worker and replay book (`settle_event`: core, hold book, surveillance), in memory,
     with and without the table surveillance's statistics (dice CUSUMs, hold tails, positions) side by side:
     their cost per event.
Rates are per CPU second of the measured process (one thread, so one core), which keeps them
comparable on a shared, noisy 2-core machine.
Target: the core at 200,000 events/s or more on one core.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from craps_streams.replay.engine import Replay, json_lines
from craps_streams.accelerator.rules import choose
from craps_streams.rules import ContractError, record_to_event
from craps_streams.sim.floor import floor_events

TARGET_CORE_EPS = 200_000
# The rules core measured, chosen as the command line chooses it (CRAPS_CORE; auto when unset).
CORE = choose(os.environ.get("CRAPS_CORE") or "auto")


def simulate(path: str, tables: int, hours: float, seed: int) -> int:
    n = 0
    dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
    with open(path, "w") as f:
        for record in floor_events(tables, hours, seed, bad_rate=0.005):
            f.write(record if type(record) is str else dumps(record))
            f.write("\n")
            n += 1
    return n


def decoded_events(path: str) -> list:
    events = []
    with open(path) as f:
        for line in f:
            try:
                events.append(record_to_event(json.loads(line)))
            except (ValueError, ContractError):
                pass  # the bad lines are measured by the full replay, not the core loop
    return events


def run_core(events: list) -> float:
    tables: dict = {}
    get = tables.get
    start = time.process_time()  # CPU seconds of this one thread: "on one core"
    for e in events:
        state, _, _ = CORE.apply(get(e.table_id), e)
        if state is not None:
            tables[e.table_id] = state
    return time.process_time() - start


def run_decode_and_core(path: str) -> tuple[float, int]:
    replay = Replay()
    start = time.process_time()
    with open(path) as f:
        for record, where in json_lines(f, path):
            replay.feed_record(record, where)
    return time.process_time() - start, replay.tally.read


def run_booked(events: list, surveillance: bool) -> float:
    """CPU seconds of `Replay.feed_batch` (settle_event per event) over the decoded events; without
    `surveillance`, the table watch is switched off: the hold book alone."""
    from craps_streams.settle import step

    saved = step.observe
    if not surveillance:
        step.observe = lambda *args: ()
    try:
        replay = Replay()
        start = time.process_time()
        replay.feed_batch(events)
        return time.process_time() - start
    finally:
        step.observe = saved


def run_full_command(path: str) -> tuple[float, int]:
    """CPU seconds and peak RSS (KiB) of `craps-streams replay` in a child process of its own.

    The peak is the child's VmHWM (its own address space since exec). Not ru_maxrss, even the
    child's RUSAGE_SELF: Linux keeps ru_maxrss across exec, and a child forked from this process
    (which holds the million decoded events of the core measure, ~300 MiB) starts with the
    parent's pages resident, so ru_maxrss said 330 MiB for a replay that never exceeds ~45.

    The simulated file is untagged, so the command runs with --accept-untagged: this measures
    replay without the tag check; benchmarks/tags_bench.py measures the check."""
    code = ("import os, resource, sys; from craps_streams.cli import main; "
            f"main(['replay', {path!r}, '-o', os.devnull, '--accept-untagged']); "
            "u = resource.getrusage(resource.RUSAGE_SELF); "
            "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')]; "
            "print(u.ru_utime + u.ru_stime, hwm[0] if hwm else u.ru_maxrss, file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    cpu, peak_kib = result.stderr.strip().splitlines()[-1].split()
    return float(cpu), int(peak_kib)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", type=int, default=100)
    p.add_argument("--hours", type=float, default=26)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--file", default="/tmp/craps-bench-floor.jsonl")
    args = p.parse_args()

    t = time.perf_counter()
    n = simulate(args.file, args.tables, args.hours, args.seed)
    print(f"simulated {n:,} events ({args.tables} tables x {args.hours} h) in {time.perf_counter() - t:.1f} s")
    events = decoded_events(args.file)

    core, decode, full, before, after = [], [], [], [], []
    peak_kib = 0
    for _ in range(args.repeat):  # interleaved, so the measures see the same machine noise
        core.append(len(events) / run_core(events))
        before.append(run_booked(events, surveillance=False))
        after.append(run_booked(events, surveillance=True))
        seconds, read = run_decode_and_core(args.file)
        decode.append(read / seconds)
        seconds, peak_kib = run_full_command(args.file)
        full.append(n / seconds)
    core_eps, decode_eps, full_eps = (statistics.median(x) for x in (core, decode, full))
    print(f"{'measure':<34}{'events/s (median)':>20}{'runs':>26}")
    print(f"{'core apply, in memory':<34}{core_eps:>20,.0f}   {', '.join(f'{x:,.0f}' for x in core)}")
    print(f"{'JSON decode + core':<34}{decode_eps:>20,.0f}   {', '.join(f'{x:,.0f}' for x in decode)}")
    print(f"{'craps-streams replay (full)':<34}{full_eps:>20,.0f}   {', '.join(f'{x:,.0f}' for x in full)}")
    print(f"ratio full/core {full_eps / core_eps:.2f}, decode+core/core {decode_eps / core_eps:.2f}")
    print(f"peak RSS of the full replay: {peak_kib / 1024:.0f} MiB")
    b, a = statistics.median(before), statistics.median(after)
    print(f"{'booked, no table surveillance':<34}{len(events) / b:>20,.0f}   {', '.join(f'{len(events) / x:,.0f}' for x in before)}")
    print(f"{'booked, with the statistics':<34}{len(events) / a:>20,.0f}   {', '.join(f'{len(events) / x:,.0f}' for x in after)}")
    print(f"surveillance statistics (dice CUSUMs, hold tails, positions): {(a - b) / len(events) * 1e6:.2f} us "
          f"per event, booked replay {a / b:.2f}x the time without them")
    verdict = "meets" if core_eps >= TARGET_CORE_EPS else "MISSES"
    print(f"core {verdict} the target of {TARGET_CORE_EPS:,} events/s ({core_eps / TARGET_CORE_EPS:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
