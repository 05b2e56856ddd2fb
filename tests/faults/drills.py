"""The cluster fault drills of `make faults` (not CI: about three minutes each on 2 cores), each on
a three-node cluster of its own, under a live feed, checked as every fault scenario is (settlements
= replay wager by wager, none lost, none twice, state = replay, money = /metrics):

    python3 -m tests.faults.drills [leader controller rolling frozen disk partition]

Prints the table of figures (docs/reliability/cluster.md) and exits 1 if any drill failed.
"""
from __future__ import annotations

import pathlib
import sys
import tempfile
import traceback

from tests.faults import cluster_scenarios as cs
from tests.faults.harness import format_table, log

LIVE = cs.LiveSize()
DRILLS = {
    "leader": lambda tmp: cs.leader_kill(tmp, cs.Size()),
    "controller": lambda tmp: cs.live_drill(tmp, LIVE, "cluster: kill -9 the active controller", cs.controller_kill),
    "rolling": lambda tmp: cs.live_drill(tmp, LIVE, "cluster: rolling restart of all three", cs.rolling_restart),
    "frozen": lambda tmp: cs.live_drill(tmp, LIVE, "cluster: a node frozen 20 s (SIGSTOP)", cs.frozen_node),
    "disk": lambda tmp: cs.live_drill(tmp, LIVE, f"cluster: node 3's disk full ({cs.DISK_MB} MB)", cs.disk_full(3),
                                      prepare=cs.small_disk(3)),
    "partition": lambda tmp: cs.live_drill(tmp, LIVE, "cluster: a node cut off by the network 30 s",
                                           cs.partition(30.0), cuttable=True),
}


def main(argv: list[str]) -> int:
    names = argv or list(DRILLS)
    unknown = [n for n in names if n not in DRILLS]
    if unknown:
        print(f"unknown drills {unknown}; one of {', '.join(DRILLS)}", file=sys.stderr)
        return 2
    verdicts, failed = [], []
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"craps-drill-{name}-") as tmp:
            try:
                v = DRILLS[name](pathlib.Path(tmp))
            except Exception:  # noqa: BLE001 - the next drill still runs; this one is reported failed
                traceback.print_exc()
                failed.append(name)
                continue
            verdicts.append(v)
            log(f"{name}: {v.explain()}")
            if not (v.exactly_once and v.money_ok):
                failed.append(name)
    print(format_table(verdicts))
    for v in verdicts:
        print(f"- {v.scenario}: " + "; ".join(v.notes))
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
