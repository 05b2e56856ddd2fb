"""The worker's transactional producers forget a coordinator that left the cluster's metadata
(craps_streams/kafka/producers.py, CoordinatorCheckingSender): a node cut off by the network and
fenced is not asked again, and waited on for a request timeout, by every producer that had last
used it. On the real aiokafka producer and sender; the cluster's metadata and the coordinator
lookup are the client's, answered here as the cluster answers once it has fenced node 1 (no
broker is needed)."""
from __future__ import annotations

import asyncio

from aiokafka.client import CoordinationType
from aiokafka.producer.sender import Sender

from craps_streams.kafka.producers import CoordinatorCheckingSender, transactional_producer


class Cluster:
    """The metadata of a cluster that fenced node 1: nodes 2 and 3 only; coordinators are on 3."""

    def __init__(self, client):
        self.lookups: list = []
        client.cluster.broker_metadata = lambda node: object() if node in (2, 3) else None

        async def coordinator_lookup(coordinator_type, key):
            self.lookups.append((coordinator_type, key))
            return 3

        async def ready(node, group=None):
            return True

        client.coordinator_lookup = coordinator_lookup
        client.ready = ready


def found(sender, cached: dict):
    sender._coordinators.update(cached)
    return (asyncio.run(_find(sender, CoordinationType.GROUP, "craps-worker")),
            asyncio.run(_find(sender, CoordinationType.TRANSACTION, "craps-worker-5")))


async def _find(sender, coordinator_type, key):
    return await sender._find_coordinator(coordinator_type, key)


def producer():
    async def made():
        return transactional_producer("craps-worker-5", 60_000, bootstrap="127.0.0.1:1")
    return asyncio.run(made())


def test_a_coordinator_gone_from_the_metadata_is_looked_up_again(monkeypatch):
    from craps_streams.kafka import settings

    monkeypatch.setattr(settings, "security_settings", lambda role: {"security_protocol": "PLAINTEXT"})
    p = producer()
    assert type(p._sender) is CoordinatorCheckingSender
    cluster = Cluster(p.client)
    # Both coordinators were node 1, fenced since: both found again, on node 3.
    assert found(p._sender, {CoordinationType.GROUP: 1, CoordinationType.TRANSACTION: 1}) == (3, 3)
    assert cluster.lookups == [(CoordinationType.GROUP, "craps-worker"), (CoordinationType.TRANSACTION, "craps-worker-5")]


def test_a_coordinator_still_in_the_metadata_is_kept(monkeypatch):
    from craps_streams.kafka import settings

    monkeypatch.setattr(settings, "security_settings", lambda role: {"security_protocol": "PLAINTEXT"})
    p = producer()
    cluster = Cluster(p.client)
    assert found(p._sender, {CoordinationType.GROUP: 2, CoordinationType.TRANSACTION: 3}) == (2, 3)
    assert cluster.lookups == []  # no lookup while the cached node is in the cluster


def test_aiokafkas_own_sender_keeps_the_gone_coordinator(monkeypatch):
    """Why the subclass: aiokafka's sender, as installed, still answers node 1 (the request would
    go there and wait out its timeout). If this starts failing, aiokafka checks by itself and the
    subclass can go."""
    from craps_streams.kafka import settings

    monkeypatch.setattr(settings, "security_settings", lambda role: {"security_protocol": "PLAINTEXT"})
    p = producer()
    plain = Sender(p.client, acks=-1, txn_manager=p._txn_manager, message_accumulator=p._message_accumulator,
                   retry_backoff_ms=10, request_timeout_ms=5_000)
    Cluster(p.client)
    assert found(plain, {CoordinationType.GROUP: 1, CoordinationType.TRANSACTION: 1}) == (1, 1)


def test_the_producer_keeps_its_settings(monkeypatch):
    """The sender is rebuilt on the producer's own client, accumulator and transaction manager,
    with the producer's retry backoff and request timeout."""
    from craps_streams.kafka import settings

    monkeypatch.setattr(settings, "security_settings", lambda role: {"security_protocol": "PLAINTEXT"})
    p = producer()
    s = p._sender
    assert (s.client, s._txn_manager, s._message_accumulator) == (p.client, p._txn_manager, p._message_accumulator)
    assert (s._retry_backoff, s._request_timeout_ms, s._acks) == (0.01, 5_000, -1)
    assert p._txn_manager.transactional_id == "craps-worker-5"


def test_stopping_a_producer_waits_at_most_its_bound_for_the_connections_to_close():
    """A TLS connection to a node cut off closes only after Python's TLS shutdown timeout (30 s):
    `stop_producer` lets that go on by itself after its wait, and the stop still completes."""
    from craps_streams.kafka.producers import stop_producer

    class Stuck:
        stopped = False

        async def stop(self):
            await asyncio.sleep(0.5)  # the sockets' closing, to a silent node
            self.stopped = True

    async def run():
        producer = Stuck()
        loop = asyncio.get_running_loop()
        t = loop.time()
        await stop_producer(producer, wait_s=0.05)
        waited = loop.time() - t
        assert not producer.stopped
        await asyncio.sleep(0.6)
        return waited, producer.stopped
    waited, stopped = asyncio.run(run())
    assert waited < 0.3 and stopped


class _Builder:
    def __init__(self):
        self.records = []

    def append(self, key, value, timestamp):
        self.records.append((key, value))
        return True

    def close(self):
        pass

    def record_count(self):
        return len(self.records)


class _Queue:
    """A producer whose queue has no room for `full` tries (aiokafka's KafkaTimeoutError)."""

    def __init__(self, full):
        self.full, self.tries, self.queued = full, 0, []

    def create_batch(self):
        return _Builder()

    async def send_batch(self, batch, topic, partition):
        from aiokafka.errors import KafkaTimeoutError

        self.tries += 1
        if self.tries <= self.full:
            raise KafkaTimeoutError()
        self.queued.append((topic, partition, list(batch.records)))
        return "delivery"


def test_a_record_batch_waits_for_room_behind_the_one_in_flight():
    import pytest
    from aiokafka.errors import KafkaTimeoutError

    from craps_streams.kafka.producers import QUEUE_WAITS, send_records

    producer = _Queue(full=QUEUE_WAITS - 1)
    delivered = asyncio.run(send_records(producer, {"settlements": [(b"T1", b"a"), (b"T1", b"b")]}, 3))
    assert delivered == ["delivery"] and producer.queued == [("settlements", 3, [(b"T1", b"a"), (b"T1", b"b")])]
    stuck = _Queue(full=QUEUE_WAITS)
    with pytest.raises(KafkaTimeoutError):
        asyncio.run(send_records(stuck, {"settlements": [(b"T1", b"a")]}, 3))
    assert stuck.queued == [] and stuck.tries == QUEUE_WAITS
