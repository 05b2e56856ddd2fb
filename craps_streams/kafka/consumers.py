"""Consumers that follow a topic through aiokafka: the worker's group consumer and the ledger's
reader (positions kept in its database).

The tail's follower (kafka-python) is in craps_streams.kafka.followers; one-off reads up to the end
offsets (recovery, archive, replay, audit) are in craps_streams.kafka.reader. This module imports
no kafka-python, so a process that reads through aiokafka alone (the ledger) never loads it.
"""
from __future__ import annotations

import asyncio
import queue
import threading
import time
from operator import attrgetter

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import ConsumerStoppedError, IllegalOperation, KafkaError, ProducerFenced

from craps_streams.kafka.lookups import avoid_failed_nodes
from craps_streams.kafka.settings import client_settings

__all__ = ["ConsumerRebalanceListener", "TopicPartition", "ProducerFenced", "IllegalOperation", "TRANSIENT",
           "group_consumer", "PositionedReader"]

_timestamp = attrgetter("timestamp")

# Errors of a broker that is away for a while (restart, network), as aiokafka's clients raise them:
# retry, never stop the floor for them. With kafka-python's: craps_streams.kafka.reader.TRANSIENT.
TRANSIENT = (KafkaError, OSError, TimeoutError, asyncio.TimeoutError)


def group_consumer(group_id: str, *, session_timeout_ms: int, heartbeat_interval_ms: int,
                   max_poll_interval_ms: int, role: str = "worker",
                   bootstrap: str | None = None) -> AIOKafkaConsumer:
    """A consumer group member reading committed records only, committing offsets itself (in the
    worker's transactions, never automatically)."""
    # The request timeout is every client's (settings.py), not stretched to the session: a heartbeat
    # to a coordinator cut off by the network, and a coordinator lookup sent to the cut node, are
    # abandoned after it, so the member finds the group's new coordinator before its session there
    # runs out. A JoinGroup the broker holds longer (a rebalance waiting for a dead member, up to
    # the session timeout) times out and is sent again to the same member id: it joins the same
    # rebalance.
    # Its coordinator lookups avoid a node that just failed (lookups.py): sent to the cut node twice
    # in a row, they outlasted the session.
    settings = client_settings(role, bootstrap)
    consumer = AIOKafkaConsumer(**settings, group_id=group_id, isolation_level="read_committed",
                                enable_auto_commit=False, auto_offset_reset="earliest",
                                session_timeout_ms=session_timeout_ms, heartbeat_interval_ms=heartbeat_interval_ms,
                                max_poll_interval_ms=max_poll_interval_ms, fetch_max_wait_ms=20)
    avoid_failed_nodes(consumer._client)
    return consumer


class PositionedReader:
    """A group member that reads committed records from positions its caller keeps (the ledger's
    database), never from offsets committed to Kafka: the group only shares the partitions out.

    `positions()` is asked for on every assignment: (topic, partition) -> next offset; a partition
    it does not know is read from its beginning. `instance` names this member for good (two
    processes of one group never share it). `poll()` gives `transform(records)` of the records
    [(topic, partition, offset, value, timestamp_ms)] (the record's Kafka timestamp; `transform`
    is the identity unless given), each partition's position after them (past transaction
    markers and aborted records, which a read_committed consumer never returns) and each
    partition's newest timestamp among them. `holding` {topic: bytes}: of those topics, only the
    records whose values hold the bytes are handed on (the others are never made into tuples nor
    transformed; their offsets and timestamps count all the same).

    The client is aiokafka's (record batches parsed and CRC-checked in C), on an event loop of its
    own in a background thread that reads ahead: it fetches, parses and transforms the next
    records (up to `read_ahead` polls' worth) while the caller writes the last ones. The caller's
    side is synchronous, and positions move only in the caller's thread, between its batches: an
    assignment pauses the partitions it brings (no record of theirs is read), and the next
    `poll()` reads the caller's positions and seeks every assigned partition there; whatever was
    read ahead before a seek is dropped (`_generation`). So no position moves under a batch the
    caller holds, as with a client whose rebalances run inside its poll."""

    def __init__(self, topics: list[str], group_id: str, positions, *, instance: str, role: str = "ledger",
                 bootstrap: str | None = None, max_poll_records: int = 5000, session_timeout_ms: int = 10_000,
                 transform=None, read_ahead: int = 2, holding: dict[str, bytes] | None = None):
        self._positions = positions
        self._holding = dict(holding or {})
        self._max_records = max_poll_records
        self._transform = transform or (lambda records: records)
        self._assigned = threading.Event()  # an assignment waits, paused, for the caller's positions
        self._generation = 0  # moved by every seek: what was read ahead before it is dropped
        self._failed = None  # (generation, error) a poll_ready() met: the next poll() raises it
        # The reads made, handed to the caller's thread without a turn of the loop: the loop is busy
        # transforming the next records most of the time on a backlog, and a poll that waited for
        # it to take an item off an asyncio queue waited out that work (a fifth of the ledger's
        # time on PostgreSQL). The loop waits for room (`_room`, set from the caller's thread).
        self._ready: queue.Queue = queue.Queue(maxsize=read_ahead)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="positioned-reader", daemon=True)
        self._thread.start()
        reader = self

        class _Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                pass

            def on_partitions_assigned(self, assigned):
                # On the client's loop, before any record of these partitions is read: paused,
                # they wait for the caller's thread to seek them (`poll`).
                reader.consumer.pause(*assigned)
                reader._assigned.set()

        async def start() -> AIOKafkaConsumer:
            # Static membership (KIP-345): a process restarted under the same instance name takes
            # its partitions back at once, without a rebalance waiting out the dead one's session.
            # check_crcs stays on: TLS protects the records on the wire only, and the broker sends
            # a batch as its log holds it, unchecked, so a bit rotted on the broker's disk would
            # reach the ledger as a wrong amount.
            consumer = AIOKafkaConsumer(**client_settings(role, bootstrap), group_id=group_id,
                                        group_instance_id=f"{group_id}-{instance}",
                                        isolation_level="read_committed", enable_auto_commit=False,
                                        auto_offset_reset="earliest", check_crcs=True,
                                        session_timeout_ms=session_timeout_ms, heartbeat_interval_ms=1_000,
                                        fetch_max_wait_ms=100)
            reader.consumer = consumer
            reader._room = asyncio.Event()
            reader._reading = asyncio.Lock()  # held by a read, and by a seek
            consumer.subscribe(topics, listener=_Listener())
            await consumer.start()
            reader._reader = asyncio.create_task(reader._read_ahead())
            return consumer

        try:
            self._run(start())
        except BaseException:
            self._stop_loop()
            raise

    def _run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    async def _read_ahead(self) -> None:
        while True:
            async with self._reading:
                generation = self._generation
                try:
                    records, after, newest = [], {}, {}
                    batches = await self.consumer.getmany(timeout_ms=100, max_records=self._max_records)
                    for tp, batch in batches.items():
                        topic, partition = tp.topic, tp.partition
                        mark = self._holding.get(topic)
                        if mark is None:
                            records.extend([(topic, partition, r.offset, r.value, r.timestamp) for r in batch])
                        else:
                            records.extend([(topic, partition, r.offset, r.value, r.timestamp) for r in batch
                                            if r.value is not None and mark in r.value])
                        after[(topic, partition)] = await self.consumer.position(tp)
                        newest[(topic, partition)] = max(map(_timestamp, batch))
                    read = (self._transform(records), after, newest) if after else None
                except ConsumerStoppedError:
                    return
                except Exception as e:  # noqa: BLE001 - the caller's poll raises it
                    read = e
            if read is not None:
                while self._ready.full():
                    self._room.clear()
                    await self._room.wait()  # set on this loop after the caller takes one: never missed
                self._ready.put_nowait((generation, read))
            if isinstance(read, Exception):
                await asyncio.sleep(0.2)

    def reseek(self) -> None:
        """Go back to the caller's positions (after an assignment, or a batch the database refused)."""
        known = self._positions()

        async def seek():
            async with self._reading:
                self._generation += 1
                assigned = self.consumer.assignment()
                for tp in assigned:
                    if (tp.topic, tp.partition) in known:
                        self.consumer.seek(tp, known[(tp.topic, tp.partition)])
                unknown = [tp for tp in assigned if (tp.topic, tp.partition) not in known]
                if unknown:
                    # A position below the log's start (retention) is reset to the earliest offset.
                    await self.consumer.seek_to_beginning(*unknown)
                self.consumer.resume(*assigned)

        self._run(seek())

    def poll(self, timeout_ms: int):
        if self._assigned.is_set():
            self._assigned.clear()
            try:
                self.reseek()
            except BaseException:
                self._assigned.set()  # still paused: sought at the next poll
                raise
        return self._next(timeout_ms)

    def poll_ready(self):
        """The next read already made, as `poll()` gives it, or None when none is waiting or an
        assignment is (its partitions are sought at the next `poll()`). Never waits, never seeks:
        what a caller adds to the records it holds, positions unmoved."""
        if self._assigned.is_set():
            return None
        while self._failed is None:
            try:
                generation, read = self._take(block=False)
            except queue.Empty:
                return None
            if generation != self._generation:
                continue  # read before a seek
            if isinstance(read, Exception):
                self._failed = (generation, read)  # raised by the next poll(), after the held records
                return None
            return read
        return None

    def _take(self, block: bool, timeout: float | None = None) -> tuple:
        item = self._ready.get(block, timeout)
        self._loop.call_soon_threadsafe(self._room.set)
        return item

    def _next(self, timeout_ms: int):
        failed, self._failed = self._failed, None
        if failed is not None and failed[0] == self._generation:
            raise failed[1]
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            try:
                generation, read = self._take(block=True, timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return self._transform([]), {}, {}
            if generation != self._generation:
                continue  # read before a seek
            if isinstance(read, Exception):
                raise read
            return read

    def end_offsets(self) -> dict[tuple[str, int], int]:
        """The assigned partitions' end offsets (read_committed: the last stable offsets)."""
        async def ends():
            assigned = list(self.consumer.assignment())
            return await self.consumer.end_offsets(assigned) if assigned else {}

        return {(tp.topic, tp.partition): o for tp, o in self._run(ends()).items()}

    def close(self) -> None:
        async def stop():
            self._reader.cancel()
            await self.consumer.stop()

        try:
            self._run(stop())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        if not self._thread.is_alive():
            self._loop.close()
