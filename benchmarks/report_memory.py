"""A range report's memory against the range's length: flat, or how it grows.

    craps-streams simulate --tables 40 --hours 720 -o /tmp/month.jsonl     (once; 12.6 M events)
    python3 benchmarks/report_memory.py /tmp/month.jsonl [--days 2,4,8,16,29] [--jobs 1] [--html]

For each length, `craps-streams report FILE --from FIRST --to FIRST+days-1` (CSV and JSON; the page
too with --html) as the command a user types, in a process of its own, and prints its peak
resident memory (the largest of the command and its jobs), its wall and CPU time, the events it
read, and how the peak grows a gaming day between one length and the next. A report keeps the
lines of about three gaming days of its pass (report/days.py: past `SPILL_LINES`, those of the
shifts it has left behind are written out), `ROWS_HELD` rows (report/rows.py) and the first
`LISTED` exceptions of each kind (report/noted.py); what grows with the range beside them is eight
bytes a table an hour of the hourly handle, and its plot's numbers in the report.

The key ring is the one the settings name (CRAPS_SECRETS_DIR), as `simulate` tagged the history.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from datetime import time as clock
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from crapssim_compare import compile_package  # noqa: E402
from report_month import history_days  # noqa: E402

# Runs the command given and prints its CPU seconds and the peak RSS (KiB) of it and its jobs.
MEASURED = ("import resource, subprocess, sys\n"
            "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
            "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(r.ru_utime + r.ru_stime, r.ru_maxrss)\n")


def measure(argv: list[str]) -> tuple[float, float, int]:
    """(wall s, CPU s, peak RSS KiB) of a command."""
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", MEASURED, *argv], check=True, capture_output=True, text=True,
                         cwd=ROOT).stdout.split()
    return time.perf_counter() - t, float(out[0]), int(out[1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("history", help="a JSON Lines history (simulate --tables 40 --hours 720)")
    p.add_argument("--days", default="2,4,8,16,29", help="the ranges' lengths in gaming days, from the first")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--html", action="store_true", help="also write the page")
    p.add_argument("--tz", default="America/New_York")
    p.add_argument("--day-start", default="06:00")
    args = p.parse_args()
    from craps_streams.report import GamingCalendar
    from craps_streams.report.calendar import parse_clock

    first, last = history_days(args.history, GamingCalendar(args.tz, parse_clock(args.day_start)))
    compile_package()
    lengths = [int(d) for d in args.days.split(",")]
    print(f"history  {args.history} ({os.path.getsize(args.history) / 2**30:.2f} GiB), gaming days {first} .. {last}; "
          f"report --jobs {args.jobs}{'' if args.html else ' --no-html'}")
    print(f"{'days':>5} {'wall s':>8} {'CPU s':>8} {'events read':>13} {'peak RSS MiB':>13} {'MiB a day more':>15}")
    before = None
    with tempfile.TemporaryDirectory(prefix="report-memory-") as work:
        for days in lengths:
            to = first + timedelta(days=days - 1)
            if to > last:
                print(f"{days:>5} (the history ends {last})")
                continue
            out = Path(work) / f"d{days}"
            argv = [sys.executable, "-m", "craps_streams.cli", "report", args.history, "--from", first.isoformat(),
                    "--to", to.isoformat(), "--tz", args.tz, "--day-start", args.day_start, "--out", str(out),
                    "--no-progress", "--jobs", str(args.jobs), *([] if args.html else ["--no-html"])]
            wall, cpu, peak = measure(argv)
            report = json.loads((out / "report.json").read_text())
            events = report["provenance"]["history"]["events_read"]
            growth = "" if before is None else f"{(peak - before[1]) / 1024 / (days - before[0]):15.2f}"
            print(f"{days:>5} {wall:8.1f} {cpu:8.1f} {events:13,} {peak / 1024:13.1f} {growth}")
            before = (days, peak)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
