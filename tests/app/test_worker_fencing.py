"""A fenced producer costs the worker only that partition: it is released, not taken
over again in the same group generation until the hold-off has passed, and the worker keeps
running. Pure: the Kafka clients are replaced by recording doubles; the real broker's version of
this is tests/faults (fencing and broker restart)."""
from __future__ import annotations

import asyncio
import contextlib

from craps_streams.app.worker import PartitionOwner, SettlingWorker, WorkerTimeouts
from craps_streams.authenticity import KeyRing, TagCheck
from craps_streams.kafka.consumers import ProducerFenced, TopicPartition
from craps_streams.topics import Topics

TABLE_EVENTS, SETTLEMENTS, TABLE_STATE = Topics().table_events, Topics().settlements, Topics().table_state
from tests.app.batch_shell import OneByOne
from tests.app.test_worker_drains import taken_over


class FencedProducer:
    """A transactional producer whose transaction the broker fences at commit."""

    def __init__(self):
        self.stopped = False

    @contextlib.asynccontextmanager
    async def transaction(self):
        yield
        raise ProducerFenced()

    async def send(self, *a, **k):
        return None

    async def send_offsets_to_transaction(self, *a, **k):
        return None

    async def stop(self):
        self.stopped = True


class Message:
    def __init__(self, offset: int):
        self.offset, self.value, self.topic = offset, b"{}", TABLE_EVENTS


class Shell(OneByOne):
    def handle(self, value, topic, partition, offset):
        class Handled:
            messages, state, table_id = [], None, None
        return Handled()


class Consumer:
    def __init__(self):
        self.seeks = []

    def seek(self, tp, offset):
        self.seeks.append((tp.partition, offset))


def fenced_worker(monkeypatch, session_timeout_ms: int = 10_000):
    w = SettlingWorker(bootstrap="127.0.0.1:1", tags=TagCheck(KeyRing()),
                       timeouts=WorkerTimeouts(session_timeout_ms=session_timeout_ms))
    w.consumer = Consumer()
    producer = FencedProducer()
    w.owners[3] = PartitionOwner(3, producer, Shell())
    w.assigned = {3, 5}
    asyncio.run(w.settle_batch(TopicPartition(TABLE_EVENTS, 3), [Message(40), Message(41)]))
    return w, producer


def recording_takeovers(w) -> list[int]:
    """Replace the worker's takeover by a record of the partitions it would take over."""
    taken: list[int] = []

    async def own(tp):
        taken.append(tp.partition)

    w.own = own
    return taken


def test_a_fenced_partition_is_released_and_the_worker_keeps_running(monkeypatch):
    w, producer = fenced_worker(monkeypatch)
    assert not w.stopping.is_set()
    assert 3 not in w.owners and producer.stopped
    assert w.consumer.seeks == [(3, 40)]  # re-read from the batch's start when owned again
    assert 3 in w.fenced


def test_not_taken_over_again_in_the_same_generation_before_the_hold_off(monkeypatch):
    w, _ = fenced_worker(monkeypatch)
    taken = recording_takeovers(w)
    asyncio.run(taken_over(w))
    assert taken == [5]  # the other assigned partition only


def test_taken_over_again_after_a_rebalance(monkeypatch):
    w, _ = fenced_worker(monkeypatch)
    taken = recording_takeovers(w)
    w.generation += 2  # revoked and assigned again: the group says it is ours
    asyncio.run(taken_over(w))
    assert taken == [3, 5]
    assert 3 not in w.fenced


def test_taken_over_again_after_the_hold_off_without_a_rebalance(monkeypatch):
    w, _ = fenced_worker(monkeypatch)
    taken = recording_takeovers(w)
    generation, at = w.fenced[3]
    w.fenced[3] = (generation, at - w.fenced_hold_off_s - 0.1)  # a session timeout ago
    asyncio.run(taken_over(w))
    assert taken == [3, 5]


def test_hold_off_is_the_session_timeout(monkeypatch):
    w, _ = fenced_worker(monkeypatch, session_timeout_ms=6_000)
    assert w.fenced_hold_off_s == 6.0
