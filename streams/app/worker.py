"""The settling worker: craps.table-events -> the rules core -> the output topics, exactly once.

A consume-transform-produce loop on aiokafka's transactions, one transactional producer per
assigned partition (transactional.id = app id + partition, so a new owner of a partition fences
the old one: a zombie worker can never commit). For each partition's batch of events, one Kafka
transaction holds the outputs, the new table states (compacted changelog TABLE_STATE) and the
consumed offsets: all of them commit, or none. After a failed transaction the partition's tables
are rebuilt from the changelog and the partition is re-read from its committed offset.

Why not Faust's agent (faust-streaming 0.15.3): tests/pipeline's crash test found settlements
lost after a kill -9, its sends to sink topics bypass the partition's transactional producer and
its exactly_once table recovery stops early; see the issue notes.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import KafkaError, ProducerFenced

from streams.app.recovery import recover_partition
from streams.app.shell import SettlementShell, state_to_text
from streams.topics import TABLE_EVENTS, TABLE_STATE, default_bootstrap

log = logging.getLogger("craps.worker")


class PartitionOwner:
    """What a worker holds for one partition it owns: the fencing producer and the live tables."""

    def __init__(self, partition: int, producer: AIOKafkaProducer, shell: SettlementShell):
        self.partition = partition
        self.producer = producer
        self.shell = shell


class SettlingWorker:
    def __init__(self, app_id: str | None = None, bootstrap: str | None = None,
                 max_batch: int = 2000, observer=None):
        self.app_id = app_id or os.environ.get("CRAPS_APP_ID", "craps-streams")
        self.bootstrap = bootstrap or default_bootstrap()
        self.max_batch = max_batch
        self.owners: dict[int, PartitionOwner] = {}
        self.consumer: AIOKafkaConsumer | None = None
        # observer(handled_list, partition, seconds) after each committed batch: metrics, floor page
        self.observer = observer
        self.stopping = asyncio.Event()

    # ------------------------------------------------------------ partition ownership

    async def own(self, partition: int) -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap, transactional_id=f"{self.app_id}-{partition}",
            enable_idempotence=True, acks="all", linger_ms=2,
        )
        await producer.start()  # init_transactions: fences a previous owner, aborts its open transaction
        states, seconds = await asyncio.to_thread(recover_partition, partition, TABLE_STATE, self.bootstrap)
        log.info("partition %s owned: %s table states recovered in %.2f s", partition, len(states), seconds)
        self.owners[partition] = PartitionOwner(partition, producer, SettlementShell(states.get))

    async def release(self, partition: int) -> None:
        owner = self.owners.pop(partition, None)
        if owner is not None:
            await owner.producer.stop()
            log.info("partition %s released", partition)

    # ------------------------------------------------------------ the loop

    async def run(self) -> None:
        worker = self

        class Rebalance(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                for tp in revoked:
                    await worker.release(tp.partition)

            async def on_partitions_assigned(self, assigned):
                # Owning (fencing, recovery) happens in the loop, before a partition's first batch:
                # aiokafka may hand out records before a slow listener returns.
                pass

        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap, group_id=self.app_id, isolation_level="read_committed",
            enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=10_000,
            heartbeat_interval_ms=2_000, max_poll_interval_ms=120_000, fetch_max_wait_ms=20,
        )
        self.consumer.subscribe([TABLE_EVENTS], listener=Rebalance())
        await self.consumer.start()
        try:
            while not self.stopping.is_set():
                batches = await self.consumer.getmany(timeout_ms=100, max_records=self.max_batch)
                for tp, messages in batches.items():
                    if not messages:
                        continue
                    if tp.partition not in self.owners:
                        await self.own(tp.partition)
                    await self.settle_batch(tp, messages)
        finally:
            await self.consumer.stop()
            for partition in list(self.owners):
                await self.release(partition)

    async def settle_batch(self, tp: TopicPartition, messages: list) -> None:
        owner = self.owners[tp.partition]
        producer, shell, partition = owner.producer, owner.shell, tp.partition
        started = time.monotonic()
        handled_list = []
        rebuild = False
        try:
            async with producer.transaction():
                for m in messages:
                    try:
                        handled = shell.handle(m.value, m.topic, partition, m.offset)
                    except Exception as e:  # a bug, not bad input: never stop the floor for it
                        log.exception("partition %s offset %s: internal error", partition, m.offset)
                        handled = SettlementShell.undecodable(m.value, e, m.topic, partition, m.offset)
                        rebuild = True  # the tables may be half-changed: rebuild after the commit
                    handled_list.append(handled)
                    for topic, key, value in handled.messages:
                        await producer.send(topic, value, key=key, partition=partition)
                    if handled.state is not None:
                        await producer.send(TABLE_STATE, state_to_text(handled.state).encode(),
                                            key=handled.table_id.encode(), partition=partition)
                await producer.send_offsets_to_transaction({tp: messages[-1].offset + 1}, self.app_id)
        except ProducerFenced:
            # Another worker owns this partition now: this one is a zombie and must stop.
            log.error("partition %s: producer fenced; stopping", partition)
            self.stopping.set()
            return
        except KafkaError:
            # Aborted: the in-memory tables may be ahead of what committed. Rebuild and re-read.
            log.exception("partition %s: transaction failed; recovering", partition)
            await self.release(partition)
            if tp in self.consumer.assignment():
                committed = await self.consumer.committed(tp)
                self.consumer.seek(tp, committed if committed is not None else 0)
            return
        if rebuild:
            await self.release(partition)  # owned again, with tables from the changelog, at its next batch
        if self.observer is not None:
            self.observer(handled_list, partition, time.monotonic() - started)
