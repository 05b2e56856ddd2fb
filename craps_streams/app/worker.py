"""The settling worker: craps.table-events -> the rules core -> the output topics, exactly once.

A consume-transform-produce loop on aiokafka's transactions, one transactional producer per
assigned partition (transactional.id = app id + partition, so a new owner of a partition fences
the old one: a zombie worker can never commit). For each partition's batch of events, one Kafka
transaction holds the outputs, the new table states (the compacted changelog table-state) and the
consumed offsets: all of them commit, or none. After a failed transaction the partition's tables
are rebuilt from the changelog and the partition is re-read from its committed offset. A message
whose settling raises (a bug) aborts its batch the same way, so a table half-changed by the bug is
never committed nor used again; when re-read, that message is rejected ("internal_error", its raw
bytes kept) instead of applied (raised inside a run of quiet events settled in one native call,
where the message is not known, the batch is first settled again event by event, which finds it).

Ownership is taken as soon as the group assigns a partition, in a fixed order: init_transactions
first (it fences the previous owner and finishes or aborts its open transaction), then one
aborted transaction over every output partition and the offsets (`abort_hanging`: it ends records
a stopping broker left open, which this owner's first commit would otherwise commit), then the
tables from the changelog, then the committed offset, read again. Each partition is taken over
in a task of its own while the loop goes on settling the partitions already owned (the partition
paused in the consumer meanwhile): a takeover waiting on a broker node that stopped answering (a
network cut: its requests wait out the request timeout, then the coordinator's move) holds up
only its own partition. A batch is settled only if it starts at
the offset the tables are at (records fetched before the fencing may start below or above it). A
revoked partition is released only once its in-flight batch has committed or aborted. Broker outages
(connection errors, timeouts) never stop the worker: the batch is re-read and ownership retried.

A fenced producer (ProducerFenced: another worker took the partition over while this one was
frozen or cut off, or the coordinator aborted a transaction that outlived its timeout during an
outage) costs only that partition: its batch is aborted, the partition released, and the worker
stays in the group. It takes the partition over again (fencing, changelog, committed offset) only
after a rebalance gave it back, or after a session timeout if the group still says it is ours (the
timed-out transaction: nobody else owns it), so a zombie never fights the partition's new owner.

Timeouts: `WorkerTimeouts` (the settings CRAPS_SESSION_TIMEOUT_MS, CRAPS_HEARTBEAT_INTERVAL_MS,
CRAPS_TRANSACTION_TIMEOUT_MS, CRAPS_MAX_POLL_INTERVAL_MS, CRAPS_RETRY_BACKOFF_MS; milliseconds).

Why not Faust's agent (faust-streaming 0.15.3): tests/pipeline's crash test found settlements
lost after a kill -9, its sends to sink topics bypass the partition's transactional producer and
its exactly_once table recovery stops early; see docs/decisions/transactional-loop.md.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from craps_streams.app.recovery import recover_partition
from craps_streams.app.shell import SettlementShell, SettlingRaised
from craps_streams.kafka.consumers import (
    ConsumerRebalanceListener,
    IllegalOperation,
    ProducerFenced,
    TopicPartition,
    group_consumer,
)
from craps_streams.kafka.lookups import answering_servers
from craps_streams.kafka.reader import TRANSIENT
from craps_streams.kafka.producers import abort_hanging, send_records, stop_producer, transactional_producer
from craps_streams.kafka.settings import default_bootstrap
from craps_streams.surveillance import HoldWatch
from craps_streams.topics import DEFAULT_APP_ID, Topics

log = logging.getLogger("craps.worker")


@dataclass(frozen=True)
class WorkerTimeouts:
    """The worker's Kafka timeouts, in milliseconds."""

    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int | None = None  # None: a fifth of the session timeout, at least 100
    transaction_timeout_ms: int = 60_000
    max_poll_interval_ms: int = 120_000
    # A transaction begun while the previous one's markers are still being written is retried
    # this soon (craps_streams/kafka/producers.py, transactional_producer).
    retry_backoff_ms: int = 10

    @property
    def heartbeat_ms(self) -> int:
        return self.heartbeat_interval_ms or max(self.session_timeout_ms // 5, 100)


class _InternalError(Exception):
    """Settling a message raised (a bug, not bad input): abort its batch's transaction. `offset`
    None: it raised inside a quiet run, which message is not known (the batch is settled again
    event by event)."""

    def __init__(self, offset: int | None, error: BaseException):
        super().__init__(f"offset {offset}: {error!r}")
        self.offset = offset


@dataclass(frozen=True, slots=True)
class OwnedTable:
    """One table of the worker's read model (`SettlingWorker.tables()`)."""

    table_id: str
    partition: int
    state: object  # TableState, as of the last committed or in-flight event
    book: object  # HoldBook or None (no settlement yet)
    stored_text: str  # what the changelog gets for it: state and hold book, JSON
    recovered_text: str | None  # what the changelog held when this worker took the partition over


class PartitionOwner:
    """What a worker holds for one partition it owns: the fencing producer and the live tables."""

    def __init__(self, partition: int, producer, shell: SettlementShell,
                 recovered: dict[str, str] | None = None):
        self.partition = partition
        self.producer = producer
        self.shell = shell
        self.recovered = recovered or {}  # table id -> state JSON text read from the changelog
        self.lock = asyncio.Lock()  # held by a batch in flight; release waits for it
        # The input offset after the last message taken from the consumer (settled, in flight or
        # pending); None: from the start. Dropping the owner drops whatever was not committed.
        self.next_offset: int | None = None
        # The input offset committed with the partition's last transaction (its next event to
        # settle once committed), or as read at the takeover; None: nothing committed yet.
        self.committed_offset: int | None = None
        self.pending: list = []  # fetched messages not in a batch yet, in offset order
        self.drain: asyncio.Task | None = None  # settles `pending`, one batch at a time


class SettlingWorker:
    def __init__(self, tags, app_id: str = DEFAULT_APP_ID, bootstrap: str | None = None,
                 max_batch: int = 2000, observer=None, topics: Topics = Topics(),
                 timeouts: WorkerTimeouts = WorkerTimeouts(), watch: HoldWatch | None = None):
        # Every event's tag is checked before the rules (craps_streams.authenticity): `tags`, a
        # TagCheck over the floor's key ring (the service loads it; without one it does not start).
        self.tags = tags
        self.app_id = app_id
        self.bootstrap = bootstrap or default_bootstrap()
        self.topics = topics
        self.watch = watch  # the surveillance thresholds (the worker's and a replay's must agree)
        self.retry_backoff_ms = timeouts.retry_backoff_ms
        self.max_batch = max_batch
        self.owners: dict[int, PartitionOwner] = {}
        self.consumer = None  # the group consumer, while running
        # observer(batch, partition, seconds) after each committed batch (batch: craps_streams.app.shell
        # SettledBatch): the metrics
        self.observer = observer
        self.stopping = asyncio.Event()
        self.assigned: set[int] = set()  # partitions the group gave this worker
        self.generation = 0  # bumped by every rebalance callback
        # partition -> {offset: exception} of messages whose settling raised: rejected when re-read
        self.failed: dict[int, dict[int, BaseException]] = {}
        # partitions whose last batch raised inside a quiet run: the next settles event by event
        self.event_by_event: set[int] = set()
        self.session_timeout_ms = timeouts.session_timeout_ms
        self.heartbeat_interval_ms = timeouts.heartbeat_ms
        self.transaction_timeout_ms = timeouts.transaction_timeout_ms
        self.max_poll_interval_ms = timeouts.max_poll_interval_ms
        # partition -> (generation, monotonic time) of the fence that released it: not taken over
        # again in that generation before the hold-off (a session timeout: by then a zombie's
        # consumer has heard it was dropped from the group, and rejoined)
        self.fenced: dict[int, tuple[int, float]] = {}
        self.fenced_hold_off_s = self.session_timeout_ms / 1000
        self.takeovers: dict[int, asyncio.Task] = {}  # partition -> its takeover under way
        self.drains: set[asyncio.Task] = set()  # the partitions' drain tasks still running
        self.drain_errors: list[BaseException] = []  # raised by drain tasks, for the loop to raise

    # ------------------------------------------------------------ the read model

    def tables(self) -> list[OwnedTable]:
        """Every table of the partitions this worker owns now, loaded or only recovered so far
        (a recovered one is loaded from its changelog text here), sorted by table id. For the
        metrics, the floor page and /state: none of them reads the owners or shells directly."""
        out = []
        for owner in list(self.owners.values()):
            shell = owner.shell
            for table_id in set(shell.states) | set(owner.recovered):
                state = shell.state_of(table_id)
                if state is not None:
                    out.append(OwnedTable(table_id, owner.partition, state, shell.books.get(table_id),
                                          shell.stored_text(table_id), owner.recovered.get(table_id)))
        out.sort(key=lambda t: t.table_id)
        return out

    def partitions(self) -> list[int]:
        """The partitions this worker owns now."""
        return sorted(self.owners)

    def committed_offsets(self) -> dict[int, int]:
        """Partition -> the input offset committed with its last transaction (read at the takeover
        until the first), for the partitions this worker owns now: the metrics."""
        return {p: o.committed_offset for p, o in list(self.owners.items()) if o.committed_offset is not None}

    # ------------------------------------------------------------ partition ownership

    async def own(self, tp: TopicPartition) -> PartitionOwner | None:
        """Take the partition over (None: the group took it away meanwhile)."""
        partition, generation = tp.partition, self.generation
        producer = transactional_producer(f"{self.app_id}-{partition}", self.transaction_timeout_ms,
                                          role="worker", bootstrap=self.bootstrap,
                                          retry_backoff_ms=self.retry_backoff_ms)
        try:
            await producer.start()  # init_transactions: fences a previous owner, ends its open transaction
            # ... as the coordinator knows it: records it left open on an output partition would
            # be committed by this owner's first commit (abort_hanging says when and why).
            await abort_hanging(producer, self.topics.worker_outputs, partition, tp, self.app_id)
            # Bootstrapped from the nodes that answer: kafka-python tries its servers in a random
            # order, each for a connection timeout, and a node just lost would cost the read 5 s.
            states, seconds = await asyncio.to_thread(recover_partition, partition, self.topics.table_state,
                                                         answering_servers(self.bootstrap))
            # Read after the fencing: the previous owner's last commit is complete by now.
            committed = await self.consumer.committed(tp)
        except BaseException:
            await stop_producer(producer)
            raise
        if generation != self.generation or partition not in self.assigned:
            await stop_producer(producer)
            log.info("partition %s revoked while being taken over", partition)
            return None
        log.info("partition %s owned: %s table states recovered in %.2f s, resuming at offset %s",
                 partition, len(states), seconds, committed)
        shell = SettlementShell(states.get, self.watch, tags=self.tags, topics=self.topics)
        if partition in self.event_by_event:
            shell.quiet = None
        owner = self.owners[partition] = PartitionOwner(partition, producer, shell, states)
        owner.next_offset = owner.committed_offset = committed
        return owner

    async def own_assigned(self) -> None:
        """Start taking over every assigned partition neither owned nor being taken over, records or
        not: fences the previous owner at once and exports the recovered tables. Each takeover is a
        task (`takeovers`); this returns without waiting for them."""
        for partition in sorted(self.assigned - self.owners.keys() - self.takeovers.keys()):
            if self.stopping.is_set():
                return
            fence = self.fenced.get(partition)
            if fence is not None:
                generation, at = fence
                if generation == self.generation and time.monotonic() - at < self.fenced_hold_off_s:
                    continue  # wait for the rebalance that tells whether the partition is still ours
                del self.fenced[partition]
            task = self.takeovers[partition] = asyncio.create_task(self._take_over(partition))
            # A takeover that raises past its handling (a bug) stops the worker, as a drain's does.
            self.drains.add(task)
            task.add_done_callback(self._drain_ended)
            task.add_done_callback(lambda t, p=partition: self.takeovers.pop(p) if self.takeovers.get(p) is t else None)

    async def _take_over(self, partition: int) -> None:
        tp = TopicPartition(self.topics.table_events, partition)
        self._pause(tp, True)  # its records wait in the log, not fetched and rewound again and again
        try:
            await self.own(tp)
        except ProducerFenced:
            # Another worker took it over while this one did (a rebalance under way): taking
            # it back at once would fence that one in turn. Wait as after a fenced batch.
            log.warning("partition %s: fenced while taking it over; left to the rebalance", partition)
            self.fenced[partition] = (self.generation, time.monotonic())
        except (*TRANSIENT, IllegalOperation) as e:
            # IllegalOperation: the producer left its transaction under the takeover's aborted
            # one (cut off or fenced meanwhile, aiokafka's "not in transaction"): a new
            # producer at the next round, as for a broker away.
            log.warning("partition %s: cannot take it over yet (%r); retrying", partition, e)
            await asyncio.sleep(1)
        finally:
            self._pause(tp, False)

    def _pause(self, tp: TopicPartition, paused: bool) -> None:
        """Stop or resume fetching `tp` (nothing to do once the group took it away)."""
        try:
            (self.consumer.pause if paused else self.consumer.resume)(tp)
        except Exception:  # noqa: BLE001 - not assigned any more: its next owner fetches it
            pass

    async def _cancel_takeovers(self, partitions) -> None:
        """Stop the takeovers of `partitions` (revoked, or the worker stopping) and wait for them:
        a takeover finishing after the revocation would fence the partition's next owner."""
        tasks = [t for p, t in list(self.takeovers.items()) if p in partitions]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def release(self, partition: int) -> None:
        owner = self.owners.get(partition)
        if owner is None:
            return
        async with owner.lock:  # let a batch in flight commit or abort first
            await self._drop(owner)

    async def _drop(self, owner: PartitionOwner) -> None:
        if self.owners.get(owner.partition) is owner:
            del self.owners[owner.partition]
            try:
                await stop_producer(owner.producer)
            except Exception:  # a fenced or disconnected producer: nothing left to flush
                log.warning("partition %s: producer stop failed", owner.partition, exc_info=True)
            log.info("partition %s released", owner.partition)

    def _rewind(self, tp: TopicPartition, offset: int) -> None:
        """Fetch the partition again from `offset` (if it is still assigned)."""
        try:
            self.consumer.seek(tp, offset)
        except Exception:  # no longer assigned: its next owner starts from the committed offset
            pass

    # ------------------------------------------------------------ the loop

    async def run(self) -> None:
        worker = self

        class Rebalance(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                worker.generation += 1
                for tp in revoked:
                    worker.assigned.discard(tp.partition)
                await worker._cancel_takeovers({tp.partition for tp in revoked})
                # All at once: the worker rejoins the group only once every revoked partition is
                # released, and the rebalance drops a member that has not rejoined within its
                # timeout (the session's, 10 s): each release waits for its partition's batch in
                # flight, which a lost broker node may hold up for a request timeout.
                await asyncio.gather(*(worker.release(tp.partition) for tp in revoked))

            async def on_partitions_assigned(self, assigned):
                # Owning (fencing, recovery) happens in the loop (own_assigned), not in the listener:
                # aiokafka may hand out records before a slow listener returns.
                worker.generation += 1
                worker.assigned.update(tp.partition for tp in assigned)

        self.consumer = group_consumer(
            self.app_id, session_timeout_ms=self.session_timeout_ms, heartbeat_interval_ms=self.heartbeat_interval_ms,
            max_poll_interval_ms=self.max_poll_interval_ms, role="worker", bootstrap=self.bootstrap)
        self.consumer.subscribe([self.topics.table_events], listener=Rebalance())
        await self.consumer.start()
        try:
            while not self.stopping.is_set():
                self._raise_from_drains()
                await self.own_assigned()
                await self._room_to_fetch()
                batches = await self.consumer.getmany(timeout_ms=100, max_records=self.max_batch)
                for tp, messages in batches.items():
                    if self.stopping.is_set():
                        break
                    if not messages or tp.partition not in self.assigned:
                        continue  # fetched before a rebalance took the partition away
                    owner = self.owners.get(tp.partition)
                    if owner is None:
                        self._rewind(tp, messages[0].offset)  # settled once its takeover is done
                        continue
                    resume = owner.next_offset
                    if resume is not None and messages[0].offset != resume:
                        messages = [m for m in messages if m.offset >= resume]
                        if not messages or messages[0].offset != resume:
                            self._rewind(tp, resume)  # fetched from a stale position
                            continue
                    owner.pending.extend(messages)
                    owner.next_offset = messages[-1].offset + 1
                    if owner.drain is None or owner.drain.done():
                        self._start_drain(owner, tp)
        finally:
            await self._cancel_takeovers(set(self.takeovers))
            await self.consumer.stop()
            for partition in list(self.owners):
                await self.release(partition)
            await asyncio.gather(*list(self.drains), return_exceptions=True)
            for error in self.drain_errors:  # raised while stopping: not lost from the log
                log.error("a partition's drain task failed", exc_info=error)

    async def _drain(self, owner: PartitionOwner, tp: TopicPartition) -> None:
        """Settle the partition's fetched messages, a batch (one transaction) at a time, while the
        loop goes on fetching. Why a task per partition: the partitions' transactions are
        independent (one producer each), so an event waits only for its own partition's
        transaction in flight, never for a slow commit (a retried verification, a
        concurrent-transactions answer) on another partition. Ends when nothing is pending or the
        partition was dropped (a failed batch drops the owner, its pending messages with it, and
        rewinds the consumer to the committed offset)."""
        while owner.pending and self.owners.get(owner.partition) is owner and not self.stopping.is_set():
            batch = owner.pending[:self.max_batch]
            del owner.pending[:len(batch)]
            await self.settle_batch(tp, batch)

    def _start_drain(self, owner: PartitionOwner, tp: TopicPartition) -> None:
        owner.drain = asyncio.create_task(self._drain(owner, tp))
        self.drains.add(owner.drain)
        owner.drain.add_done_callback(self._drain_ended)

    def _drain_ended(self, task: asyncio.Task) -> None:
        """Keep the error of any drain task, also one whose partition was released meanwhile (its
        owner is gone, so looking through the owners would never find it)."""
        self.drains.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.drain_errors.append(task.exception())

    def _raise_from_drains(self) -> None:
        """A batch that raised past settle_batch's handling (a bug in the loop itself) stops the
        worker, as it did when the loop awaited its batches."""
        if self.drain_errors:
            raise self.drain_errors.pop(0)

    async def _room_to_fetch(self) -> None:
        """Back-pressure: no fetch while a partition already has a full batch waiting (a backlog
        is settled in batches of max_batch, and memory holds at most about two per partition)."""
        while not self.stopping.is_set() and any(
                len(o.pending) >= self.max_batch and o.drain is not None and not o.drain.done()
                for o in self.owners.values()):
            await asyncio.sleep(0.005)

    async def settle_batch(self, tp: TopicPartition, messages: list) -> None:
        owner = self.owners.get(tp.partition)
        if owner is None:
            return
        async with owner.lock:
            if self.owners.get(tp.partition) is not owner:
                return  # released (revoked) while this batch waited
            await self._settle_batch(owner, tp, messages)

    @staticmethod
    async def _written(delivered: list) -> None:
        """Wait until the batch's records are written before its offsets join the transaction.

        Why: Kafka 4 verifies every transactional write with the transaction
        coordinator (KIP-890), the records' Produce and the offsets' TxnOffsetCommit alike, and the
        broker keeps one pending verification per transactional id: when a second arrives, the
        first is answered NETWORK_EXCEPTION (Kafka's AddPartitionsToTxnManager.addTxnData, "the
        client is likely retrying"), which an aiokafka-era client hears as NOT_ENOUGH_REPLICAS
        (Produce) or COORDINATOR_NOT_AVAILABLE (TxnOffsetCommit, then a new coordinator lookup).
        aiokafka sends the offsets as soon as the partitions are added, so both raced: a backoff
        and a retry in 17 to 30 transactions of 100 at a floor's rate, the p90 of a transaction.
        Written first, none is retried; one produce round trip more in series
        (benchmarks/transaction_phases.py measures both orders). A failed write raises here and
        aborts the transaction, as the commit would have."""
        if delivered:
            await asyncio.gather(*delivered)

    async def _settle_batch(self, owner: PartitionOwner, tp: TopicPartition, messages: list) -> None:
        producer, shell, partition = owner.producer, owner.shell, tp.partition
        started = time.monotonic()
        failed = self.failed.setdefault(partition, {})
        try:
            async with producer.transaction():
                try:
                    # A message whose settling raised last time (a bug) is rejected with its
                    # bytes this time, not applied (`failed`).
                    batch = shell.handle_batch(shell.items_of(messages, partition, failed))
                except SettlingRaised as e:  # a bug, not bad input: never stop the floor for it
                    raise _InternalError(None if e.index is None else messages[e.index].offset,
                                         e.error) from e.error  # aborts the transaction
                records = batch.records  # topic -> the batch's (key, value) records for it, in order
                # One state record per table per batch: the changelog is compacted, and the
                # transaction makes the batch's last state the only one anybody can read.
                if batch.changed:
                    records[self.topics.table_state] = [(table_id.encode(), shell.stored_text(table_id).encode())
                                            for table_id in batch.changed]
                # Each topic's records in as few record batches as they fit, in their order.
                await self._written(await send_records(producer, records, partition))
                await producer.send_offsets_to_transaction({tp: messages[-1].offset + 1}, self.app_id)
        except _InternalError as e:
            # The table the bug hit may be half-changed: nothing of the batch is committed, the
            # partition's tables are rebuilt from the changelog (owned again at the next round) and
            # the batch re-read, with that message rejected instead of applied (compute, then commit).
            if e.offset is None:
                # Raised inside a run of quiet events: which one is not known. The batch is
                # settled again event by event, which finds it (and rejects it the time after).
                log.error("partition %s: internal error in a quiet run; batch aborted, to be settled "
                          "again event by event", partition, exc_info=e.__cause__)
                self.event_by_event.add(partition)
            else:
                log.error("partition %s offset %s: internal error; batch aborted, the message will be "
                          "rejected", partition, e.offset, exc_info=e.__cause__)
                failed[e.offset] = e.__cause__
            await self._drop(owner)
            self._rewind(tp, messages[0].offset)
            return
        except ProducerFenced:
            # Another worker owns this partition now (or the coordinator aborted a transaction that
            # outlived its timeout): nothing of the batch committed. Give the partition up, keep the
            # others, stay in the group; taken over again only as own_assigned allows.
            log.warning("partition %s: producer fenced; batch aborted, partition released", partition)
            self.fenced[partition] = (self.generation, time.monotonic())
            await self._drop(owner)
            self._rewind(tp, messages[0].offset)
            return
        except (*TRANSIENT, IllegalOperation):
            # Aborted: the in-memory tables may be ahead of what committed. Rebuild and re-read
            # (owning it again reads the committed offset; the batch began there).
            log.exception("partition %s: transaction failed; recovering", partition)
            await self._drop(owner)
            self._rewind(tp, messages[0].offset)
            return
        owner.committed_offset = messages[-1].offset + 1
        self.event_by_event.discard(partition)  # committed: the next batch in quiet runs again
        if failed:  # committed: offsets below the batch's end are never read again
            for offset in [o for o in failed if o < messages[-1].offset + 1]:
                del failed[offset]
        if self.observer is not None:
            self.observer(batch, partition, time.monotonic() - started)
