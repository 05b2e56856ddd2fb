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
import socket
import subprocess
import re
import threading
import time
import urllib.request

from tests.faults.cluster import Cluster
from tests.faults.harness import (
    PARTITIONS,
    FaultRun,
    Feeder,
    GroupWatch,
    Verdict,
    check,
    http_json,
    log,
    make_floor,
    owned_partitions,
    settle_everything,
    wait_until,
)


@dataclasses.dataclass
class Size:
    tables: int = 40
    hours: float = 1.0
    seed: int = 83
    rate: float = 5000.0  # events/s fed: the backlog is in the topic before the workers start
    settled_first: float = 0.15  # share of the table events settled and committed when the fault comes


BUSY = ("table-events", "settlements", "table-state")


def _busiest(cluster: Cluster, run: FaultRun) -> tuple[int, dict]:
    leaders = cluster.leaders([run.topic(t) for t in BUSY])
    node = max(sorted(leaders), key=lambda n: leaders[n])
    return node, dict(sorted(leaders.items()))


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
            progress = Progress(run)
            progress.start()
            wait_until(lambda: all(owned_partitions(w) for w in started), 60, "every worker to own partitions")
            wait_until(lambda: watch.settled_count() >= size.settled_first * len(floor.lines), 120,
                       "the backlog to be settling", interval=0.05)
            node, leaders = _busiest(cluster, run)
            mark = progress.mark()
            settled = sum(mark[0].values())
            t_kill = cluster.kill(node)
            # The backlog goes on behind the kill: counted from the mark (settling_again).
            next_s, every_s = progress.settling_again(mark, t_kill, from_mark=True)
            log(f"leader kill: node {node} (leads {leaders}) killed with {settled:,} of {len(floor.lines):,} "
                f"events settled; the next settlement committed {next_s:.2f} s later, every partition with "
                f"work left {every_s:.2f} s later")
            settle_everything(run, floor, collector, watch, timeout=240)
            settled_all = time.monotonic() - t_kill
            after = cluster.leaders([run.topic(t) for t in BUSY])
            dead = [w.log_path.name for w in started if w.poll() is not None]
            notes = [f"node {node} killed (partition leaders before: {leaders}, after: {dict(sorted(after.items()))})",
                     f"{settled:,} of {len(floor.lines):,} events settled at the kill",
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
    """The workers' progress as the group's committed offsets (what is settled and committed), and
    the table events' end offsets, sampled every 100 ms by a watch of its own: from them, the time
    from a fault to the next settlement committed, to every partition with work left settling
    again, and the longest stretch without a commit."""

    def __init__(self, run: FaultRun):
        super().__init__(daemon=True)
        self.watch = GroupWatch(run)
        self.samples: list[tuple[float, dict[int, int], dict[int, int]]] = []  # (t, committed, ends)
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            asked = time.monotonic()  # a sample is dated by its question: what it shows is no older
            committed, ends = self.watch.committed(), self.watch.ends()
            # The end offsets fail while a partition's leader is cut off: the committed offsets
            # (the measure) are kept with the last ends known (only the mark and the feed use them).
            ends = ends if ends is not None else (self.samples[-1][2] if self.samples else None)
            if committed is not None and ends is not None:
                self.samples.append((asked, committed, ends))
            time.sleep(0.1)

    def mark(self, timeout: float = 30) -> tuple[dict[int, int], dict[int, int]]:
        """The newest sample (committed, ends): taken just before a fault."""
        wait_until(lambda: self.samples, timeout, "the first progress sample")
        _, committed, ends = self.samples[-1]
        return committed, ends

    @staticmethod
    def busy(mark) -> set[int]:
        committed, ends = mark
        return {p for p, end in ends.items() if committed.get(p, 0) < end}

    def _firsts(self, mark, since: float, from_mark: bool = False) -> tuple[float | None, dict[int, float]]:
        # Counted from the first sample asked after the fault, not from the mark: a commit that
        # landed between the mark's question and the fault (or was answered by a node just before
        # it was cut) is no settlement after the fault. `from_mark`: counted from the mark, for a
        # backlog (below).
        committed, baseline = mark[0], None
        first, firsts = None, {}
        for t, now, _ in self.samples:
            if t < since:
                continue
            if baseline is None and not from_mark:
                committed = baseline = now
                continue
            moved = [p for p, o in now.items() if o > committed.get(p, 0)]
            if moved and first is None:
                first = t
            for p in moved:
                firsts.setdefault(p, t)
        return first, firsts

    def settling_again(self, mark, since: float, timeout: float = 180,
                       from_mark: bool = False) -> tuple[float, float]:
        """Seconds from `since` (the fault, `mark` taken just before) to the next settlement
        committed, and until every partition with work left at the mark committed again (the
        partitions the lost node led are the last).

        `from_mark`: a commit counts from the mark on, not only from the first sample after the
        fault. For a backlog with no feed behind it: a partition that settles the rest of its
        backlog before the watch's first sample after the fault (the watch's own clients waiting on
        the lost node meanwhile) never commits again, and counted from that sample it would never
        be seen settling at all."""
        busy = self.busy(mark)

        def done():
            first, firsts = self._firsts(mark, since, from_mark)
            return first is not None and busy <= firsts.keys()

        wait_until(done, timeout, f"partitions {sorted(busy)} to settle again after the fault", interval=0.1)
        first, firsts = self._firsts(mark, since, from_mark)
        return first - since, max([firsts[p] for p in busy] or [first]) - since

    def longest_gap(self, since: float, until: float) -> float:
        """The longest time without a new commit between `since` and the last commit before
        `until`: the quiet after the feed's end is not a pause."""
        gap, last_t, last_total = 0.0, since, None
        for t, committed, _ in self.samples:
            total = sum(committed.values())
            if t < since:
                last_total = total
                continue
            if t > until:
                break
            if last_total is not None and total > last_total:
                gap = max(gap, t - last_t)
                last_t = t
            last_total = total
        return gap

    def fed(self, since: float, until: float) -> tuple[int, float | None]:
        """The table events the feed wrote between `since` and `until` (the topic's end offsets),
        and the seconds from `since` to the last sample that saw them grow: when the feed itself
        stalls, the workers have nothing left to settle."""
        window = [(t, sum(ends.values())) for t, _, ends in self.samples if since <= t <= until]
        if not window:
            return 0, None
        last = None
        for (_, before), (t, after) in zip(window, window[1:]):
            if after > before:
                last = t - since
        return window[-1][1] - window[0][1], last

    def stop(self) -> None:
        self.stopping.set()
        self.join(5)
        self.watch.close()


class Committed(threading.Thread):
    """What the live workers have committed, read from their /metrics every 100 ms over HTTP: the
    events (`craps_events_total`, counted once a batch's transaction committed), summed, and each
    partition's input offset committed with its last transaction (`craps_committed_offset`, the
    highest a worker shows). No Kafka client in the way, so the measure does not wait on the node
    cut off as the watch of the group's committed offsets does (its requests and its coordinator
    lookups time out too)."""

    def __init__(self, run: FaultRun):
        super().__init__(daemon=True)
        self.floor = run
        self.samples: list[tuple[float, float, dict[int, int]]] = []  # (asked, events, partition -> offset)
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            asked, total, offsets = time.monotonic(), 0.0, {}
            try:
                for w in self.floor.live_workers():
                    with urllib.request.urlopen(f"http://127.0.0.1:{w.web_port}/metrics", timeout=2) as r:
                        text = r.read().decode()
                    total += sum(float(v) for v in _EVENTS.findall(text))
                    for p, o in _OFFSETS.findall(text):
                        offsets[int(p)] = max(offsets.get(int(p), 0), int(float(o)))
                self.samples.append((asked, total, offsets))
            except OSError:
                pass
            time.sleep(0.1)

    def next_after(self, since: float) -> float | None:
        """Seconds from `since` to the first sample showing more events committed than the first
        sample asked after it."""
        after = [(t, n) for t, n, _ in self.samples if t >= since]
        return next((t - since for t, n in after[1:] if n > after[0][1]), None) if after else None

    def firsts_after(self, since: float) -> dict[int, float]:
        """Partition -> seconds from `since` to the first sample showing its committed offset above
        the first sample asked after `since` (a commit answered just before the fault is not one
        after it)."""
        after = [(t, o) for t, _, o in self.samples if t >= since]
        if not after:
            return {}
        base, firsts = after[0][1], {}
        for t, offsets in after[1:]:
            for p, o in offsets.items():
                if o > base.get(p, -1):
                    firsts.setdefault(p, t - since)
        return firsts

    def every_after(self, since: float, partitions, timeout: float = 180) -> tuple[float | None, dict[int, float]]:
        """Seconds from `since` until every one of `partitions` committed again (None: not within
        `timeout` of `since`), and each partition's own time."""
        wanted = set(partitions)
        wait_until(lambda: wanted <= self.firsts_after(since).keys() or time.monotonic() > since + timeout,
                   timeout + 5, "every partition's commit on the workers' /metrics", interval=0.2)
        firsts = self.firsts_after(since)
        return (max(firsts[p] for p in wanted) if wanted <= firsts.keys() else None), firsts

    def offsets_at(self, when: float) -> dict[int, int]:
        """The committed offsets of the last sample asked at or before `when`."""
        before = [o for t, _, o in self.samples if t <= when]
        return before[-1] if before else {}

    def stop(self) -> None:
        self.stopping.set()
        self.join(5)


_EVENTS = re.compile(r"^craps_events_total\{[^}]*\} (\S+)$", re.M)
_OFFSETS = re.compile(r'^craps_committed_offset\{partition="(\d+)"\} (\S+)$', re.M)


@dataclasses.dataclass
class LiveSize:
    tables: int = 40
    hours: float = 1.0
    seed: int = 89
    rate: float = 150.0  # events/s fed while the fault happens (a feed of about 100 s)


def live_drill(tmp, size: LiveSize, name: str, fault, prepare=None, workers: int = 2,
               cuttable: bool = False, production_timeouts: bool = False) -> Verdict:
    """A floor fed at `size.rate` into a three-node cluster, two workers settling; `fault(cluster,
    run, progress)` is done a few seconds in and returns (recovery text, notes). `prepare(cluster)`
    runs before the cluster starts (a node's data directory on a small disk, unmounted at the end).
    `cuttable`: each node in a cgroup of its own, for `cluster.cut_off(node)`. `production_timeouts`:
    the workers' group session and transaction timeouts are the settings' defaults (a floor as
    deployed), not the fault tests' short ones."""
    cluster = Cluster(tmp, cuttable=cuttable)
    try:
        if prepare is not None:
            prepare(cluster)
        return _drill(cluster, tmp, size, name, fault, workers, production_timeouts)
    finally:
        unmount(cluster)


def _drill(cluster: Cluster, tmp, size: LiveSize, name: str, fault, workers: int,
           production_timeouts: bool) -> Verdict:
    with cluster:
        run = FaultRun(tmp, cluster.bootstrap, **(_PRODUCTION if production_timeouts else {}))
        watch = progress = feeder = None
        try:
            run.create_topics()
            floor = make_floor(run, size.tables, size.hours, size.seed)
            collector = run.collector("settlements")
            started = [run.start_worker(f"w{i}") for i in range(workers)]
            watch = GroupWatch(run)
            wait_until(lambda: all(owned_partitions(w) for w in started), 60, "every worker to own partitions")
            feeder = Feeder(run, floor.lines, size.rate).start()
            progress = Progress(run)
            progress.start()
            wait_until(lambda: watch.settled_count() > 500, 60, "settlements flowing", interval=0.1)
            # The fault hits a steady floor: every partition owned by one worker (the workers'
            # start-up takeovers done), as a kill -9 or a cut in the middle of a shift would.
            wait_until(lambda: _steady(run), 120, "every partition owned by exactly one worker", interval=0.5)
            # A fault may also give the seconds from it to the next settlement committed (drills.py
            # holds some of them to a bound).
            recovery, notes, *next_s = fault(cluster, run, progress)
            feeder.wait(timeout=600)
            settle_everything(run, floor, collector, watch, timeout=300)
            dead = [w.log_path.name for w in started if w.poll() is not None]
            if dead:
                notes.append(f"workers exited: {dead}")
            v = check(run, floor, collector, name, recovery, notes)
            v.next_settlement_s = next_s[0] if next_s else None  # type: ignore[attr-defined]
            v.every_partition_s = next_s[1] if len(next_s) > 1 else None  # type: ignore[attr-defined]
            return v
        finally:
            for thing in (progress, feeder, watch):
                if thing is not None:
                    (thing.stop if thing is progress else thing.kill if thing is feeder else thing.close)()
            run.close()


def _default(field: str) -> int:
    from craps_streams.settings import Settings

    return getattr(Settings(), field)


_PRODUCTION = {"session_ms": _default("session_timeout_ms"), "transaction_ms": _default("transaction_timeout_ms")}


def _steady(run: FaultRun) -> bool:
    owned = sorted(p for w in run.live_workers() for p in http_json(w.web_port, "/state")["partitions"])
    return owned == list(range(PARTITIONS))


def controller_kill(cluster: Cluster, run: FaultRun, progress: Progress):
    """kill -9 the active KRaft controller, then start it again once the floor settles on."""
    node = cluster.active_controller()
    mark = progress.mark()
    t = cluster.kill(node)
    next_s, every_s = progress.settling_again(mark, t)
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
    mark = progress.mark()
    t = time.monotonic()
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(pid, signal.SIGCONT)
    next_s, every_s = progress.settling_again(mark, t)
    synced = cluster.in_sync()
    gap = progress.longest_gap(t, time.monotonic())
    log(f"frozen node: node {node} ({leaders}) stopped {seconds:.0f} s; next settlement {next_s:.1f} s, every "
        f"partition {every_s:.1f} s, in sync {synced:.1f} s after SIGCONT")
    return (f"next settlement {next_s:.1f} s, every partition {every_s:.1f} s after the freeze",
            [f"node {node} (leader of {leaders}) SIGSTOPped {seconds:.0f} s", f"longest pause {gap:.1f} s",
             f"in sync {synced:.1f} s after SIGCONT"])


def partition(seconds: float = 30.0, worst: bool = False):
    def fault(cluster: Cluster, run: FaultRun, progress: Progress):
        """The node leading most busy partitions cut off by the network for `seconds` (nothing it
        sends leaves, nothing sent to it arrives: tests/faults/network_cut.py), then healed. Unlike
        a frozen node it keeps running on its own side: it still thinks it leads until it learns
        otherwise, and on its return it follows the new leaders and truncates what it alone wrote.

        `worst`: the node cut is the active KRaft controller, made the coordinator of the workers'
        group first: the cluster elects a new controller before anything can fence the cut node
        and move the group's coordinator, and every worker's commit waits for that move."""
        if worst:
            node = cluster.active_controller()
            cluster.move_group_coordinator(run.app_id, node)
            # The members follow their coordinator's move before the cut, on a steady floor again.
            wait_until(lambda: _steady(run) and cluster.active_controller() == node
                       and cluster.group_coordinator(run.app_id) == node, 60,
                       f"a steady floor with node {node} the controller and the group's coordinator", interval=0.5)
            time.sleep(3)
            leaders = dict(sorted(cluster.leaders([run.topic(t) for t in BUSY]).items()))
        else:
            node, leaders = _busiest(cluster, run)
        controller = _try(cluster.active_controller)
        coordinator = _try(lambda: cluster.group_coordinator(run.app_id))
        pid = cluster.pid(node)
        node_log = cluster.dir / f"node-{node}" / "kafka.log"
        seen = node_log.stat().st_size
        others = [n for n in (1, 2, 3) if n != node]
        mark = progress.mark()
        committed = Committed(run)
        committed.start()
        time.sleep(1)
        cut = cluster.cut_off(node)
        # A loopback port of the drill's own (the kernel completes a connection to a listening
        # socket without an accept): the cut must leave it reachable, as the other nodes. Never a
        # broker the drill did not start, which a machine may not run.
        witness = socket.create_server(("127.0.0.1", 0))
        try:
            cut.cut()
            t, cut_at = time.monotonic(), _utc_ms()
            # Only the one node is cut off: the drill's own port and the other nodes still answer.
            answers = {f"a loopback port of the drill's own ({witness.getsockname()[1]})":
                       _connects(witness.getsockname()[1]),
                       **{f"node {n}": _answers(cluster.port + n - 1) for n in others},
                       f"node {node} (cut)": _answers(cluster.port + node - 1)}
            time.sleep(max(0.0, seconds - (time.monotonic() - t)))
            alive_in_cut = _alive(pid)
            during = _node_says(node_log, seen)
            seen_heal = node_log.stat().st_size
        finally:
            cut.heal()
            witness.close()
        t_heal, heal_at = time.monotonic(), _utc_ms()
        assert answers[f"node {node} (cut)"] is False and all(v for k, v in answers.items() if "(cut)" not in k), \
            f"the cut did not cut off exactly node {node}: {answers}"
        next_s, every_s = progress.settling_again(mark, t)
        every_workers, firsts = committed.every_after(t, range(PARTITIONS))
        committed.stop()
        next_workers = committed.next_after(t)
        fed, fed_last = progress.fed(t, t_heal)
        # The feed seen through the workers: events settled during the cut beyond the table events'
        # end offsets at the mark were written during the cut (the watch's end offsets go stale
        # while its own clients wait on the cut node).
        at_heal = committed.offsets_at(t_heal)
        fed_settled = {p: at_heal.get(p, 0) - end for p, end in mark[1].items() if at_heal.get(p, 0) > end}
        slowest = sorted(firsts.items(), key=lambda kv: -kv[1])[:3]
        synced = cluster.in_sync()
        back = time.monotonic() - t_heal
        gap = progress.longest_gap(t, time.monotonic())
        after = _node_says(node_log, seen_heal)
        still = _alive(pid)
        load = os.getloadavg()
        log(f"partition: node {node} ({leaders}; active controller {controller}, group coordinator {coordinator}) cut off {seconds:.0f} s (from {cut_at} to {heal_at} UTC); "
            f"the workers' /metrics: next settlement {next_workers}, every partition {every_workers} s after the cut "
            f"(per partition: {dict(sorted(firsts.items()))}); the watch: next {next_s:.1f} s, every partition {every_s:.1f} s; "
            f"longest pause {gap:.1f} s, in sync {back:.1f} s after the heal; feed: {fed} events during the cut by the watch, the last at {fed_last}, "
            f"settled beyond the ends at the cut {fed_settled}; load {load[0]:.1f} {load[1]:.1f}; node running through the cut: {alive_in_cut}, after: {still}; "
            f"its log during the cut: {during}; after the heal: {after}")
        workers_s = f"{next_workers:.1f} s" if next_workers is not None else "none"
        every_w = f"{every_workers:.1f} s" if every_workers is not None else "not within 180 s"
        return (f"the workers' /metrics: next settlement {workers_s}, every partition {every_w} after the cut "
                f"(the group's committed offsets' watch: {next_s:.1f} s and {every_s:.1f} s)",
                [f"node {node} (leader of {leaders}; the active controller was node {controller}, the group's "
                 f"coordinator node {coordinator}) cut off "
                 f"{seconds:.0f} s, then healed",
                 "while cut: " + ", ".join(f"{k} {'answered' if v else 'did not answer'}" for k, v in answers.items()),
                 "the last partitions to commit again (the workers' /metrics): "
                 + ", ".join(f"{p} at {f:.1f} s" for p, f in slowest),
                 f"longest pause {gap:.1f} s", f"in sync {back:.1f} s after the heal",
                 f"events settled during the cut beyond the table events' ends at the cut (written during "
                 f"the cut): {sum(fed_settled.values()):,} on {len(fed_settled)} of {PARTITIONS} partitions",
                 f"load average {load[0]:.1f} (1 min), {load[1]:.1f} (5 min) at the end",
                 f"the feed wrote {fed:,} table events while the node was cut off, the last "
                 + (f"{fed_last:.1f} s after the cut" if fed_last is not None else "before the cut"),
                 f"node {node} {'kept running' if alive_in_cut and still else 'EXITED'}; its log while cut: "
                 f"{during or 'nothing of note'}; after the heal: {after or 'nothing of note'}"],
                # The bounds hold the floor's own commits; the watch's figures carry its lag too.
                next_workers if next_workers is not None else next_s, every_workers)
    return fault


def _utc_ms() -> str:
    """The wall clock as the nodes' and the workers' logs write it, to the millisecond."""
    now = time.time()
    return time.strftime("%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}"


def _connects(port: int, timeout: float = 3.0) -> bool:
    """A TCP connection to 127.0.0.1:`port` within `timeout`."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def _answers(port: int, timeout: float = 3.0) -> bool:
    """A TCP connection and a TLS handshake to 127.0.0.1:`port` within `timeout`."""
    from craps_streams.kafka.settings import client_settings

    ctx = client_settings("viewer")["ssl_context"]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            with ctx.wrap_socket(s, server_hostname="127.0.0.1"):
                return True
    except OSError:
        return False


# What a node's log says of its side of a partition: the quorum, its fencing, its leadership, truncation.
_SAYS = {"fenced": ("fenced",), "truncated": ("Truncating", "truncat"), "raft election": ("Transitioning to",
         "Completed transition to"), "ISR shrunk": ("Shrinking ISR", "ISR updated"),
         "timeouts": ("TimeoutException", "timed out"), "disconnected": ("Disconnecting from node",
                                                                         "disconnected")}


def _node_says(log_path: pathlib.Path, offset: int) -> str:
    """Counts of the lines of `_SAYS` the node logged after `offset` bytes."""
    with open(log_path, "rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    counts = {what: sum(1 for line in text.splitlines() if any(w in line for w in words))
              for what, words in _SAYS.items()}
    return ", ".join(f"{what} x{n}" for what, n in counts.items() if n)


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
        next_s, every_s = progress.settling_again(progress.mark(), time.monotonic())
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
