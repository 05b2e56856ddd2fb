"""How long a report of a month of a floor takes, and in how much memory (docs/reports.md).

    craps-streams simulate --tables 40 --hours 720 -o /tmp/month.jsonl     (once; 12.6 M events)
    python3 benchmarks/report_month.py /tmp/month.jsonl [--range] [--html]

Reports the history's last gaming day (its month to date covers the month) or, with --range,
every gaming day of it, and prints the wall time, the events read per second and the peak
resident memory, beside the history's size: the history is streamed, never loaded whole, so the
memory is the floor's (tables' states, the period's lines), not the history's.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from datetime import time as clock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from craps_streams.authenticity import TagCheck, keyfile  # noqa: E402
from craps_streams.report import GamingCalendar, Period, ReportSettings, make_report  # noqa: E402
from craps_streams.report import files  # noqa: E402


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def history_days(path: str, cal: GamingCalendar):
    """The first and last gaming days of a JSON Lines history (its first and last lines' times)."""
    import json

    with open(path, "rb") as fo:
        first = json.loads(fo.readline())["ts"]
        fo.seek(max(0, os.path.getsize(path) - 65536))
        tail = [line for line in fo.read().splitlines() if line.startswith(b"{")]
    last = max(json.loads(line)["ts"] for line in tail[-200:] if b'"ts"' in line)
    return cal.gaming_day(first), cal.gaming_day(last)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("history", help="a JSON Lines history (simulate --tables 40 --hours 720)")
    p.add_argument("--range", action="store_true", help="report every gaming day of the history")
    p.add_argument("--html", action="store_true", help="also write the CSV, JSON and HTML files")
    p.add_argument("--keys", help="the key ring the history was tagged with (default: CRAPS_TABLE_KEYS)")
    p.add_argument("--tz", default="America/New_York")
    args = p.parse_args()
    cal = GamingCalendar(args.tz, clock(6, 0))
    first, last = history_days(args.history, cal)
    period = Period(first, last) if args.range else Period(last, last)
    ring = keyfile.load(args.keys)
    size = os.path.getsize(args.history)
    base = peak_rss_mib()
    start = time.perf_counter()
    report = make_report(ReportSettings(cal, period), args.history, tags=TagCheck(ring), ring=ring)
    made = time.perf_counter() - start
    events = report["provenance"]["history"]["events_read"]
    written = 0.0
    if args.html:
        with tempfile.TemporaryDirectory(prefix="report-month-") as out:
            t = time.perf_counter()
            files.write_csv(report, out)
            files.write_json(report, os.path.join(out, "report.json"))
            files.write_html(report, os.path.join(out, "report.html"))
            written = time.perf_counter() - t
    total = next(r for r in report["floor"] if r["scope"] == "month_to_date" and r["wager"] == "all")
    print(f"history      {args.history}: {size / 2**30:.2f} GiB, {events:,} events, "
          f"gaming days {first} .. {last}")
    print(f"period       {period.label()} ({len(report['tables']):,} table rows, {len(report['kinds']):,} kind rows, "
          f"{len(report['shifts']):,} shift rows)")
    print(f"month to date  handle {files.dollars(total['handle_cents'])}, house win "
          f"{files.dollars(total['house_win_cents'])}, {total['wagers']:,} wagers")
    print(f"report       {made:.1f} s wall ({events / made:,.0f} events/s)" +
          (f"; files {written:.1f} s" if args.html else ""))
    print(f"peak RSS     {peak_rss_mib():.0f} MiB (interpreter and libraries before the pass: {base:.0f} MiB); "
          f"history / peak RSS = {size / 2**20 / peak_rss_mib():.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
