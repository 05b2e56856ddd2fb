"""Kafka topic names and configs for craps-streams, in one place (no Kafka client here: the
admin that creates them is craps_streams.kafka.topics).

    craps-streams topics            # create missing topics, print what exists
    craps-streams topics --list     # only print

Environment:
    CRAPS_TOPIC_PREFIX         prefix of every topic name (default "craps.")
    CRAPS_APP_ID               the floor's worker group / transactional id prefix (default craps-streams)
    CRAPS_REPLICATION_FACTOR   replication factor for new topics (default: the cluster's size, at most 3)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, Mapping

REPLICATION_FACTOR_ENV = "CRAPS_REPLICATION_FACTOR"

# Topic names. CRAPS_TOPIC_PREFIX (default "craps.") lets tests and benchmarks run on topics of
# their own beside a live floor on the same broker.
TOPIC_PREFIX = os.environ.get("CRAPS_TOPIC_PREFIX", "craps.")
# The settling workers' group id and transactional id prefix: with the prefix, what a floor's ACLs name.
APP_ID = os.environ.get("CRAPS_APP_ID", "craps-streams")
TABLE_EVENTS = TOPIC_PREFIX + "table-events"
SETTLEMENTS = TOPIC_PREFIX + "settlements"
LAYOUT_MARKERS = TOPIC_PREFIX + "layout-markers"
SURVEILLANCE = TOPIC_PREFIX + "surveillance"
REJECTIONS = TOPIC_PREFIX + "rejections"
# The state of every table, the worker's changelog: compacted, one record per table kept.
TABLE_STATE = TOPIC_PREFIX + "table-state"
# What the worker writes in its transactions, each output record in its input's partition number.
WORKER_OUTPUTS = (SETTLEMENTS, LAYOUT_MARKERS, SURVEILLANCE, REJECTIONS, TABLE_STATE)

# `make run` gives each floor topics of its own, craps.run-<time>.* (pruned by `topics --prune-runs`).
RUN_PREFIX = "craps.run-"

PARTITIONS = 8
RETAIN_FOREVER_MS = -1
SEVEN_DAYS_MS = 7 * 24 * 60 * 60 * 1000


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)


def _delete_policy(retention_ms: int) -> Dict[str, str]:
    return {"cleanup.policy": "delete", "retention.ms": str(retention_ms)}


TOPICS: Dict[str, TopicSpec] = {
    spec.name: spec
    for spec in (
        # Audit history of everything that happened at the table: kept forever.
        TopicSpec(TABLE_EVENTS, PARTITIONS, _delete_policy(RETAIN_FOREVER_MS)),
        TopicSpec(SETTLEMENTS, PARTITIONS, _delete_policy(RETAIN_FOREVER_MS)),
        TopicSpec(LAYOUT_MARKERS, PARTITIONS, _delete_policy(SEVEN_DAYS_MS)),
        TopicSpec(SURVEILLANCE, PARTITIONS, _delete_policy(RETAIN_FOREVER_MS)),
        TopicSpec(REJECTIONS, PARTITIONS, _delete_policy(RETAIN_FOREVER_MS)),
        TopicSpec(TABLE_STATE, PARTITIONS, {"cleanup.policy": "compact", "min.compaction.lag.ms": "60000"}),
    )
}


# A cluster of three or more keeps every partition on three brokers and takes a write (acks=all)
# once two have it: one broker may be lost, and the floor keeps settling, with nothing lost.
MAX_REPLICATION_FACTOR = 3


def replication_factor(brokers: int | None = None) -> int:
    """CRAPS_REPLICATION_FACTOR when set; otherwise the cluster's size up to 3 (`brokers`, the
    brokers the administrator sees), 1 when the size is not known."""
    raw = os.environ.get(REPLICATION_FACTOR_ENV)
    if not raw:
        return min(brokers, MAX_REPLICATION_FACTOR) if brokers else 1
    try:
        rf = int(raw)
    except ValueError:
        raise ValueError(f"{REPLICATION_FACTOR_ENV} must be an integer, got {raw!r}") from None
    if rf < 1:
        raise ValueError(f"{REPLICATION_FACTOR_ENV} must be >= 1, got {rf}")
    return rf


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
