"""The cluster fault drills of `make faults` (not CI: about three minutes each on 2 cores), each on
a three-node cluster of its own, under a live feed, checked as every fault scenario is (settlements
= replay wager by wager, none lost, none twice, state = replay, money = /metrics):

    python3 -m tests.faults.drills [leader controller rolling frozen disk partition partition-controller]

Prints the table of figures (docs/reliability/cluster.md) and exits 1 if any drill failed: lost or
repeated a settlement, disagreed on the money, or took longer than its bound (`BOUNDS`) from the
fault to the next settlement committed. CRAPS_DRILL_KEEP=DIR keeps each drill's run directory
(the nodes' and the workers' logs) under DIR.
"""
from __future__ import annotations

import contextlib
import os
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
                                           cs.partition(30.0), cuttable=True, production_timeouts=True),
    # The worst case of the cut: the node cut is the active controller and the group's coordinator.
    "partition-controller": lambda tmp: cs.live_drill(
        tmp, LIVE, "cluster: the active controller and the group's coordinator cut off 30 s",
        cs.partition(30.0, worst=True), cuttable=True, production_timeouts=True),
}

# Seconds from the fault until every partition with work left has committed again (the floor
# settling again, read from the workers' /metrics), at most: a node cut off by the network
# costs the floor no more than a node killed -9 does, even when it is the active controller and the
# workers' group coordinator (the quorum elects a new controller within 2-3.5 s, which fences the
# node after broker.session.timeout.ms, 4 s, and moves the group's coordinator; the clients and the
# brokers, abandoning their requests to it after 5 s, find the new leaders and coordinators;
# infra/kafka/server.properties, craps_streams/kafka/settings.py).
# The worst case (the cut node the active controller and the group's coordinator) waits for a new
# controller before anything can fence the node: 20 s.
BOUNDS = {"partition": 15.0, "partition-controller": 20.0}


@contextlib.contextmanager
def _run_directory(name: str):
    """The drill's run directory (its cluster's data and logs, the workers' logs): removed at the
    end, or kept under CRAPS_DRILL_KEEP (a directory) to read the nodes' and workers' logs after."""
    keep = os.environ.get("CRAPS_DRILL_KEEP")
    if keep:
        pathlib.Path(keep).mkdir(parents=True, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f"craps-drill-{name}-", dir=keep)
        log(f"{name}: run directory {tmp} (kept)")
        yield tmp
        return
    with tempfile.TemporaryDirectory(prefix=f"craps-drill-{name}-") as tmp:
        yield tmp


def main(argv: list[str]) -> int:
    names = argv or list(DRILLS)
    unknown = [n for n in names if n not in DRILLS]
    if unknown:
        print(f"unknown drills {unknown}; one of {', '.join(DRILLS)}", file=sys.stderr)
        return 2
    verdicts, failed = [], []
    for name in names:
        with _run_directory(name) as tmp:
            try:
                v = DRILLS[name](pathlib.Path(tmp))
            except Exception:  # noqa: BLE001 - the next drill still runs; this one is reported failed
                traceback.print_exc()
                failed.append(name)
                continue
            verdicts.append(v)
            log(f"{name}: {v.explain()}")
            bound, every_s = BOUNDS.get(name), getattr(v, "every_partition_s", None)
            if bound is not None and not (every_s is not None and every_s < bound):
                log(f"{name}: every partition settled again {every_s} s after the fault, not within {bound:.0f} s")
                v.notes.append(f"BOUND EXCEEDED: every partition settling again {every_s} s after the fault, "
                               f"bound {bound:.0f} s")
                failed.append(name)
            elif not (v.exactly_once and v.money_ok):
                failed.append(name)
    print(format_table(verdicts))
    for v in verdicts:
        print(f"- {v.scenario}: " + "; ".join(v.notes))
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
