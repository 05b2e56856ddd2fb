"""Replay from an Avro container file against a bare fastavro reader loop over the same file.

    python benchmarks/avro_replay.py [--tables 100 --hours 24 --rounds 5 --file /tmp/craps-bench-day.avro]
                                     [--against CHECKOUT]

A simulated floor (100 tables, a day: about a million events) written once into two Avro Object
Container Files (the archive's codec): `--file` untagged, as the floor was before tags, and
`<file stem>-tagged.avro` signed with the benchmark's key ring (`tagged_history.py`: keys derived
from the table ids, so both files are reused by later runs; the ring itself is written to a
temporary directory each run and given to the command with `--keys`). Then in interleaved rounds,
medians:
  1. bare fastavro: `for record in fastavro.reader(f): pass` over the tagged file, only iterating
     the records (no events, no rules), CPU seconds of the loop alone (its interpreter start and
     imports not counted: a bound in fastavro's favour);
  2. `craps-streams replay FILE-tagged.avro --only none --keys RING` as a whole command in a child
     process: user + system CPU seconds (interpreter start, imports, decoding, the tag check, the
     core, the hold books and surveillance, the summary);
  3. and 4., history without tags: the bare loop over the untagged file and
     `craps-streams replay FILE.avro --only none --accept-untagged`.
Rates are records (events) per CPU second; each ratio is a command's over the bare loop over the
same file. Target: ratio >= 1.0. The summaries of the tagged and untagged replays must
agree (same events applied, same hold) or the benchmark fails.

`--against CHECKOUT` (another checkout of this repository with its own native build, such as a
`git worktree` of an earlier commit) measures that checkout's two replay commands in the same
rounds, run from its directory with its code, for a before/after side by side (their summaries
must agree, as the tagged and untagged ones must); each ratio is then also given as the median of
the rounds' own ratios.
"""
from __future__ import annotations

import argparse
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
sys.path.insert(0, str(ROOT / "benchmarks"))

LOOP = """
import sys, time, fastavro
with open(sys.argv[1], "rb") as f:
    start = time.process_time()
    n = 0
    for record in fastavro.reader(f):
        n += 1
    print(n, time.process_time() - start)
"""


def write(path: str, tables: int, hours: float, seed: int, ring=None) -> int:
    """The simulated floor into a container file; signed under `ring` when given."""
    from craps_streams.codec import write_container
    from craps_streams.sim.floor import floor_events
    from tagged_history import signed

    records = (r for r in floor_events(tables, hours, seed, bad_rate=0.0) if type(r) is dict)
    return write_container(path, signed(records, ring) if ring is not None else records)


def bare_loop(path: str) -> tuple[int, float]:
    out = subprocess.run([sys.executable, "-c", LOOP, path], check=True, capture_output=True, text=True)
    n, seconds = out.stdout.split()
    return int(n), float(seconds)


def command_line(path: str, keys: str | None) -> list[str]:
    tags = ["--keys", keys] if keys else ["--accept-untagged"]
    return [sys.executable, "-m", "craps_streams.cli", "replay", path, "--only", "none", "--no-progress", *tags]


def run_replay(path: str, keys: str | None, root: Path, **output) -> subprocess.CompletedProcess:
    """The replay command of the checkout at `root`, run from it with it first on the path
    (`python -m` puts the working directory first)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(command_line(path, keys), check=True, env=env, cwd=root, **output)


def command(path: str, keys: str | None, root: Path = ROOT) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run_replay(path, keys, root, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def summary(path: str, keys: str | None, root: Path = ROOT) -> str:
    """The command's summary (stderr), without what only an untagged replay says (no ring, UNTAGGED)."""
    out = run_replay(path, keys, root, capture_output=True, text=True)
    return "\n".join(line for line in out.stderr.splitlines() if not line.startswith(("UNTAGGED", "replay:")))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=100)
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--file", default="/tmp/craps-bench-day.avro", help="reused when it exists")
    ap.add_argument("--against", type=Path, help="another checkout measured in the same rounds")
    args = ap.parse_args()
    against = args.against.resolve() if args.against is not None else None
    if against is not None and not (against / "craps_streams" / "__init__.py").exists():
        ap.error(f"--against {args.against}: not a checkout of craps-streams")
    from tagged_history import bench_ring, write_ring
    from craps_streams.authenticity.keyfile import dev_floor_tables

    ring = bench_ring(dev_floor_tables(args.tables))
    work = tempfile.mkdtemp(prefix="avro-replay-")
    keys = str(write_ring(ring, work))
    plain = args.file
    tagged = str(Path(plain).with_name(Path(plain).stem + "-tagged.avro"))
    for path, signing in ((plain, None), (tagged, ring)):
        if not Path(path).exists():
            t = time.monotonic()
            n = write(path, args.tables, args.hours, args.seed, signing)
            print(f"wrote {n:,} events ({args.tables} tables x {args.hours} h{', tagged' if signing else ''}) to "
                  f"{path} ({Path(path).stat().st_size / 1e6:.1f} MB) in {time.monotonic() - t:.0f} s")
    a, b = summary(tagged, keys), summary(plain, None)
    if a != b:
        print(f"the tagged and untagged replays disagree:\n{a}\n---\n{b}")
        return 1
    if against is not None:
        c = summary(tagged, keys, against)
        if c != a:  # the same history must settle the same way in both checkouts
            print(f"this checkout and --against disagree:\n{a}\n---\n{c}")
            return 1
    print(a.splitlines()[0])
    rates: dict[str, list[float]] = {"loop": [], "replay": [], "loop_untagged": [], "replay_untagged": []}
    if against is not None:
        rates.update(against=[], against_untagged=[])
    n = 0
    for _ in range(args.rounds):  # interleaved: all four see the same machine noise
        n, seconds = bare_loop(tagged)
        rates["loop"].append(n / seconds)
        rates["replay"].append(n / command(tagged, keys))
        if against is not None:
            rates["against"].append(n / command(tagged, keys, against))
        n_plain, seconds = bare_loop(plain)
        rates["loop_untagged"].append(n_plain / seconds)
        rates["replay_untagged"].append(n_plain / command(plain, None))
        if against is not None:
            rates["against_untagged"].append(n_plain / command(plain, None, against))
    shutil.rmtree(work, ignore_errors=True)
    m = {k: statistics.median(v) for k, v in rates.items()}
    print(f"{n:,} records in {tagged} (and untagged in {plain}); load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} after the rounds")
    labels = {"loop": "bare fastavro.reader loop, tagged file (records/s per CPU s)",
              "replay": "craps-streams replay FILE.avro --only none --keys RING",
              "loop_untagged": "bare fastavro.reader loop, untagged file",
              "replay_untagged": "craps-streams replay FILE.avro --only none --accept-untagged",
              "against": "  the same, tagged, at --against",
              "against_untagged": "  the same, untagged, at --against"}
    for key, label in labels.items():
        if key not in m:
            continue
        print(f"{label:<66}{m[key]:>12,.0f}   {', '.join(f'{x:,.0f}' for x in rates[key])}")
    print(f"ratio replay / bare loop, tagged (with the tag check): {m['replay'] / m['loop']:.2f} (target >= 1.0)")
    print(f"ratio replay / bare loop, untagged (--accept-untagged): "
          f"{m['replay_untagged'] / m['loop_untagged']:.2f}")

    def by_round(replay: str, loop: str) -> float:
        return statistics.median(r / b for r, b in zip(rates[replay], rates[loop]))

    if against is not None:
        for kind, suffix in (("tagged", ""), ("untagged", "_untagged")):
            print(f"{kind}: this checkout {m['replay' + suffix] / m['loop' + suffix]:.2f} (by round "
                  f"{by_round('replay' + suffix, 'loop' + suffix):.2f}), --against "
                  f"{m['against' + suffix] / m['loop' + suffix]:.2f} (by round "
                  f"{by_round('against' + suffix, 'loop' + suffix):.2f}); this checkout's rate / --against's "
                  f"{m['replay' + suffix] / m['against' + suffix]:.2f}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
