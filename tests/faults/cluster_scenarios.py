"""Fault scenarios on a three-node cluster (tests/faults/cluster.py): a node lost while the workers
settle. Each is checked as the single-broker scenarios are (harness.check: settlements read
read_committed equal `craps-streams replay` of the same input wager by wager, none lost, none
twice, table states equal the replay's, the money equals the workers' /metrics), and reports the
time from the fault to the next settlement a reader sees."""
from __future__ import annotations

import dataclasses
import time

from tests.faults.cluster import Cluster
from tests.faults.harness import (
    FaultRun,
    Feeder,
    GroupWatch,
    Verdict,
    check,
    log,
    make_floor,
    owned_partitions,
    settle_everything,
    wait_until,
)


@dataclasses.dataclass
class Size:
    tables: int = 24
    hours: float = 1.0
    seed: int = 83
    rate: float = 5000.0  # events/s fed: the backlog is in the topic before the workers start
    settled_first: float = 0.15  # share of the settlements a reader has seen when the fault comes


BUSY = ("table-events", "settlements", "table-state")


def _busiest(cluster: Cluster, run: FaultRun) -> tuple[int, dict]:
    leaders = cluster.leaders([run.topic(t) for t in BUSY])
    node = max(sorted(leaders), key=lambda n: leaders[n])
    return node, dict(sorted(leaders.items()))


def _next_settlement(collector, seen: int, since: float, timeout: float = 120) -> float:
    wait_until(lambda: len(collector.records) > seen, timeout, "a settlement after the fault", interval=0.02)
    return time.monotonic() - since


def leader_kill(tmp, size: Size, workers: int = 2) -> Verdict:
    """kill -9 the node that leads most of the busy partitions (the table events, settlements and
    table states of the run) while the workers settle a backlog. The two surviving nodes hold every
    partition's in-sync copy (min.insync.replicas=2): the workers, the reader and the producer move
    to the new leaders by themselves, and nothing acknowledged is lost."""
    with Cluster(tmp) as cluster:
        run = FaultRun(tmp, cluster.bootstrap)
        watch = None
        try:
            run.create_topics()
            floor = make_floor(run, size.tables, size.hours, size.seed)
            feeder = Feeder(run, floor.lines, size.rate).start()
            feeder.wait()
            collector = run.collector("settlements")
            started = [run.start_worker(f"w{i}") for i in range(workers)]
            watch = GroupWatch(run)
            wait_until(lambda: all(owned_partitions(w) for w in started), 60, "every worker to own partitions")
            wait_until(lambda: len(collector.records) >= size.settled_first * len(floor.settlements), 120,
                       "the backlog to be settling", interval=0.05)
            node, leaders = _busiest(cluster, run)
            seen = len(collector.records)
            t_kill = cluster.kill(node)
            next_s = _next_settlement(collector, seen, t_kill)
            log(f"leader kill: node {node} (leads {leaders}) killed with {seen:,} of "
                f"{len(floor.settlements):,} settlements read; the next one read {next_s:.2f} s later")
            settle_everything(run, floor, collector, watch, timeout=240)
            settled_all = time.monotonic() - t_kill
            after = cluster.leaders([run.topic(t) for t in BUSY])
            dead = [w.log_path.name for w in started if w.poll() is not None]
            notes = [f"node {node} killed (partition leaders before: {leaders}, after: {dict(sorted(after.items()))})",
                     f"{seen:,} of {len(floor.settlements):,} settlements read at the kill",
                     f"the backlog settled {settled_all:.1f} s after the kill"]
            if dead:
                notes.append(f"workers exited: {dead}")
            v = check(run, floor, collector, "cluster: kill -9 the busiest leader",
                      f"next settlement {next_s:.1f} s after the kill", notes)
            v.next_settlement_s = next_s  # type: ignore[attr-defined]
            v.killed_node = node  # type: ignore[attr-defined]
            v.leaders_after = after  # type: ignore[attr-defined]
            return v
        finally:
            if watch is not None:
                watch.close()
            run.close()
