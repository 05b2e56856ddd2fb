"""Reliability under faults, on the real broker: bigger runs of the tests/faults scenarios
and the soak, with the table of figures.

    python benchmarks/faults.py                        # the five scenarios, bigger than CI
    python benchmarks/faults.py --only crash,fencing --tables 120 --rate 1000
    python benchmarks/faults.py --soak 10              # 200 tables at 20x real time for 10 minutes

Start the shared broker first (`make kafka-up`); the broker-restart scenario starts and stops a
private broker of its own (free ports, a temporary data dir). Each scenario runs on topics and an
application id of its own. Exit status 0 only if every scenario settled exactly once.

Columns: events in (the floor fed), settlements out (on the topic, read_committed / what
`craps-streams replay` of the same input derives), lost (expected, not on the topic), duplicated
(an id more than once), recovery time (see each scenario), state = replay (tables whose last
changelog record equals the replay's final state and hold), money = /metrics (the hold recomputed
from the settlements topic equals the sum of the live workers' counters, to the cent).
"""
from __future__ import annotations

import argparse
import pathlib
import shutil
import socket
import statistics
import sys
import tempfile
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.faults import scenarios  # noqa: E402
from tests.faults.harness import FaultRun, Verdict, format_table  # noqa: E402

SCENARIOS = ("crash", "broker", "rebalance", "fencing", "state")
NAMES = {"crash": "worker crash (kill -9)", "broker": "broker restart", "rebalance": "rebalance (add, remove)",
         "fencing": "fencing (SIGSTOP past timeouts)", "state": "state loss (empty data dir)"}


def broker_up(bootstrap: str) -> bool:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


def run_scenario(name: str, tmp: pathlib.Path, bootstrap: str, size: scenarios.Size) -> Verdict:
    tmp.mkdir(parents=True, exist_ok=True)
    if name == "broker":
        return scenarios.broker_restart(tmp, size)
    run = FaultRun(tmp, bootstrap)
    try:
        run.create_topics()
        return {"crash": scenarios.worker_crash, "rebalance": scenarios.rebalance,
                "fencing": scenarios.fencing, "state": scenarios.state_loss}[name](run, size)
    finally:
        run.close()


def soak(args, tmp: pathlib.Path, bootstrap: str) -> bool:
    tmp.mkdir(parents=True, exist_ok=True)
    run = FaultRun(tmp, bootstrap)
    try:
        run.create_topics()
        v, samples, flat = scenarios.soak(run, args.soak, args.soak_tables, args.soak_speed, args.interval)
    finally:
        run.close()
    print(f"\nsoak: {args.soak_tables} tables at {args.soak_speed:g}x real time for {args.soak:g} minutes, "
          f"two workers, a sample every {args.interval:g} s\n")
    print(f"{'t (s)':>6} {'events in':>10} {'lag':>6} {'RSS worker a':>13} {'RSS worker b':>13}")
    for s in samples:
        a, b = (s["rss_mb"] + [0, 0])[:2]
        print(f"{s['t']:>6} {s['events']:>10,} {s['lag'] if s['lag'] is not None else '-':>6} "
              f"{a:>10.1f} MB {b:>10.1f} MB")
    (rss_first, rss_last), (lag_first, lag_last) = flat["rss_mb"], flat["lag"]
    rate = (samples[-1]["events"] - samples[0]["events"]) / max(1, samples[-1]["t"] - samples[0]["t"])
    rss_flat = rss_last <= rss_first * 1.10 + 5
    lag_flat = lag_last <= max(2 * lag_first, rate)  # no growing backlog: at most a second of events
    print(f"\ninput {rate:,.0f} events/s; RSS (both workers) median first third {rss_first:.1f} MB, last third "
          f"{rss_last:.1f} MB: {'flat' if rss_flat else 'GROWING'}; lag median first third {lag_first:.0f}, "
          f"last third {lag_last:.0f} events, max {max(s['lag'] or 0 for s in samples)}: "
          f"{'flat' if lag_flat else 'GROWING'}")
    print()
    print(format_table([v]))
    print(v.explain())
    if not v.money_ok:
        print(v.explain_money())
    return v.exactly_once and rss_flat and lag_flat


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", help=f"comma list of {','.join(SCENARIOS)} (default: all)")
    p.add_argument("--tables", type=int, default=80, help="tables on the floor (default 80)")
    p.add_argument("--hours", type=float, default=1.5, help="hours of floor history (default 1.5)")
    p.add_argument("--rate", type=float, default=800, help="events/s fed (default 800)")
    p.add_argument("--kills", type=int, default=5, help="worker crash: kill -9s at least (default 5)")
    p.add_argument("--seed", type=int, default=61)
    p.add_argument("--soak", type=float, metavar="MINUTES", help="run the soak for MINUTES instead")
    p.add_argument("--soak-tables", type=int, default=200)
    p.add_argument("--soak-speed", type=float, default=20.0)
    p.add_argument("--interval", type=float, default=5.0, help="soak: seconds between samples (default 5)")
    p.add_argument("--bootstrap", default="127.0.0.1:9092")
    p.add_argument("--keep", action="store_true", help="keep the logs and files (printed path)")
    args = p.parse_args(argv)
    if not broker_up(args.bootstrap):
        print(f"Kafka is not up on {args.bootstrap}: start it with `make kafka-up`", file=sys.stderr)
        return 2
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="craps-faults-"))
    ok = True
    try:
        if args.soak:
            return 0 if soak(args, tmp / "soak", args.bootstrap) else 1
        names = args.only.split(",") if args.only else list(SCENARIOS)
        unknown = [n for n in names if n not in SCENARIOS]
        if unknown:
            p.error(f"unknown scenario(s) {unknown}; choose from {', '.join(SCENARIOS)}")
        size = scenarios.Size(args.tables, args.hours, args.rate, args.seed, args.kills, 2 * args.kills)
        verdicts = []
        for name in names:
            started = time.monotonic()
            try:
                v = run_scenario(name, tmp / name, args.bootstrap, size)
            except Exception as e:  # a scenario that could not finish is a finding, not a crash of the report
                traceback.print_exc()
                v = Verdict(NAMES[name], 0, 0, notes=[f"FAILED: {e!r}"[:300]])
                v.collector_agrees = False
            v.notes.append(f"{time.monotonic() - started:.0f} s")
            verdicts.append(v)
            ok &= v.exactly_once
        print()
        print(format_table(verdicts))
        print()
        for v in verdicts:
            print(f"- {v.scenario}: {'; '.join(v.notes)}")
            if not v.exactly_once:
                print(f"  NOT EXACTLY ONCE: {v.explain()}")
            if not v.money_ok:
                print(f"  {v.explain_money()}")
        durations = [float(v.notes[-1].split()[0]) for v in verdicts]
        print(f"\n{len(verdicts)} scenarios in {sum(durations):.0f} s "
              f"(median {statistics.median(durations):.0f} s)")
        return 0 if ok else 1
    finally:
        if args.keep:
            print(f"logs and files: {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
