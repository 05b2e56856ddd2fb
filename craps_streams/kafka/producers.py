"""Producers: the ingest feed's idempotent producer and the worker's transactional producers."""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Iterable

from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError, KafkaTimeoutError
from aiokafka.producer.sender import Sender
from kafka import KafkaProducer

from craps_streams.kafka.lookups import avoid_failed_nodes
from craps_streams.kafka.settings import client_settings


class DeliveryError(RuntimeError):
    """Records the producer gave up on (the broker away longer than the delivery timeout)."""


def feed_producer(role: str = "controller", bootstrap: str | None = None) -> KafkaProducer:
    """An idempotent producer with acks=all: a retried send is never written twice. A file sent in
    bulk lingers 5 ms so its records travel in batches."""
    return KafkaProducer(**client_settings(role, bootstrap), enable_idempotence=True, acks="all",
                         linger_ms=5, batch_size=256 * 1024, max_in_flight_requests_per_connection=5,
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


def table_producer(bootstrap: str | None = None, request_timeout_ms: int = 10_000) -> AIOKafkaProducer:
    """A table controller's producer (role "controller"): idempotent, acks=all, no linger (a held
    journal is sent as soon as it is read). `request_timeout_ms` bounds how long a send waits for
    an unreachable broker before `deliver` says so and the controller tries again."""
    settings = {**client_settings("controller", bootstrap), "request_timeout_ms": request_timeout_ms}
    return AIOKafkaProducer(**settings, enable_idempotence=True, acks="all", linger_ms=0)


def _undelivered(message: str) -> BaseException:
    """DeliveryError(message), or CancelledError when the caller is being cancelled: aiokafka answers
    a cancellation while it connects as a failed connection, which a caller retrying deliveries
    would otherwise retry for ever."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        return asyncio.CancelledError()
    return DeliveryError(message)


async def start_producer(producer: AIOKafkaProducer) -> None:
    """Start (connect and log in); DeliveryError when the broker cannot be reached."""
    try:
        await producer.start()
    except (KafkaError, OSError) as e:
        with contextlib.suppress(Exception):
            await producer.stop()
        raise _undelivered(f"the broker cannot be reached: {e!r}") from None


async def deliver(producer: AIOKafkaProducer, topic: str, messages: Iterable[tuple[bytes, bytes]]) -> None:
    """Send every (key, value) in order and wait for the broker's acknowledgement of all of them;
    DeliveryError if any was not acknowledged (the caller sends them again: the idempotent
    producer and the worker's seq check drop what arrives twice)."""
    try:
        futures = [await producer.send(topic, value=value, key=key) for key, value in messages]
        for future in futures:
            await future
    except (KafkaError, OSError) as e:
        raise _undelivered(f"{topic}: not acknowledged: {e!r}") from None


class CoordinatorCheckingSender(Sender):
    """aiokafka's sender, checking its cached coordinators against the cluster's metadata.

    aiokafka's transactional producer remembers the node it found coordinating its transactions
    and the node coordinating the consumer group it commits offsets to (`Sender._coordinators`),
    and forgets one only when a request to it fails or is answered NOT_COORDINATOR. A node cut
    off by the network answers nothing, and the producer's connection to it stays open, so every
    producer that had last committed through it sends its next AddOffsetsToTxn or TxnOffsetCommit
    there and waits out its request timeout (5 s, settings.py) before it looks the coordinator up
    again: in the partition drill, producers did so 0.7 to 23 s after the cluster had fenced the cut
    node and moved its coordinators, each on its own, and transactions waited on it. A fenced node
    leaves the metadata the cluster hands out (craps_streams/kafka/settings.py refreshes it every
    5 s, and on every failed request): a cached coordinator that is no longer in the client's
    metadata is forgotten here before a request goes to it, and looked up again (aiokafka 0.14's
    `Sender._find_coordinator`, the one place every transactional request finds its node).
    tests/kafka/test_producers.py pins the behaviour to the installed aiokafka."""

    async def _find_coordinator(self, coordinator_type, coordinator_key):
        node = self._coordinators.get(coordinator_type)
        if node is not None and self.client.cluster.broker_metadata(node) is None:
            self._coordinator_dead(coordinator_type)
        return await super()._find_coordinator(coordinator_type, coordinator_key)


def transactional_producer(transactional_id: str, transaction_timeout_ms: int,
                           role: str = "worker", bootstrap: str | None = None,
                           retry_backoff_ms: int = 10) -> AIOKafkaProducer:
    """An aiokafka producer for one partition's transactions. Starting it (init_transactions)
    fences every earlier producer of the same transactional id and ends its open transaction. Its
    sender forgets a coordinator that left the cluster's metadata (`CoordinatorCheckingSender`),
    and its lookups avoid a node that just failed (lookups.py)."""
    producer = AIOKafkaProducer(**client_settings(role, bootstrap), transactional_id=transactional_id,
                                enable_idempotence=True, acks="all", linger_ms=2,
                                transaction_timeout_ms=transaction_timeout_ms,
                                # A transaction begun while the previous one's markers are still being
                                # written gets a retriable error (Kafka 4's transaction verification,
                                # KIP-890, answers older clients NOT_ENOUGH_REPLICAS): retry in 10 ms, not
                                # aiokafka's default 100 ms, which was the whole p99 of the settlement
                                # latency at a floor's real load.
                                retry_backoff_ms=retry_backoff_ms)
    # Built on the producer's own client, accumulator and transaction manager, before start().
    plain = producer._sender
    producer._sender = CoordinatorCheckingSender(
        producer.client, acks=plain._acks, txn_manager=plain._txn_manager,
        message_accumulator=plain._message_accumulator, retry_backoff_ms=retry_backoff_ms,
        request_timeout_ms=plain._request_timeout_ms)
    avoid_failed_nodes(producer.client)  # its coordinator lookups too (lookups.py)
    return producer


async def send_records(producer: AIOKafkaProducer, records: dict, partition: int) -> list:
    """Send each topic's (key, value) records, in their order, to `partition` of the topic, in
    record batches built here (aiokafka `create_batch` / `send_batch`) rather than one `send`
    each: a send's work per record (the metadata wait, the transaction check, the partitioner, the
    accumulator's append) once per batch instead. The records, their order within each topic
    partition and the batches' size limit (the producer's max_batch_size: a full batch goes and a
    new one starts) are those of the sends. -> the batches' delivery futures."""
    delivered = []
    for topic, items in records.items():
        batch = producer.create_batch()
        for key, value in items:
            if batch.append(key=key, value=value, timestamp=None) is None:  # full
                batch.close()
                delivered.append(await _queued(producer, batch, topic, partition))
                batch = producer.create_batch()
                batch.append(key=key, value=value, timestamp=None)  # a batch's first record always fits
        if batch.record_count():
            batch.close()
            delivered.append(await _queued(producer, batch, topic, partition))
    return delivered


# How many request timeouts a record batch may wait for room in the producer's queue.
QUEUE_WAITS = 3


async def _queued(producer: AIOKafkaProducer, batch, topic: str, partition: int):
    """`producer.send_batch`, waiting up to QUEUE_WAITS request timeouts for room.

    aiokafka queues one record batch per partition behind the one in flight, and gives up waiting
    for room after the request timeout (KafkaTimeoutError; the batch is not queued). A batch of
    events bigger than one record batch waits so behind its own first record batch; when a node is
    cut off, that one waits for the partition's leader to drop the cut node from the in-sync
    replicas (acks=all) or for the leadership to move, and in the worst-case partition drill the
    transaction was aborted at the first timeout, 11-14 s after the cut, and its partition taken
    over again (the producer fenced and started anew, the table states read back): 8-20 s more on
    the loaded machine. Waiting longer is safe: a batch that found no room was not queued, so it is
    queued once, in its order."""
    for attempt in range(QUEUE_WAITS):
        try:
            return await producer.send_batch(batch, topic, partition=partition)
        except KafkaTimeoutError:
            if attempt == QUEUE_WAITS - 1:
                raise



# How long `stop_producer` waits for a producer to close before it lets the closing go on unwatched.
STOP_WAIT_S = 1.0
_closing: set = set()  # producers' closings left to finish on their own (kept referenced until they do)


async def stop_producer(producer: AIOKafkaProducer, wait_s: float = STOP_WAIT_S) -> None:
    """Stop `producer` (its transaction already ended, or fenced), waiting at most `wait_s`; the
    rest of its closing goes on by itself.

    Why: aiokafka's `stop()` ends by closing every connection of the producer and waits until each
    one is closed, and a TLS connection to a node cut off by the network closes only when Python's
    TLS shutdown gives up, 30 s later (asyncio's `ssl_shutdown_timeout`), or when the cut heals. A
    worker releasing a partition in a rebalance, or dropping it after a failed transaction, stopped
    its producer this way: in the worst-case partition drill the releases of a revocation took 15
    to 39 s, the worker rejoined the group long after the rebalance's 10 s, the group dropped it
    and every partition was taken over again after the heal. The producer's requests are over by
    then (its sender is cancelled first); only the sockets' closing is left, which holds nothing up."""
    closing = asyncio.ensure_future(producer.stop())
    _closing.add(closing)
    closing.add_done_callback(_closing.discard)
    done, _ = await asyncio.wait({closing}, timeout=wait_s)
    if done:
        closing.result()
    else:
        closing.add_done_callback(_unwatched_closing_ended)


def _unwatched_closing_ended(closing: asyncio.Future) -> None:
    if not closing.cancelled() and closing.exception() is not None:
        logging.getLogger(__name__).debug("a producer's closing failed: %r", closing.exception())


# The key of the records `abort_hanging` writes: no table id has it ("~" is outside the contract's
# id pattern), so even a compacted topic's cleaner never confuses it with a table's record.
HANGING_KEY = b"~takeover"


async def abort_hanging(producer: AIOKafkaProducer, topics: Iterable[str], partition: int,
                        source: TopicPartition, group_id: str) -> None:
    """Abort, on partition `partition` of each of `topics` and on the group's offsets of `source`,
    any record this producer's transactional id left open there: call it right after the producer
    started (init_transactions), before the tables and the committed offset are read.

    Why: without it, the broker-restart fault scenario (tests/faults) pays settlements twice, each
    copy byte-identical, every table's state right. The broker's record batches and transaction log
    show the cause: the broker, already stopping (SIGTERM), completed one of the worker's transactions, PrepareCommit
    and CompleteCommit in the same millisecond, and the client was told it committed, but no
    commit marker reached any of its partitions (settlements, layout-markers, table-state, the
    offsets). Most likely Kafka's marker channel dropped them: it skips a partition whose leader it
    cannot find, as "likely deleted", and a stopping broker leads nothing. Those records stayed open
    under the producer id. After the restart the next owner rightly recovered the tables and the
    offset from before that batch (nothing of it was committed) and settled it again; its first
    COMMIT marker on those partitions, the same producer id at a later epoch, then committed the
    open records together with its own copies. A client of the transaction protocol aiokafka speaks
    (before KIP-890's second part) cannot see open records; it can end them: a transaction that
    writes to every partition the owner writes, offsets included, and is aborted makes the
    coordinator write an abort marker to each, and a marker ends every open record of the producer
    id on its partition, whatever its epoch. The records written here are aborted, so no
    read_committed reader ever sees them (tombstones keyed `HANGING_KEY`, and an offset commit
    that never takes effect); the cost is one short transaction per takeover."""
    await producer.begin_transaction()
    try:
        delivered = [await producer.send(topic, None, key=HANGING_KEY, partition=partition) for topic in topics]
        for future in delivered:
            await future
        await producer.send_offsets_to_transaction({source: 0}, group_id)
    except BaseException:
        # Fenced (another worker took the partition over meanwhile) or cut off: the coordinator
        # aborts this transaction itself (the newer owner's init_transactions, or its timeout).
        # aiokafka refuses an abort from a fenced producer's state with an AssertionError, which
        # must not hide why the takeover failed.
        with contextlib.suppress(Exception):
            await producer.abort_transaction()
        raise
    await producer.abort_transaction()
