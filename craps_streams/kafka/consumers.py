"""Consumers that follow a topic: the worker's group consumer and the tail's follower.

One-off reads up to the end offsets (recovery, archive, replay, audit) are in craps_streams.kafka.reader.
"""
from __future__ import annotations

import asyncio
import uuid

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import IllegalOperation, KafkaError, ProducerFenced
from kafka import KafkaConsumer
from kafka.errors import KafkaError as SyncKafkaError

from craps_streams.kafka.settings import client_settings

__all__ = ["ConsumerRebalanceListener", "TopicPartition", "ProducerFenced", "IllegalOperation", "TRANSIENT",
           "group_consumer", "follower"]

# Errors of a broker that is away for a while (restart, network): retry, never stop the floor for them.
TRANSIENT = (KafkaError, SyncKafkaError, OSError, TimeoutError, asyncio.TimeoutError)


def group_consumer(group_id: str, *, session_timeout_ms: int, heartbeat_interval_ms: int,
                   max_poll_interval_ms: int, role: str = "worker",
                   bootstrap: str | None = None) -> AIOKafkaConsumer:
    """A consumer group member reading committed records only, committing offsets itself (in the
    worker's transactions, never automatically)."""
    return AIOKafkaConsumer(**client_settings(role, bootstrap), group_id=group_id, isolation_level="read_committed",
                            enable_auto_commit=False, auto_offset_reset="earliest",
                            session_timeout_ms=session_timeout_ms, heartbeat_interval_ms=heartbeat_interval_ms,
                            max_poll_interval_ms=max_poll_interval_ms, fetch_max_wait_ms=20)


def follower(topics: list[str], *, from_beginning: bool, role: str = "viewer",
             bootstrap: str | None = None) -> KafkaConsumer:
    """An iterator of the topics' committed records, from the beginning or from now on, in a
    group of its own (nothing committed: a follower never moves anyone else's position)."""
    return KafkaConsumer(*topics, **client_settings(role, bootstrap), group_id=f"craps-tail-{uuid.uuid4().hex[:8]}",
                         isolation_level="read_committed", enable_auto_commit=False,
                         auto_offset_reset="earliest" if from_beginning else "latest")
