"""One read of a topic, read_committed, from given offsets up to the end offsets taken at the start.

Used by the worker's table-state recovery, the archive, `replay --from-topic` and the audit: what
they see is what a finance consumer sees, aborted transactions never, and the end offsets under
read_committed are the last stable offsets, so a read ends at the last committed transaction.

The timeout is for stalls: it restarts whenever a poll returns records, so a long topic read at
any speed finishes, and a broker that stops answering fails the read instead of hanging it.
"""
from __future__ import annotations

import time
import uuid
from typing import Iterable, Iterator, Mapping

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError as SyncKafkaError

from craps_streams.kafka import consumers
from craps_streams.kafka.settings import client_settings

# A broker away, as either client library raises it: for a shell that reads through both (the
# worker: aiokafka for its group and transactions, kafka-python for its recovery's reads).
TRANSIENT = (*consumers.TRANSIENT, SyncKafkaError)


def read_committed(topic: str, role: str, *, bootstrap: str | None = None,
                   partitions: Iterable[int] | None = None, starts: Mapping[int, int] | None = None,
                   ends: Mapping[int, int] | None = None, stall_timeout_s: float = 120.0) -> Iterator:
    """Committed records of `topic` (kafka-python ConsumerRecords: .partition .offset .key .value
    .timestamp .topic), per partition in offset order, from `starts[partition]` (default: the
    beginning) up to the end offsets taken when the read starts, or up to `ends[partition]` (a cut
    taken earlier: `craps_streams.kafka.cut`; a partition not in `ends` is not read).

    `partitions`: only these (default: every partition; a topic that does not exist is a
    ValueError). Raises TimeoutError after `stall_timeout_s` without progress.
    """
    settings = client_settings(role, bootstrap)
    consumer = KafkaConsumer(**settings, group_id=None, client_id=f"craps-{role}-{uuid.uuid4().hex[:6]}",
                             isolation_level="read_committed", enable_auto_commit=False,
                             auto_offset_reset="earliest", max_partition_fetch_bytes=8 * 1024 * 1024)
    starts = starts or {}
    try:
        if partitions is None and ends is not None:
            partitions = sorted(ends)
        if partitions is None:
            known = consumer.partitions_for_topic(topic)
            if not known:
                raise ValueError(f"topic {topic!r} does not exist on {settings['bootstrap_servers']}")
            partitions = sorted(known)
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        end = consumer.end_offsets(tps)  # the last stable offsets under read_committed
        if ends is not None:
            end = {tp: ends[tp.partition] for tp in tps}
        begin = consumer.beginning_offsets(tps)
        for tp in tps:
            consumer.seek(tp, min(max(starts.get(tp.partition, 0), begin[tp]), end[tp]))
        remaining = {tp for tp in tps if end[tp] > consumer.position(tp)}
        deadline = time.monotonic() + stall_timeout_s
        while remaining:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: no progress towards the end offsets for {stall_timeout_s} s")
            for tp, records in consumer.poll(timeout_ms=500, max_records=10_000).items():
                for record in records:
                    if record.offset < end[tp]:
                        yield record
                deadline = time.monotonic() + stall_timeout_s
            remaining = {tp for tp in remaining if consumer.position(tp) < end[tp]}
    finally:
        consumer.close()


def end_offsets(topic: str, role: str, *, bootstrap: str | None = None) -> dict[int, int]:
    """partition -> end offset (read_committed: the last stable offset) of every partition."""
    consumer = KafkaConsumer(**client_settings(role, bootstrap), group_id=None,
                             isolation_level="read_committed", enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        return {tp.partition: offset for tp, offset in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def partition_of(key: bytes, partitions: int) -> int:
    """The partition a keyed record goes to: the producers' default partitioner (murmur2 of the
    key, as Kafka's Java client and aiokafka compute it)."""
    from kafka.partitioner.default import murmur2

    return (murmur2(key) & 0x7FFFFFFF) % partitions


def offset_ranges(topic: str, role: str, *, bootstrap: str | None = None) -> dict[int, tuple[int, int]]:
    """partition -> (beginning offset, end offset under read_committed) of every partition of
    `topic`; {} when it does not exist."""
    consumer = KafkaConsumer(**client_settings(role, bootstrap), group_id=None, enable_auto_commit=False,
                             isolation_level="read_committed")
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        if not tps:
            return {}
        begin, end = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
        return {tp.partition: (begin[tp], end[tp]) for tp in tps}
    finally:
        consumer.close()


def read_backwards(topic: str, role: str, partition: int, offsets: tuple[int, int], enough, *,
                   bootstrap: str | None = None, first_chunk: int = 2000, stall_timeout_s: float = 60.0) -> None:
    """Read one partition's committed records between `offsets` (beginning, end: `offset_ranges`)
    from the end towards the beginning, a chunk at a time (each chunk in offset order, each four
    times longer than the one after it), calling `enough(chunk)` after each; stop once it returns
    true or the beginning is read. What a look for the last records of a few keys costs: the end
    of the partition, not all of it."""
    begin, end = offsets
    step = first_chunk
    while end > begin:
        start = max(begin, end - step)
        chunk = list(read_committed(topic, role, bootstrap=bootstrap, partitions=[partition], starts={partition: start},
                                    ends={partition: end}, stall_timeout_s=stall_timeout_s))
        if enough(chunk):
            return
        end, step = start, step * 4
