"""Kafka topic names and configs for craps-streams, in one place (no Kafka client here: the
admin that creates them is craps_streams.kafka.topics).

    craps-streams topics            # create missing topics, print what exists
    craps-streams topics --list     # only print

A floor's topic names are a `Topics` value built from its prefix (the setting CRAPS_TOPIC_PREFIX,
craps_streams/settings.py); nothing here reads the environment.
"""

from __future__ import annotations

from typing import Dict, Mapping

import msgspec

# The prefix lets tests and benchmarks run on topics of their own beside a live floor on the same broker.
DEFAULT_PREFIX = "craps."
# The settling workers' group id and transactional id prefix: with the prefix, what a floor's ACLs name.
DEFAULT_APP_ID = "craps-streams"

# `make run` gives each floor topics of its own, craps.run-<time>.* (pruned by `topics --prune-runs`).
RUN_PREFIX = "craps.run-"

PARTITIONS = 8
RETAIN_FOREVER_MS = -1
SEVEN_DAYS_MS = 7 * 24 * 60 * 60 * 1000


class TopicSpec(msgspec.Struct, frozen=True):
    name: str
    partitions: int
    configs: Mapping[str, str] = msgspec.field(default_factory=dict)


def _delete_policy(retention_ms: int) -> Dict[str, str]:
    return {"cleanup.policy": "delete", "retention.ms": str(retention_ms)}


class Topics(msgspec.Struct, frozen=True):
    """The topic names of one floor, all under `prefix`."""

    prefix: str = DEFAULT_PREFIX

    @property
    def table_events(self) -> str:
        return self.prefix + "table-events"

    @property
    def settlements(self) -> str:
        return self.prefix + "settlements"

    @property
    def layout_markers(self) -> str:
        return self.prefix + "layout-markers"

    @property
    def surveillance(self) -> str:
        return self.prefix + "surveillance"

    @property
    def rejections(self) -> str:
        return self.prefix + "rejections"

    @property
    def table_state(self) -> str:
        """The state of every table, the worker's changelog: compacted, one record per table kept."""
        return self.prefix + "table-state"

    @property
    def worker_outputs(self) -> tuple[str, ...]:
        """What the worker writes in its transactions, each output record in its input's partition number."""
        return (self.settlements, self.layout_markers, self.surveillance, self.rejections, self.table_state)

    def specs(self) -> Dict[str, TopicSpec]:
        """Every topic of the floor with its partitions and configs, by name."""
        return {spec.name: spec for spec in (
            # Audit history of everything that happened at the table: kept forever.
            TopicSpec(self.table_events, PARTITIONS, _delete_policy(RETAIN_FOREVER_MS)),
            TopicSpec(self.settlements, PARTITIONS, _delete_policy(RETAIN_FOREVER_MS)),
            TopicSpec(self.layout_markers, PARTITIONS, _delete_policy(SEVEN_DAYS_MS)),
            TopicSpec(self.surveillance, PARTITIONS, _delete_policy(RETAIN_FOREVER_MS)),
            TopicSpec(self.rejections, PARTITIONS, _delete_policy(RETAIN_FOREVER_MS)),
            TopicSpec(self.table_state, PARTITIONS, {"cleanup.policy": "compact", "min.compaction.lag.ms": "60000"}),
        )}


# A cluster of three or more keeps every partition on three brokers and takes a write (acks=all)
# once two have it: one broker may be lost, and the floor keeps settling, with nothing lost.
MAX_REPLICATION_FACTOR = 3


def replication_factor(configured: int | None = None, brokers: int | None = None) -> int:
    """`configured` (the setting CRAPS_REPLICATION_FACTOR) when given; otherwise the cluster's size
    up to 3 (`brokers`, the brokers the administrator sees), 1 when the size is not known."""
    if configured is None:
        return min(brokers, MAX_REPLICATION_FACTOR) if brokers else 1
    if configured < 1:
        raise ValueError(f"the replication factor must be >= 1, got {configured}")
    return configured


def min_insync_replicas(rf: int) -> int:
    """The in-sync replicas a write with acks=all needs: 2 of 3 (one broker may be down), all of
    fewer (two copies with one required would let a lone replica take money it can still lose)."""
    return 2 if rf >= 3 else rf


def replication_configs(rf: int) -> Dict[str, str]:
    """The topic configs a replicated topic carries explicitly, whatever the broker's defaults: its
    minimum ISR, and no unclean leader election (an out-of-sync replica never becomes leader, which
    would drop acknowledged records). None on one broker: its topics are as they always were."""
    if rf <= 1:
        return {}
    return {"min.insync.replicas": str(min_insync_replicas(rf)), "unclean.leader.election.enable": "false"}
