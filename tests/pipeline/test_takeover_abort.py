"""A takeover ends whatever its transactional id left open on the partition's outputs
(craps_streams.kafka.producers.abort_hanging), on the real broker: the records it writes to do so are
aborted (no read_committed reader sees them), and no transaction stays open on any output
partition (the last stable offset is the end), so the owner's first commit can only commit its
own records. The offset it adds never takes effect. The case it is for, records a stopping broker left open,
is the broker-restart fault scenario's (tests/faults)."""
from __future__ import annotations

import asyncio

import pytest
from aiokafka.structs import TopicPartition as SourcePartition  # what the worker's consumer gives
from kafka import KafkaConsumer, TopicPartition

from craps_streams.kafka.producers import HANGING_KEY, abort_hanging, transactional_producer
from craps_streams.kafka.reader import read_committed
from craps_streams.kafka.settings import client_settings

pytestmark = pytest.mark.kafka

OUTPUTS = ("settlements", "layout-markers", "surveillance", "rejections", "table-state")


def _uncommitted(topic: str, partition: int, kafka: str) -> tuple[list, int, int]:
    """(records read_uncommitted, high watermark, last stable offset) of one partition."""
    tp = TopicPartition(topic, partition)
    plain = KafkaConsumer(**client_settings("admin", kafka), group_id=None, isolation_level="read_uncommitted",
                          enable_auto_commit=False, auto_offset_reset="earliest")
    stable = KafkaConsumer(**client_settings("admin", kafka), group_id=None, isolation_level="read_committed",
                           enable_auto_commit=False)
    try:
        plain.assign([tp])
        high = plain.end_offsets([tp])[tp]
        lso = stable.end_offsets([tp])[tp]
        records = []
        while plain.position(tp) < high:
            for batch in plain.poll(timeout_ms=500).values():
                records.extend(batch)
        return records, high, lso
    finally:
        plain.close()
        stable.close()


def test_a_takeover_aborts_its_own_records_and_leaves_nothing_open(pipeline, kafka):
    topics = [pipeline.prefix + name for name in OUTPUTS]
    partition = 2

    async def two_takeovers():
        for _ in range(2):  # a partition taken over twice: each time the same
            producer = transactional_producer(f"{pipeline.app_id}-takeover", 60_000, role="admin", bootstrap=kafka)
            await producer.start()
            try:
                await abort_hanging(producer, topics, partition,
                                    SourcePartition(pipeline.prefix + "table-events", partition), pipeline.app_id)
            finally:
                await producer.stop()

    asyncio.run(two_takeovers())
    for topic in topics:
        records, high, lso = _uncommitted(topic, partition, kafka)
        assert [r.key for r in records] == [HANGING_KEY, HANGING_KEY], topic  # written, twice ...
        assert [r.value for r in records] == [None, None]  # tombstones: nothing to read even if kept
        assert lso == high, (topic, lso, high)  # ... and nothing left open
        assert list(read_committed(topic, "admin", bootstrap=kafka, partitions=[partition])) == []  # aborted
    # The offset commit in the aborted transactions never took effect: the group has none.
    offsets = KafkaConsumer(**client_settings("admin", kafka), group_id=pipeline.app_id, enable_auto_commit=False)
    try:
        assert offsets.committed(TopicPartition(pipeline.prefix + "table-events", partition)) is None
    finally:
        offsets.close()
