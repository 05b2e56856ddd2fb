"""Fault scenarios on a three-node cluster (tests/faults/cluster.py): a node lost while the workers
settle. Each is checked as the single-broker scenarios are (harness.check: settlements read
read_committed equal `craps-streams replay` of the same input wager by wager, none lost, none
twice, table states equal the replay's, the money equals the workers' /metrics), and reports the
time from the fault to the next settlement a reader sees."""
from __future__ import annotations

import dataclasses
import os
import pathlib
import signal
import subprocess
import threading
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


def settling_again(progress: Progress, seen: int, since: float, timeout: float = 180) -> tuple[float, float]:
    """Seconds from `since` (the fault, with `seen` records read then) until the reader saw the next
    settlement, and until every partition that was settling before the fault settled again: the
    partitions the lost node led are the last. Waits for them up to `timeout`."""
    busy = {partition for partition, _, _ in progress.collector.records[:seen]}
    deadline = time.monotonic() + timeout
    while True:
        after = [(t, partition) for t, partition in progress.arrivals_since(seen)]
        firsts: dict[int, float] = {}
        for t, partition in after:
            firsts.setdefault(partition, t)
        if after and busy <= firsts.keys():
            return after[0][0] - since, max(firsts[p] for p in busy) - since
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for partitions "
                                 f"{sorted(busy - firsts.keys())} to settle again")
        time.sleep(0.05)


def leader_kill(tmp, size: Size, workers: int = 2) -> Verdict:
    """kill -9 the node that leads most of the busy partitions (the table events, settlements and
    table states of the run) while the workers settle a backlog. The two surviving nodes hold every
    partition's in-sync copy (min.insync.replicas=2): the workers, the reader and the producer move
    to the new leaders by themselves, and nothing acknowledged is lost."""
    with Cluster(tmp) as cluster:
        run = FaultRun(tmp, cluster.bootstrap)
        watch = progress = None
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
            progress = Progress(collector)
            progress.start()
            node, leaders = _busiest(cluster, run)
            seen = len(collector.records)
            t_kill = cluster.kill(node)
            next_s, every_s = settling_again(progress, seen, t_kill)
            log(f"leader kill: node {node} (leads {leaders}) killed with {seen:,} of "
                f"{len(floor.settlements):,} settlements read; the next one read {next_s:.2f} s later, "
                f"every partition settling again {every_s:.2f} s later")
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
                      f"next settlement {next_s:.1f} s, every partition {every_s:.1f} s after the kill", notes)
            v.next_settlement_s = next_s  # type: ignore[attr-defined]
            v.every_partition_s = every_s  # type: ignore[attr-defined]
            v.killed_node = node  # type: ignore[attr-defined]
            v.leaders_after = after  # type: ignore[attr-defined]
            return v
        finally:
            if progress is not None:
                progress.stop()
            if watch is not None:
                watch.close()
            run.close()


# ------------------------------------------------------------------ the drills (`make faults`)


class Progress(threading.Thread):
    """Samples how many settlements the reader has seen, every 20 ms: the longest stretch without a
    new one in a window is what a floor's screens saw of a fault."""

    def __init__(self, collector):
        super().__init__(daemon=True)
        self.collector = collector
        self.samples: list[tuple[float, int]] = []
        self.arrivals: list[tuple[float, int]] = []  # (when it was seen, partition) of each record read
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            now, records = time.monotonic(), self.collector.records
            n = len(records)
            self.arrivals.extend((now, partition) for partition, _, _ in records[len(self.arrivals):n])
            self.samples.append((now, n))
            time.sleep(0.02)

    def arrivals_since(self, index: int) -> list[tuple[float, int]]:
        return self.arrivals[index:]

    def longest_gap(self, since: float, until: float) -> float:
        """The longest time without a new settlement between `since` and the last new one before
        `until` (monotonic): the quiet after the feed's end is not a pause."""
        gap, last_t, last_n = 0.0, since, None
        for t, n in self.samples:
            if t < since:
                last_n = n
                continue
            if t > until:
                break
            if last_n is not None and n > last_n:
                gap = max(gap, t - last_t)
                last_t = t
            last_n = n
        return gap

    def stop(self) -> None:
        self.stopping.set()
        self.join(5)


@dataclasses.dataclass
class LiveSize:
    tables: int = 40
    hours: float = 1.0
    seed: int = 89
    rate: float = 150.0  # events/s fed while the fault happens (a feed of about 100 s)


def live_drill(tmp, size: LiveSize, name: str, fault, prepare=None, workers: int = 2) -> Verdict:
    """A floor fed at `size.rate` into a three-node cluster, two workers settling; `fault(cluster,
    run, progress)` is done a few seconds in and returns (recovery text, notes). `prepare(cluster)`
    runs before the cluster starts (a node's data directory on a small disk, unmounted at the end)."""
    cluster = Cluster(tmp)
    try:
        if prepare is not None:
            prepare(cluster)
        return _drill(cluster, tmp, size, name, fault, workers)
    finally:
        unmount(cluster)


def _drill(cluster: Cluster, tmp, size: LiveSize, name: str, fault, workers: int) -> Verdict:
    with cluster:
        run = FaultRun(tmp, cluster.bootstrap)
        watch = progress = feeder = None
        try:
            run.create_topics()
            floor = make_floor(run, size.tables, size.hours, size.seed)
            collector = run.collector("settlements")
            started = [run.start_worker(f"w{i}") for i in range(workers)]
            watch = GroupWatch(run)
            wait_until(lambda: all(owned_partitions(w) for w in started), 60, "every worker to own partitions")
            feeder = Feeder(run, floor.lines, size.rate).start()
            progress = Progress(collector)
            progress.start()
            wait_until(lambda: len(collector.records) > 200, 60, "settlements flowing", interval=0.1)
            recovery, notes = fault(cluster, run, progress)
            feeder.wait(timeout=600)
            settle_everything(run, floor, collector, watch, timeout=300)
            dead = [w.log_path.name for w in started if w.poll() is not None]
            if dead:
                notes.append(f"workers exited: {dead}")
            return check(run, floor, collector, name, recovery, notes)
        finally:
            for thing in (progress, feeder, watch):
                if thing is not None:
                    (thing.stop if thing is progress else thing.kill if thing is feeder else thing.close)()
            run.close()


def _after(progress: Progress, t: float, seen: int) -> tuple[float, float]:
    return settling_again(progress, seen, t)


def controller_kill(cluster: Cluster, run: FaultRun, progress: Progress):
    """kill -9 the active KRaft controller, then start it again once the floor settles on."""
    node = cluster.active_controller()
    seen = len(progress.collector.records)
    t = cluster.kill(node)
    next_s, every_s = _after(progress, t, seen)
    new = wait_until(lambda: _try(cluster.active_controller), 60, "a new active controller")
    time.sleep(5)
    cluster.start(node)
    synced = cluster.in_sync()
    gap = progress.longest_gap(t, time.monotonic())
    log(f"controller kill: node {node} killed, node {new} active, next settlement {next_s:.1f} s, every "
        f"partition {every_s:.1f} s, longest pause {gap:.1f} s, node {node} back in sync {synced:.1f} s after its start")
    return (f"next settlement {next_s:.1f} s, every partition {every_s:.1f} s after the kill",
            [f"active controller node {node} killed; node {new} took over",
             f"longest pause in settlements {gap:.1f} s", f"node {node} restarted, in sync {synced:.1f} s later"])


def _try(fn):
    try:
        return fn()
    except Exception:  # noqa: BLE001 - the quorum still electing
        return None


def rolling_restart(cluster: Cluster, run: FaultRun, progress: Progress):
    """Every node stopped (SIGTERM, controlled shutdown), started and back in sync, one at a time,
    as an operator upgrades, under load."""
    t0 = time.monotonic()
    per_node = []
    for node in (1, 2, 3):
        t = time.monotonic()
        cluster.sh("stop", node)
        cluster.start(node)
        cluster.in_sync()
        per_node.append(time.monotonic() - t)
    gap = progress.longest_gap(t0, time.monotonic())
    log(f"rolling restart: {', '.join(f'{s:.0f} s' for s in per_node)} per node; longest pause {gap:.1f} s")
    return (f"longest pause {gap:.1f} s",
            ["each node stopped, started and back in sync in " + ", ".join(f"{s:.0f} s" for s in per_node)])


def frozen_node(cluster: Cluster, run: FaultRun, progress: Progress, seconds: float = 20.0):
    """The node leading most busy partitions frozen (SIGSTOP) for `seconds`, then resumed: it stops
    answering everyone, as a hung JVM or a long pause does. It is fenced after the broker session
    timeout and catches up on its return."""
    node, leaders = _busiest(cluster, run)
    pid = cluster.pid(node)
    seen = len(progress.collector.records)
    t = time.monotonic()
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(pid, signal.SIGCONT)
    next_s, every_s = _after(progress, t, seen)
    synced = cluster.in_sync()
    gap = progress.longest_gap(t, time.monotonic())
    log(f"frozen node: node {node} ({leaders}) stopped {seconds:.0f} s; next settlement {next_s:.1f} s, every "
        f"partition {every_s:.1f} s, in sync {synced:.1f} s after SIGCONT")
    return (f"next settlement {next_s:.1f} s, every partition {every_s:.1f} s after the freeze",
            [f"node {node} (leader of {leaders}) SIGSTOPped {seconds:.0f} s", f"longest pause {gap:.1f} s",
             f"in sync {synced:.1f} s after SIGCONT"])


DISK_MB = 400


def small_disk(node: int):
    """prepare: node `node`'s data directory on a loop-mounted ext4 file system of DISK_MB."""
    def prepare(cluster: Cluster) -> None:
        image = cluster.dir.parent / f"node-{node}.img"
        mount = cluster.dir / f"node-{node}"
        mount.mkdir(parents=True, exist_ok=True)
        subprocess.run(["truncate", "-s", f"{DISK_MB}M", str(image)], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-m", "0", "-F", str(image)], check=True, capture_output=True)
        subprocess.run(["mount", "-o", "loop", str(image), str(mount)], check=True)
        cluster.mounts = getattr(cluster, "mounts", []) + [mount]  # type: ignore[attr-defined]
    return prepare


def unmount(cluster: Cluster) -> None:
    for mount in getattr(cluster, "mounts", []):
        subprocess.run(["umount", str(mount)], check=False)


def disk_full(node: int):
    def fault(cluster: Cluster, run: FaultRun, progress: Progress):
        """Node `node`'s disk filled up (a file taking every free block) until the node stops
        itself (its only log directory failed), then the file removed and the node started again."""
        mount = cluster.dir / f"node-{node}"
        filler, tail = mount / "filler", mount / "filler.tail"
        st = os.statvfs(mount)
        subprocess.run(["fallocate", "-l", str(st.f_bavail * st.f_frsize - (4 << 20)), str(filler)], check=True)
        # The last blocks by writing until the file system refuses (dd's ENOSPC is the point).
        subprocess.run(["dd", "if=/dev/zero", f"of={tail}", "bs=64k"], check=False, capture_output=True)
        t = time.monotonic()
        pid = cluster.pid(node)
        wait_until(lambda: not _alive(pid), 180, f"node {node} to stop on the full disk", interval=0.2)
        stopped = time.monotonic() - t
        next_s, every_s = _after(progress, time.monotonic(), len(progress.collector.records))
        reason = _failure_line(mount / "kafka.log")
        filler.unlink()
        tail.unlink()
        t_start = time.monotonic()
        cluster.start(node)
        synced = cluster.in_sync()
        back = time.monotonic() - t_start
        gap = progress.longest_gap(t, time.monotonic())
        log(f"disk full: node {node} stopped {stopped:.1f} s after its disk filled ({reason}); back in sync "
            f"{back:.1f} s after the disk was freed; longest pause {gap:.1f} s")
        return (f"longest pause {gap:.1f} s",
                [f"node {node}'s {DISK_MB} MB disk filled: it stopped {stopped:.1f} s later ({reason})",
                 f"the next settlement {next_s:.1f} s, every partition {every_s:.1f} s after it stopped",
                 f"freed, restarted and in sync {back:.1f} s later ({synced:.1f} s of that catching up)"])
    return fault


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    status = pathlib.Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text()


def _failure_line(log_path: pathlib.Path) -> str:
    try:
        lines = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return "no log"
    for line in lines:
        if "No space left" in line or "all log dirs" in line.lower() or "Shutdown broker because" in line:
            return line.split("] ", 1)[-1][:160]
    return "its log holds no reason: it could not be written to the full disk either"
