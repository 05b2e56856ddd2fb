"""The dev broker's stop-the-world pauses, read from its GC log (infra/kafka/kafka.sh writes every
safepoint to `.kafka-data/gc.log`): how long the JVM held every request in flight, whatever the
collector. A transaction is five requests in series, so it waits out any pause that falls inside
it (docs/performance.md, settlement latency).

    python benchmarks/broker_pauses.py [--log .kafka-data/gc.log]   # the whole log, summarized

`pipeline_bench.py` marks the log's end before a latency run and summarizes the pauses of the run.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# JDK 17, -Xlog:safepoint: `Safepoint "G1CollectForAllocation", Time since last: ... ns,
# Reaching safepoint: ... ns, Cleanup: ... ns, At safepoint: ... ns, Total: 144506 ns`.
_SAFEPOINT = re.compile(r'Safepoint "([^"]+)".*Total: (\d+) ns')


def gc_log() -> Path:
    return Path(os.environ.get("KAFKA_DATA_DIR", REPO / ".kafka-data")) / "gc.log"


def mark(log: Path | None = None) -> int:
    """The log's current end (bytes): pauses after it are the next run's."""
    log = log or gc_log()
    try:
        return log.stat().st_size
    except OSError:
        return 0


def pauses_since(offset: int, log: Path | None = None) -> list[tuple[str, float]] | None:
    """(operation, milliseconds) of every safepoint logged after `offset`; None without a log (a
    broker not started by kafka.sh). A rotation meanwhile restarts the file: read from its start."""
    log = log or gc_log()
    try:
        with open(log, "rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() < offset:
                offset = 0
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    return [(m.group(1), int(m.group(2)) / 1e6) for m in _SAFEPOINT.finditer(text)]


def summary(pauses: list[tuple[str, float]] | None, seconds: float | None = None) -> str:
    if pauses is None:
        return "broker pauses: no GC log (start the broker with infra/kafka/kafka.sh)"
    if not pauses:
        return "broker pauses: none"
    ms = sorted(p for _, p in pauses)
    over = [p for p in ms if p >= 5]
    total = sum(ms)
    rate = f", {total / (seconds * 1000):.2%} of the time stopped" if seconds else ""
    kinds: dict[str, int] = {}
    for op, p in pauses:
        if p >= 5:
            kinds[op] = kinds.get(op, 0) + 1
    top = ", ".join(f"{op} x{n}" for op, n in sorted(kinds.items(), key=lambda x: -x[1])[:3])
    return (f"broker pauses: {len(ms)} safepoints, median {statistics.median(ms):.2f} ms, max {ms[-1]:.1f} ms, "
            f"{len(over)} of 5 ms or more{f' ({top})' if top else ''}, {total:.0f} ms in all{rate}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path, default=None)
    args = ap.parse_args()
    print(summary(pauses_since(0, args.log)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
