"""Producers: the ingest feed's idempotent producer and the worker's transactional producers."""
from __future__ import annotations

import os
from typing import Iterable

from aiokafka import AIOKafkaProducer
from kafka import KafkaProducer

from streams.kafka.settings import client_settings


class DeliveryError(RuntimeError):
    """Records the producer gave up on (the broker away longer than the delivery timeout)."""


def feed_producer(role: str = "controller", bootstrap: str | None = None, live: bool = False) -> KafkaProducer:
    """An idempotent producer with acks=all: a retried send is never written twice. `live`: a table
    controller sending each event as it happens (no linger: a live event waits for nothing); a
    file sent in bulk lingers 5 ms so its records travel in batches."""
    return KafkaProducer(**client_settings(role, bootstrap), enable_idempotence=True, acks="all",
                         linger_ms=0 if live else 5, batch_size=256 * 1024, max_in_flight_requests_per_connection=5,
                         retries=2**31 - 1)


def send_all(producer: KafkaProducer, topic: str, messages: Iterable[tuple[bytes, bytes]],
             on_sent=None) -> int:
    """Send every (key, value) and flush; raises DeliveryError if any of them was not written: a
    broker outage the producer's retries did not ride out must never look like a complete feed."""
    n = 0
    failures: list = []
    for key, value in messages:
        producer.send(topic, key=key, value=value).add_errback(failures.append)
        n += 1
        if on_sent is not None:
            on_sent()
    producer.flush()
    if failures:
        raise DeliveryError(f"{len(failures):,} of {n:,} records were not delivered to {topic}: {failures[0]!r}")
    return n


def transactional_producer(transactional_id: str, transaction_timeout_ms: int,
                           role: str = "worker", bootstrap: str | None = None) -> AIOKafkaProducer:
    """An aiokafka producer for one partition's transactions. Starting it (init_transactions)
    fences every earlier producer of the same transactional id and ends its open transaction."""
    return AIOKafkaProducer(**client_settings(role, bootstrap), transactional_id=transactional_id,
                            enable_idempotence=True, acks="all", linger_ms=2,
                            transaction_timeout_ms=transaction_timeout_ms,
                            # A transaction begun while the previous one's markers are still being
                            # written gets a retriable error (Kafka 4's transaction verification,
                            # KIP-890, answers older clients NOT_ENOUGH_REPLICAS): retry in 10 ms, not
                            # aiokafka's default 100 ms, which was the whole p99 of the settlement
                            # latency at a floor's real load.
                            retry_backoff_ms=int(os.environ.get("CRAPS_RETRY_BACKOFF_MS") or 10))



# The key of the records `abort_hanging` writes: no table id has it ("~" is outside the contract's
# id pattern), so even a compacted topic's cleaner never confuses it with a table's record.
HANGING_KEY = b"~takeover"


async def abort_hanging(producer: AIOKafkaProducer, topics: Iterable[str], partition: int) -> None:
    """Abort, on partition `partition` of each of `topics`, any transaction of this producer's
    transactional id that was left open there: call it right after the producer started
    (init_transactions), before anything is read or settled.

    Why (seen in tests/faults, the broker-restart scenario, on the Python core and the native core
    alike): a worker's transaction wrote its outputs, then the broker went down before the offsets
    were added; the coordinator, restarted, aborted the transaction, but wrote its abort markers
    only to some of the partitions (table-state, not settlements or layout-markers: partitions it
    could not yet find a leader for right after its start, which Kafka's marker channel skips as
    "likely deleted"). The records on the others stayed open under the producer id, and the next
    owner's first COMMIT marker on those partitions, the same producer id at a later epoch,
    committed them with its own: 71 and 9 settlements paid twice in two runs, each copy
    byte-identical, every table's state right. A client of the transaction protocol aiokafka
    speaks (before KIP-890's second part) cannot see that; it can end it: a transaction that writes
    to every partition it owns and is aborted makes the coordinator write an abort marker to each,
    and a marker ends every open record of the producer id on that partition, whatever its epoch.
    The records written here are aborted, so no read_committed reader ever sees them (a tombstone
    keyed `HANGING_KEY`); the cost is one short transaction per takeover."""
    await producer.begin_transaction()
    try:
        delivered = [await producer.send(topic, None, key=HANGING_KEY, partition=partition) for topic in topics]
        for future in delivered:
            await future
    finally:
        await producer.abort_transaction()
