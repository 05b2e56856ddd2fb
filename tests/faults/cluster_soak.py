"""The soak on a three-node cluster: a live floor at its real pace for hours, two workers with the
production timeouts, a concurrent read_committed reader of the settlements, and a watch on every
output partition's last stable offset (LSO). It answers one question beyond exactly-once: does a
read_committed reader ever stop behind a transaction the broker did not end (a stalled LSO)?

    python3 -m tests.faults.cluster_soak --minutes 120 --tables 200 --speed 1

Every `--interval` seconds it records, per output partition, the high watermark and the LSO
(craps_streams.app.stability.StableOffsetWatch turns them into a stall's age, as the worker's own gauge
does), the workers' `craps_output_lso_stalled_seconds`, the group's lag, what the reader has read
and the workers' RSS. A stall is an LSO that stood still, with records above it, for longer than
`--stall-after` seconds (the worker's transaction timeout, 60 s: no transaction of the worker's
lives longer). At the end the floor is settled out and checked as every fault scenario is
(settlements = replay wager by wager, none lost, none twice, state = replay, money = /metrics).
Prints the figures (docs/reliability/cluster.md) and exits 1 on a stall or a failed check.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from kafka import TopicPartition

from craps_streams.app.stability import StableOffsetWatch
from tests.faults.cluster import Cluster
from tests.faults.harness import (
    PARTITIONS,
    ROOT,
    FaultRun,
    GroupWatch,
    _consumer,
    check,
    format_table,
    log,
    owned_partitions,
    rss_kb,
    settle_everything,
    wait_until,
)
from tests.faults.scenarios import floor_of_topic

OUTPUTS = ("settlements", "layout-markers", "surveillance", "rejections", "table-state")


def worker_stall_gauge(port: int) -> float:
    """The worker's own measurement: the oldest stall among its partitions, in seconds."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    worst = 0.0
    for family in text_string_to_metric_families(text):
        if family.name == "craps_output_lso_stalled_seconds":
            worst = max([worst] + [s.value for s in family.samples])
    return worst


def soak(tmp: pathlib.Path, minutes: float, tables: int, speed: float, interval: float, stall_after: float,
         seed: int = 97) -> tuple[bool, dict]:
    with Cluster(tmp) as cluster:
        run = FaultRun(tmp, cluster.bootstrap)
        # A soak runs the worker as production does: its default group session and transaction
        # timeouts, not the fault tests' short ones.
        run.env.pop("CRAPS_SESSION_TIMEOUT_MS", None)
        run.env.pop("CRAPS_TRANSACTION_TIMEOUT_MS", None)
        sim = watch = None
        written = stable = None
        try:
            run.create_topics()
            collector = run.collector("settlements")
            workers = [run.start_worker("a"), run.start_worker("b")]
            watch = GroupWatch(run)
            wait_until(lambda: all(owned_partitions(w) for w in workers), 120, "every worker to own partitions")
            hours = minutes * speed / 60 + 0.2
            sim_log = open(run.tmp / "simulate.log", "wb")  # noqa: SIM115 - closed below
            sim = subprocess.Popen([sys.executable, "-m", "craps_streams.cli", "simulate", "--live", "--tables",
                                    str(tables), "--hours", str(hours), "--speed", str(speed), "--seed", str(seed),
                                    "--bad-rate", "0"], env=run.env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                   stderr=sim_log)
            tps = [TopicPartition(run.topic(t), p) for t in OUTPUTS for p in range(PARTITIONS)]
            written, stable = _consumer(cluster.bootstrap, "read_uncommitted"), _consumer(cluster.bootstrap)
            lso = StableOffsetWatch()
            samples, stalls, t0 = [], {}, time.monotonic()
            while time.monotonic() - t0 < minutes * 60:
                time.sleep(interval)
                now = time.monotonic()
                try:
                    high, low = written.end_offsets(tps), stable.end_offsets(tps)
                except Exception as e:  # noqa: BLE001 - a node's hiccup is a finding, not the end of the soak
                    log(f"soak: offsets not read: {e!r}")
                    continue
                ages = {f"{tp.topic[len(run.prefix):]}/{tp.partition}": lso.observe(tp, high[tp], low[tp], now)
                        for tp in tps}
                worst = max(ages.values())
                for name, age in ages.items():
                    if age > stall_after:
                        stalls[name] = max(stalls.get(name, 0.0), age)
                gauges = [worker_stall_gauge(w.web_port) for w in workers if w.poll() is None]
                samples.append({"t": round(now - t0), "events": sum((watch.ends() or {}).values()),
                                "lag": watch.lag(), "read": len(collector.records),
                                "waiting": sum(max(0, high[tp] - low[tp]) for tp in tps), "lso_age_s": round(worst, 1),
                                "worker_gauge_s": max(gauges or [0.0]),
                                "rss_mb": [round(rss_kb(w.pid) / 1024, 1) for w in workers]})
                log(f"soak: {json.dumps(samples[-1])}")
                if sim.poll() is not None:
                    raise AssertionError(f"the live floor ended before the soak did (exit {sim.returncode})")
        finally:
            if sim is not None:
                sim.send_signal(signal.SIGINT)
                try:
                    sim.wait(30)
                except subprocess.TimeoutExpired:
                    sim.kill()
            for client in (written, stable):
                if client is not None:
                    client.close()
        try:
            assert samples, "the soak took no sample"
            floor = floor_of_topic(run)
            settle_everything(run, floor, collector, watch, timeout=600)
            verdict = check(run, floor, collector, f"soak {minutes:g} min, {tables} tables x{speed:g}, 3 nodes",
                            f"lag max {max(s['lag'] or 0 for s in samples)} events",
                            [f"{len(samples)} samples"])
        finally:
            watch.close()
            run.close()
    third = max(1, len(samples) // 3)
    rss = [sum(s["rss_mb"]) for s in samples]
    summary = {
        "minutes": minutes, "tables": tables, "speed": speed, "samples": len(samples),
        "events_in": samples[-1]["events"] if samples else 0,
        "settlements_read_committed": len(collector.records),
        "stalls": stalls, "longest_lso_age_s": max(s["lso_age_s"] for s in samples),
        "longest_worker_gauge_s": max(s["worker_gauge_s"] for s in samples),
        "lag_max": max(s["lag"] or 0 for s in samples),
        "rss_mb_first_third": statistics.median(rss[:third]), "rss_mb_last_third": statistics.median(rss[-third:]),
        "verdict": verdict.explain(), "table": format_table([verdict]),
    }
    return verdict.exactly_once and verdict.money_ok and not stalls, summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=120.0, help="how long the floor is fed (default 120)")
    p.add_argument("--tables", type=int, default=200, help="tables on the floor (default 200)")
    p.add_argument("--speed", type=float, default=1.0, help="times real time (default 1: the floor's pace)")
    p.add_argument("--interval", type=float, default=10.0, help="seconds between samples (default 10)")
    p.add_argument("--stall-after", type=float, default=60.0,
                   help="an LSO standing still this long with records above it is a stall (default 60)")
    p.add_argument("--json", type=pathlib.Path, help="write the samples' summary here too")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="craps-soak-") as tmp:
        ok, summary = soak(pathlib.Path(tmp), args.minutes, args.tables, args.speed, args.interval, args.stall_after)
    print(summary.pop("table"))
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
