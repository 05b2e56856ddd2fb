"""A three-node KRaft cluster of the fault tests' own (infra/kafka/kafka.sh --nodes 3): its own data
directories and loopback ports, secured as every broker here (the developer's .secrets/: its CA,
certificate and role logins, only read). The shared broker on 9092 is never touched. Always stopped
at the end."""
from __future__ import annotations

import collections
import os
import pathlib
import random
import socket
import subprocess
import time

from kafka import KafkaAdminClient

from craps_streams.kafka.settings import client_settings
from tests.faults import network_cut
from tests.faults.harness import KAFKA_SH, log

NODES = 3
OFFSETS_PARTITIONS = 8  # offsets.topic.num.partitions, infra/kafka/server.properties


def _java_hash(text: str) -> int:
    """Java's String.hashCode (what Kafka hashes a group id with to place it), as a signed int."""
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _offsets_partition(group: str) -> int:
    """The partition of the group offsets whose leader coordinates `group`: Kafka's
    Utils.abs(group.hashCode()) % offsets.topic.num.partitions."""
    h = _java_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % OFFSETS_PARTITIONS


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_runs(count: int, runs: int = 2) -> list[int]:
    """`runs` bases of `count` consecutive free loopback ports each (node I's port is base + I - 1)."""
    rng = random.Random()
    while True:
        base = rng.randrange(20000, 30000, 10)
        bases = [base + 100 * k for k in range(runs)]
        if all(_free(b + i) for b in bases for i in range(count)):
            return bases


class Cluster:
    """`kafka.sh --nodes 3` on a private directory and free ports; `kill(i)`, `start(i)` for faults."""

    def __init__(self, tmp: pathlib.Path, heap: str = "-Xms512m -Xmx512m", cuttable: bool = False):
        """`cuttable`: each node runs in a cgroup of its own, so `cut_off(node)` can cut it off by
        the network (tests/faults/network_cut.py)."""
        self.port, self.controller_port = free_port_runs(NODES)
        self.dir = tmp / "kafka-cluster"
        self.env = {**os.environ, "KAFKA_NODES": str(NODES), "KAFKA_CLUSTER_DIR": str(self.dir),
                    "KAFKA_PORT": str(self.port), "KAFKA_CONTROLLER_PORT": str(self.controller_port),
                    "KAFKA_HEAP_OPTS": heap}
        self.env.pop("KAFKA_DATA_DIR", None)
        self.bootstrap = ",".join(f"127.0.0.1:{self.port + i}" for i in range(NODES))
        self._admin: KafkaAdminClient | None = None
        self.cgroups: dict[int, pathlib.Path] = {}
        if cuttable:
            why = network_cut.available()
            assert why is None, f"a node cannot be cut off by the network here: {why}"
            self.cgroups = {i: network_cut.make_cgroup(f"craps-cluster-{self.port}-node-{i}")
                            for i in range(1, NODES + 1)}

    def sh(self, command: str, node: int | None = None, timeout: float = 240) -> str:
        args = ["bash", str(KAFKA_SH), command] + (["--node", str(node)] if node else [])
        # A node started in its cgroup (kafka.sh and the JVM it launches): its sockets are the cut's.
        preexec = network_cut.enter(self.cgroups[node]) if command == "start" and node in self.cgroups else None
        r = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=timeout,
                           preexec_fn=preexec)
        assert r.returncode == 0, f"kafka.sh {command} {node or ''} (test cluster) failed:\n{r.stderr[-3000:]}"
        return r.stdout + r.stderr

    def __enter__(self) -> Cluster:
        t0 = time.monotonic()
        try:
            for node in self.cgroups:  # each in its cgroup first; `up` then waits for them all
                self.sh("start", node)
            self.sh("up")
        except BaseException:
            try:
                self.sh("stop")  # started but never ready: never leave it running
            finally:
                self._remove_cgroups()
            raise
        log(f"cluster: three nodes up on {self.bootstrap} in {time.monotonic() - t0:.1f} s")
        return self

    def __exit__(self, *exc) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            except Exception:  # noqa: BLE001
                pass
        try:
            self.sh("stop")
        finally:
            self._remove_cgroups()

    def _remove_cgroups(self) -> None:
        for cgroup in self.cgroups.values():
            network_cut.remove_cgroup(cgroup)

    def cut_off(self, node: int) -> network_cut.Cut:
        """The cut of node `node` (not yet in place): `with cluster.cut_off(n): ...` heals on leaving."""
        assert node in self.cgroups, "the cluster was not started cuttable"
        return network_cut.Cut(self.cgroups[node])

    def node_of_port(self, port: int) -> int:
        return port - self.port + 1

    def pid(self, node: int) -> int | None:
        try:
            return int((self.dir / f"node-{node}" / "kafka.pid").read_text())
        except (OSError, ValueError):
            return None

    def kill(self, node: int) -> float:
        """kill -9 node `node`; returns the monotonic time of the kill."""
        pid = self.pid(node)
        assert pid, f"node {node} has no pid"
        t = time.monotonic()
        os.kill(pid, 9)
        self.sh("kill", node)  # waits until it is gone, removes the pid file
        return t

    def start(self, node: int) -> None:
        self.sh("start", node)
        self.sh("wait", node)

    def admin(self) -> KafkaAdminClient:
        if self._admin is None:
            self._admin = KafkaAdminClient(**{**client_settings("admin", self.bootstrap),
                                              "request_timeout_ms": 5000, "client_id": "craps-faults-cluster"})
        return self._admin

    def leaders(self, topics: list[str]) -> collections.Counter:
        """How many partitions of `topics` each node leads."""
        count: collections.Counter = collections.Counter()
        for t in self.admin().describe_topics(topics):
            for p in t.get("partitions") or []:
                if p.get("leader_id", -1) >= 0:
                    count[p["leader_id"]] += 1
        return count

    def active_controller(self) -> int:
        """The node id of the active KRaft controller: the leader of the metadata quorum (a broker's
        DescribeCluster names any broker as the controller in KRaft)."""
        quorum = self.admin().describe_metadata_quorum()
        return quorum["topics"][0]["partitions"][0]["leader_id"]

    def group_coordinator(self, group: str) -> int:
        """The node coordinating `group`: the leader of its partition of the group offsets (read
        afresh: the admin client's FindCoordinator answer is cached)."""
        [described] = self.admin().describe_topics(["__consumer_offsets"])
        return next(p["leader_id"] for p in described["partitions"] if p["partition_index"] == _offsets_partition(group))

    def move_group_coordinator(self, group: str, node: int, timeout: float = 60) -> None:
        """Make node `node` coordinate `group`: its partition of the group offsets gets `node` as
        the preferred replica, then a preferred leader election. The group's members follow on
        their next request."""
        from kafka import TopicPartition

        partition = _offsets_partition(group)
        tp = TopicPartition("__consumer_offsets", partition)
        [described] = self.admin().describe_topics(["__consumer_offsets"])
        replicas = next(p["replica_nodes"] for p in described["partitions"] if p["partition_index"] == partition)
        refused = self.admin().alter_partition_reassignments({tp: [node] + [r for r in replicas if r != node]})
        assert not any(refused.values()), f"the reassignment of {tp} was refused: {refused}"
        deadline = time.monotonic() + timeout
        while self.group_coordinator(group) != node:
            assert time.monotonic() < deadline, f"node {node} did not become {group}'s coordinator"
            try:
                self.admin().elect_leaders(0, {"__consumer_offsets": [partition]}, raise_errors=False)
            except Exception as e:  # noqa: BLE001 - the reassignment still in progress: try again
                log(f"preferred leader election of {tp}: {e!r}")
            time.sleep(1)

    def in_sync(self, timeout: float = 120) -> float:
        from craps_streams.kafka.cluster import wait_in_sync

        return wait_in_sync(self.bootstrap, timeout)
