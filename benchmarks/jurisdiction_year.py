"""A year of a jurisdiction: 300 tables reported per day and for the year, and audited, extrapolated
from measured slices of the year.

    python benchmarks/jurisdiction_year.py [--tables 300] [--days 1,8] [--jobs 2] [--dir DIR] [--keep]

A regulator's year of 300 tables playing round the clock is about 1.1 billion table events (the
simulator makes about 420 an hour a table): more than this machine makes in an hour, so the
benchmark measures slices of it and extrapolates.

1. Write: for each slice length in --days, the first that many days of the year (all --tables
   tables, 24 hours a day, from 2026-01-01 UTC) in archive form, as `craps-streams archive` lays it
   out (Avro container files per partition and UTC day, the hash chain, its head sealed with the
   archiver's key), streamed from the
   simulator into `ArchiveWriter`, never held in memory. Writing is not counted: on a floor the
   archive is written live.
2. The year's work, each step the command a user runs, in a process of its own (its wall time and
   the peak RSS of the largest of its processes, jobs included):
   - `archive verify DIR --jobs N`: the hash chain and its seal, every file's offsets, every table's seqs;
   - `report DIR --from FIRST --to LAST --jobs N`: the range report (a line per gaming day, shift,
     table, kind and paytable, the range's totals), CSV and JSON;
   - `audit --history DIR --recorded FILE --jobs N`: the replay against the recorded settlements (made
     beforehand by `replay DIR --only settlements`, standing for the settlements topic; not counted);
   - `report ... --audit FILE`, the report and the audit in one command: the audit's quick pass
     riding on the report's pass over the archive (where the version has it);
   - `replay DIR --jobs N --only none`, the settling alone, as the yardstick the report is held to.
   Gaming days here are UTC days (`--tz UTC --day-start 00:00`), so a slice of D days is D gaming
   days.
3. Extrapolate: each step's cost per day is the longest slice's time over its days (its fixed
   start included: an upper bound), and a year is 365 of them. The peak RSS per slice length says
   how memory grows with the history; its slope per day (between the shortest and the longest
   slice, none when it falls) gives the year's.
Goal: the year reported and audited in under one hour on this machine, memory flat in the length.
The year is printed three ways: verify, report and audit as three commands; verify then
`report --audit`; and `report --audit` alone, where the version's audit checks the archive as
verify does but for the tables' seqs (its chain, seal and offsets; the seqs are its replay's: a
duplicate counted, a gap alerted). The goal is judged by the last where the version has it, else
by the one before.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PARTITIONS = 8
YEAR_DAYS = 365
GOAL_S = 3600


def write_slice(out: Path, tables: int, days: int, seed: int, key_ring: Path, archive_key: Path) -> dict:
    """The slice signed with the table keys of `key_ring` (made if missing), as controllers sign,
    and its chain head sealed with the archiver's key (`archive_key`, made if missing), as
    `craps-streams archive` seals it."""
    from craps_streams.archive import ArchiveWriter
    from craps_streams.authenticity import TableSigner, keyfile, sign_record
    from craps_streams.sim.floor import floor_events

    signer = TableSigner(keyfile.init(key_ring)[0])

    writer = ArchiveWriter(out, "year.table-events", sync_interval=256_000,
                           seal_key=keyfile.archive_key(archive_key, create=True))
    offsets = [0] * PARTITIONS
    start = time.monotonic()
    n = 0
    for record in floor_events(tables, days * 24, seed, bad_rate=0.0):
        p = int(record["table_id"][1:]) % PARTITIONS
        writer.add_record(p, offsets[p], sign_record(signer, record))
        offsets[p] += 1
        n += 1
    writer.commit()
    size = sum(f.stat().st_size for f in out.rglob("*.avro"))
    return {"events": n, "bytes": size, "wall_s": time.monotonic() - start}


# The command runs under this small wrapper, which reports the peak RSS of the command and its jobs
# (RUSAGE_CHILDREN). Waiting for the command from this process would not do: this process holds
# the slice it wrote, and Linux records the spawning process's peak in the child's at exec.
PEAK_OF = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
           "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)")


def run_measured(argv: list[str], env: dict) -> dict:
    """Run a command: its wall time, output and the peak RSS of it and its jobs (the largest one).
    A finding (exit 1) fails the benchmark: the slice is a clean floor's, so a check that finds
    something stopped short of the work it is timed for (a chain finding stops `verify` before
    the blocks)."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", PEAK_OF, *argv], capture_output=True, text=True, env=env)
    wall = time.monotonic() - start
    *err, peak = done.stderr.rstrip("\n").split("\n")
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return {"wall_s": wall, "rc": done.returncode, "stdout": done.stdout, "stderr": "\n".join(err),
            "peak_rss_mb": int(peak) / 1024}


def has_jobs(cli: str, command: str) -> bool:
    """Whether this version's `command` takes --jobs (a baseline's may not)."""
    return "--jobs" in subprocess.run([cli, command, "--help"], capture_output=True, text=True).stdout


def measure_slice(cli: str, d: Path, days: int, jobs: int, work: Path, keys: list[str], env: dict,
                  with_jobs: set[str], riding: bool) -> dict:
    """`with_jobs`: the commands of this version that take --jobs (`has_jobs`); `riding`: whether its
    report takes --audit FILE."""
    from datetime import datetime, timezone

    first = datetime.fromtimestamp(1_767_225_600, timezone.utc).date()  # the simulator's 2026-01-01
    last = datetime.fromtimestamp(1_767_225_600 + (days - 1) * 86_400, timezone.utc).date()
    recorded = work / f"recorded-{days}.jsonl"
    made = subprocess.run([cli, "replay", str(d), "--only", "settlements", "-o", str(recorded), "--no-progress",
                           *keys], capture_output=True, text=True, env=env)
    if made.returncode != 0:
        raise SystemExit(f"recording the settlements failed ({made.returncode}):\n{made.stderr[-2000:]}")
    os.sync()  # the recording's pages written out now, not while the steps are timed
    jobs_args = ["--jobs", str(jobs)] if jobs > 1 else []
    steps = {
        "verify": [cli, "archive", "verify", str(d), "--no-progress", *(jobs_args if "archive" in with_jobs else [])],
        "report": [cli, "report", str(d), "--from", str(first), "--to", str(last), "--tz", "UTC",
                   "--day-start", "00:00", "--no-html", "--no-progress", "-o", str(work / f"report-{days}"),
                   *(jobs_args if "report" in with_jobs else []), *keys],
        "audit": [cli, "audit", "--history", str(d), "--recorded", str(recorded),
                  *(jobs_args if "audit" in with_jobs else []), *keys],
        "replay": [cli, "replay", str(d), "--only", "none", "--no-progress", *jobs_args, *keys],
    }
    if riding:
        steps["report+audit"] = [*steps["report"], "--audit", str(recorded)]
    got = {name: run_measured(argv, env) for name, argv in steps.items()}
    recorded.unlink()
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=300)
    # Eight days: a range of more than a week takes the kind lines' tails as a year's range does
    # (report/figures.py LATTICE_DAYS_KINDS); one or two days overstate a year's figures.
    ap.add_argument("--days", default="1,8", help="slice lengths in days, comma list (at least two)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", help="where the slices are written (default: a temporary directory, removed)")
    ap.add_argument("--keep", action="store_true", help="keep the slices")
    ap.add_argument("--keys", default=".secrets/table-keys.json",
                    help="the table key ring the slices are signed with and checked against (made if missing; "
                         "default .secrets/table-keys.json)")
    ap.add_argument("--archive-key", default=".secrets/archive-key",
                    help="the archiver's key the slices' chain heads are sealed with and checked against (made "
                         "if missing; default .secrets/archive-key)")
    args = ap.parse_args()
    lengths = sorted({int(x) for x in args.days.split(",")})
    if len(lengths) < 2:
        ap.error("--days needs two slice lengths or more (the slope between them is the cost of a day)")
    cli = shutil.which("craps-streams")
    if not cli:
        ap.error("craps-streams is not installed: pip install -e .")
    keys = ["--keys", args.keys]
    env = {**os.environ, "CRAPS_ARCHIVE_KEY": str(Path(args.archive_key).resolve())}
    with_jobs = {command for command in ("archive", "report", "audit") if has_jobs(cli, command)}
    riding = "--audit" in subprocess.run([cli, "report", "--help"], capture_output=True, text=True).stdout
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="year-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    results = {}
    try:
        for days in lengths:
            d = base / f"days-{days}"
            if not (d / "index.json").exists() or "chain_seal" not in json.loads((d / "index.json").read_text()):
                shutil.rmtree(d, ignore_errors=True)
                print(f"writing {args.tables} tables x {days} day(s) into {d}", file=sys.stderr, flush=True)
                w = write_slice(d, args.tables, days, args.seed, Path(args.keys), Path(args.archive_key))
                print(f"  {w['events']:,} events, {w['bytes'] / 1e6:,.0f} MB of Avro, in {w['wall_s']:.0f} s",
                      file=sys.stderr, flush=True)
            from craps_streams.archive import load_index

            events = sum(f["count"] for f in load_index(d)["files"])
            print(f"measuring {days} day(s), {events:,} events", file=sys.stderr, flush=True)
            got = measure_slice(cli, d, days, args.jobs, base, keys, env, with_jobs, riding)
            # A version whose audit checks the archive's offsets as verify does says so in its lines.
            checks_archive = riding and "archive offsets " in got["report+audit"]["stdout"]
            results[days] = {"events": events, **{k: {"wall_s": v["wall_s"], "peak_rss_mb": v["peak_rss_mb"],
                                                       "rc": v["rc"]} for k, v in got.items()}}
        short, long = lengths[0], lengths[-1]
        per_day_events = (results[long]["events"] - results[short]["events"]) / (long - short)
        year_events = results[long]["events"] + (YEAR_DAYS - long) * per_day_events
        print(f"\n{args.tables} tables, --jobs {args.jobs} on {os.cpu_count()} cores; a year is about "
              f"{year_events / 1e9:.2f} billion events ({per_day_events:,.0f} a day)")
        print(f"{'step':<12} " + " ".join(f"{f'{n} day(s) s':>12} {'RSS MB':>7}" for n in lengths)
              + f" {'s per day':>10} {'year, s':>9} {'RSS/day':>8} {'year RSS':>9}")
        year = {}
        steps = ("verify", "report", "audit", *(("report+audit",) if riding else ()), "replay")
        for step in steps:
            per_day = results[long][step]["wall_s"] / long
            year[step] = YEAR_DAYS * per_day
            rss_slope = (results[long][step]["peak_rss_mb"] - results[short][step]["peak_rss_mb"]) / (long - short)
            year_rss = results[long][step]["peak_rss_mb"] + (YEAR_DAYS - long) * max(0.0, rss_slope)
            cells = " ".join(f"{results[n][step]['wall_s']:>12.1f} {results[n][step]['peak_rss_mb']:>7.0f}"
                             for n in lengths)
            print(f"{step:<12} {cells} {per_day:>10.1f} {year[step]:>9,.0f} {rss_slope:>8.1f} {year_rss:>9,.0f}")
        report_ratio = [results[n]["report"]["wall_s"] / results[n]["replay"]["wall_s"] for n in lengths]
        print("report / replay, wall: " + ", ".join(f"{r:.2f}" for r in report_ratio))
        apart = year["verify"] + year["report"] + year["audit"]
        print(f"the year verified, reported and audited by three commands: {apart / 60:,.0f} min extrapolated")
        year_total = apart
        if riding:
            year_total = year["verify"] + year["report+audit"]
            print(f"the year verified, then reported and audited in one pass (report --audit): "
                  f"{year_total / 60:,.0f} min extrapolated")
            if checks_archive:
                year_total = year["report+audit"]
                print(f"the year reported and audited in one pass, the archive's chain, seal and offsets checked by "
                      f"the audit (report --audit): {year_total / 60:,.0f} min extrapolated")
        verdict = "meets" if year_total < GOAL_S else "MISSES"
        print(f"goal: the year reported and audited, the archive checked, in under {GOAL_S // 60} min: {verdict}")
        print(json.dumps({"tables": args.tables, "jobs": args.jobs, "results": results,
                          "year_s": year_total, "year_apart_s": apart}), file=sys.stderr)
        return 0
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
