"""A report against the replay of the same history: what the report's accounting costs.

    python3 benchmarks/report_vs_replay.py [--tables 40] [--hours 48] [--rounds 3] [--jobs 2]
                                           [--history FILE] [--keep DIR] [--baseline DIR]

Makes a history with `craps-streams simulate --tables N --hours H` (or takes --history, a JSON
Lines file), then runs `craps-streams report` over every gaming day of it (CSV, JSON and the HTML
page with its plots; no PDF) and `craps-streams replay` of the same file (`--only none`: the
settling and its summary), interleaved for --rounds so both see the same machine, each as the
command a user types (a new process: imports included; the package compiled to bytecode first, as
an installation has it, so no run compiles a module again where PYTHONDONTWRITEBYTECODE is set).
Prints each one's median wall time, the ratio report / replay, the report with --no-html, and the same with `--jobs N` for both (each
round's times below, the CPU ratio against the replay of the same round); then
checks that the report's files are the same with --jobs N as in one process (every CSV byte for
byte, the JSON and the HTML but for the command line they record). With `--baseline DIR` (another
checkout, its accelerator built in place), every command also runs from that tree in the same
rounds, its rows marked "before", each ratio against this checkout's replay of the same round; and
its report's files must be this checkout's (the same check).

The key ring is the one the settings name (CRAPS_SECRETS_DIR): simulate tags with it, report and
replay check with it.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import time as clock
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from crapssim_compare import compile_package  # noqa: E402
from report_month import history_days  # noqa: E402

CLI = [sys.executable, "-m", "craps_streams.cli"]
# The key ring the settings name, as this checkout finds it, for a command run from any tree.
ENV = {**os.environ, "CRAPS_SECRETS_DIR": str(ROOT / os.environ.get("CRAPS_SECRETS_DIR", ".secrets"))}
COMMAND_LINE = re.compile(r"craps-streams report[^\n<\"]*")  # the command a report records


def run(args: list[str], tree: Path = ROOT) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command's processes, user and system), the command run from
    `tree` (`python -m` puts the working directory first on the path)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(CLI + args, cwd=tree, env=ENV, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def jobs_option(jobs: int) -> list[str]:
    return ["--jobs", str(jobs)] if jobs > 1 else []


def same_report(a: Path, b: Path) -> list[str]:
    """The files of two reports that differ (the command line each records left out)."""
    differ = []
    for path in sorted(a.iterdir()):
        mine, theirs = path.read_bytes(), (b / path.name).read_bytes()
        if path.suffix in (".json", ".html"):
            mine, theirs = (COMMAND_LINE.sub("", x.decode()) for x in (mine, theirs))
        if mine != theirs:
            differ.append(path.name)
    return differ


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", type=int, default=40)
    p.add_argument("--hours", type=int, default=48)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--jobs", type=int, default=2, help="processes for the --jobs runs (1: none)")
    p.add_argument("--history", help="a JSON Lines history instead of simulating one")
    p.add_argument("--keep", help="make the history and reports in this directory and keep them")
    p.add_argument("--baseline", metavar="DIR", type=Path,
                   help="another checkout whose commands run in the same rounds (a change's before and after)")
    args = p.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="report-vs-replay-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        history = args.history
        if history is None:
            history = str(work / f"floor-{args.tables}x{args.hours}h.jsonl")
            if not os.path.exists(history):
                run(["simulate", "--tables", str(args.tables), "--hours", str(args.hours), "-o", history])
        from craps_streams.report import GamingCalendar

        first, last = history_days(history, GamingCalendar("America/New_York", clock(6, 0)))
        with open(history, "rb") as fo:
            events = sum(1 for _ in fo)
        period = ["--from", first.isoformat(), "--to", last.isoformat(), "--tz", "America/New_York",
                  "--day-start", "06:00", "--no-progress"]
        trees = {"": ROOT} if args.baseline is None else {"": ROOT, "before: ": args.baseline.resolve()}
        cases = {
            "replay": lambda j, t: ["replay", history, "--only", "none", "--no-progress", *jobs_option(j)],
            "report": lambda j, t: ["report", history, *period, "--out", str(work / f"{t}report-j{j}"),
                                    *jobs_option(j)],
            "report --no-html": lambda j, t: ["report", history, *period, "--no-html",
                                              "--out", str(work / f"{t}csv-j{j}"), *jobs_option(j)],
        }
        for tree in trees.values():  # as an installation runs: no module compiled again at each start
            compile_package(tree)
        jobs = sorted({1, args.jobs})
        times: dict = {(label + name, j): [] for label in trees for name in cases for j in jobs}
        for _ in range(args.rounds):
            for j in jobs:
                for name, argv in cases.items():
                    for label, tree in trees.items():
                        times[(label + name, j)].append(run(argv(j, label.replace(": ", "-")), tree))
        print(f"history  {history}: {events:,} events, gaming days {first} .. {last}; "
              f"{args.rounds} rounds, medians of wall and CPU seconds (one process per command, "
              f"its jobs' CPU included)" + (f"; before: {args.baseline}" if args.baseline else ""))
        for j in jobs:
            replay = [statistics.median(x) for x in zip(*times[("replay", j)])]
            for label in trees:
                for name in cases:
                    row = label + name
                    t = [statistics.median(x) for x in zip(*times[(row, j)])]
                    ratio = "" if row == "replay" else \
                        f"   {t[0] / replay[0]:.2f} x replay's wall, {t[1] / replay[1]:.2f} x its CPU"
                    print(f"  --jobs {j}  {row:26s} wall {t[0]:6.2f} s  CPU {t[1]:6.2f} s{ratio}")
                    rounds = times[(row, j)]
                    each = "  ".join(f"{w:.2f}/{c:.2f}" + ("" if row == "replay" else f" ({c / r[1]:.2f} x)")
                                     for (w, c), r in zip(rounds, times[("replay", j)]))
                    print(f"{'':12s}rounds, wall/CPU s: {each}")
        # (what, what it must equal, their directories)
        compared = [(f"report --jobs {j}", "report in one process", work / f"report-j{j}", work / "report-j1")
                    for j in jobs[1:]]
        if args.baseline is not None:
            compared += [(f"report --jobs {j}", f"the report before with --jobs {j}", work / f"report-j{j}",
                          work / f"before-report-j{j}") for j in jobs]
        for this, other, mine, theirs in compared:
            differ = same_report(mine, theirs)
            print(f"{this} = {other}: {'yes' if not differ else 'NO, differ: ' + ', '.join(differ)}")
            if differ:
                return 1
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
