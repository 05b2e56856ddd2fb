"""A month's report from the ledger against the same report from history: both timed, every CSV line compared.

    craps-streams simulate --tables 8 --hours 720 --seed 7 --bad-rate 0.002 -o /tmp/month8.jsonl   (once)
    python3 benchmarks/report_from_ledger.py /tmp/month8.jsonl [--range] [--db URL]

The ledger is filled first, without a broker (tests/ledger/history_ledger.py: the history settled
by the replay, each output and opening decoded from its Avro bytes by the ledger's own path and
written through its store); the filling is not timed into either report (a running ledger has
done it as the floor played). Then the report of the history's last gaming day (its month to date
covers the month; with --range, every gaming day) is made from the history (`make_report`,
settling it again) and from the ledger (`report_from_ledger`), each timed alone; the four CSV
files of both must be equal line for line, and the ratio of the times is printed.

`--db`: the ledger's database (default: a SQLite file in a temporary directory); a PostgreSQL
URL to an empty database measures that instead. A `--db` already filled is reported from as it
is, so one filling serves a day's report and a month's (`--range`).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import time as clock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from report_month import history_days  # noqa: E402

from craps_streams.authenticity import TagCheck, keyfile  # noqa: E402
from craps_streams.ledger.report import report_from_ledger  # noqa: E402
from craps_streams.ledger.store import Ledger, open_engine  # noqa: E402
from craps_streams.report import GamingCalendar, Period, ReportSettings, make_report  # noqa: E402
from craps_streams.report.files import write_csv  # noqa: E402
from tests.ledger.history_ledger import fill_from_history  # noqa: E402


def csv_lines(report: dict, out: str) -> dict:
    return {p.name: p.read_text(encoding="utf-8").splitlines() for p in write_csv(report, out)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("history", help="a JSON Lines history (simulate --tables 8 --hours 720)")
    p.add_argument("--range", action="store_true", help="report every gaming day of the history")
    p.add_argument("--db", help="the ledger's database URL (default: SQLite in a temporary directory); a ledger "
                                "already holding settlements is reported from as it is (not filled again)")
    p.add_argument("--keys", default=os.path.join(os.environ.get("CRAPS_SECRETS_DIR", ".secrets"), "table-keys.json"),
                   help="the key ring the history was tagged with (default: $CRAPS_SECRETS_DIR/table-keys.json)")
    p.add_argument("--tz", default="America/New_York")
    args = p.parse_args()
    cal = GamingCalendar(args.tz, clock(6, 0))
    first, last = history_days(args.history, cal)
    period = Period(first, last) if args.range else Period(last, last)
    settings = ReportSettings(cal, period)
    ring = keyfile.load(args.keys)
    with tempfile.TemporaryDirectory(prefix="report-from-ledger-") as tmp:
        engine = open_engine(args.db or f"sqlite:///{tmp}/ledger.db")
        ledger = Ledger(engine)
        ledger.migrate()
        ledger.bind_calendar(cal)
        t = time.perf_counter()
        if not ledger.count("settlements"):
            fill_from_history(ledger, args.history, cal, tags=TagCheck(ring))
        filled = time.perf_counter() - t
        settled = ledger.count("settlements")

        reader = open_engine(engine.url.render_as_string(hide_password=False), reader=True)
        t, cpu = time.perf_counter(), time.process_time()
        from_history = make_report(settings, args.history, tags=TagCheck(ring), ring=ring)
        history_s, history_cpu = time.perf_counter() - t, time.process_time() - cpu
        t, cpu = time.perf_counter(), time.process_time()
        from_ledger = report_from_ledger(reader, settings, {})
        ledger_s, ledger_cpu = time.perf_counter() - t, time.process_time() - cpu

        want = csv_lines(from_history, os.path.join(tmp, "history"))
        have = csv_lines(from_ledger, os.path.join(tmp, "ledger"))
        differing = [name for name in want if want[name] != have[name]]
        lines = sum(len(v) - 1 for v in want.values())
        engine.dispose()
        reader.dispose()
    events = from_history["provenance"]["history"]["events_read"]
    print(f"history      {args.history}: {events:,} events, gaming days {first} .. {last}")
    print(f"ledger       {engine.url.get_backend_name()}: {settled:,} settlements, filled in {filled:.1f} s "
          f"(not counted)")
    print(f"period       {period.label()}: {lines:,} CSV lines ({len(from_history['kinds']):,} kind rows)")
    print(f"from history {history_s:.2f} s wall, {history_cpu:.2f} s CPU")
    print(f"from ledger  {ledger_s:.2f} s wall, {ledger_cpu:.2f} s CPU (this process's: SQLite's work is in it, "
          f"a PostgreSQL server's only in the wall time)")
    print(f"ratio        ledger / history = {ledger_s / history_s:.4f} wall (1/{history_s / ledger_s:.0f})")
    print(f"CSV          {'every line equal' if not differing else 'DIFFERENT: ' + ', '.join(differing)}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
