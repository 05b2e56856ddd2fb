"""Read a Kafka topic from the beginning up to its end as of now, read_committed.

What the audit and the tests see is what a finance consumer sees: aborted transactions never.
"""
from __future__ import annotations

import time
import uuid
from typing import Iterator

from kafka import KafkaConsumer, TopicPartition

from streams.kafka.security import security_settings
from streams.topics import default_bootstrap


def read_topic(topic: str, bootstrap: str | None = None, timeout_s: float = 60.0,
               role: str = "audit") -> Iterator:
    """Every committed message of `topic` up to the end offsets taken at the start, read as `role`
    (the audit and replay --from-topic read as the auditor)."""
    consumer = KafkaConsumer(**security_settings(role), bootstrap_servers=bootstrap or default_bootstrap(),
                             group_id=None, client_id=f"craps-reader-{uuid.uuid4().hex[:6]}",
                             isolation_level="read_committed", enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=1000)
    try:
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        end = consumer.end_offsets(partitions)  # last stable offsets under read_committed
        remaining = {tp for tp in partitions if end[tp] > consumer.position(tp)}
        deadline = time.monotonic() + timeout_s
        while remaining and time.monotonic() < deadline:
            for tp, messages in consumer.poll(timeout_ms=500, max_records=5000).items():
                for m in messages:
                    if m.offset < end[tp]:
                        yield m
            remaining = {tp for tp in remaining if consumer.position(tp) < end[tp]}
        if remaining:
            raise TimeoutError(f"{topic}: could not read up to the end offsets in {timeout_s} s")
    finally:
        consumer.close()
