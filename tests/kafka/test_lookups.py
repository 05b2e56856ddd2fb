"""A client's coordinator lookups avoid a node that just failed (craps_streams/kafka/lookups.py):
on a real aiokafka client (the worker's group consumer's and transactional producer's), its
cluster's brokers and its connections answered here as a cluster with node 2 cut off would."""
from __future__ import annotations

import asyncio
import collections
import types

import pytest

from aiokafka.conn import CloseReason
from aiokafka.structs import BrokerMetadata

from craps_streams.kafka.lookups import RECENT_S


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Conn:
    host, port = "127.0.0.1", 19094  # node 2's


def cluster_of_three(client):
    nodes = [BrokerMetadata(n, "127.0.0.1", 19092 + n, None) for n in (1, 2, 3)]
    client.cluster.brokers = lambda: set(nodes)
    client.cluster.broker_metadata = lambda n: next((b for b in nodes if b.nodeId == n), None)


@pytest.fixture(autouse=True)
def no_failure_known(monkeypatch):
    """Each test starts with no node known failed (the process's memory of failures)."""
    from craps_streams.kafka import lookups

    monkeypatch.setattr(lookups, "FAILED", {})


def consumer(monkeypatch):
    from craps_streams.kafka import consumers, settings

    monkeypatch.setattr(settings, "security_settings", lambda role: {"security_protocol": "PLAINTEXT"})

    async def made():
        return consumers.group_consumer("g", session_timeout_ms=10_000, heartbeat_interval_ms=2_000,
                                        max_poll_interval_ms=120_000, bootstrap="127.0.0.1:1")
    return asyncio.run(made())


def picks(client, n=300):
    return collections.Counter(client.get_random_node() for _ in range(n))


def test_a_node_whose_request_timed_out_is_not_asked_again_for_a_while(monkeypatch):
    from craps_streams.kafka import lookups

    clock = Clock()
    monkeypatch.setattr(lookups.time, "monotonic", clock)
    client = consumer(monkeypatch)._client
    cluster_of_three(client)
    assert set(picks(client)) == {1, 2, 3}  # aiokafka's random node, every node
    client._on_connection_closed(Conn(), CloseReason.CONNECTION_TIMEOUT)  # a lookup to node 2 timed out
    assert set(picks(client)) == {1, 3}
    clock.now += RECENT_S + 1
    assert set(picks(client)) == {1, 2, 3}


def test_a_node_it_cannot_connect_to_is_not_asked_again_for_a_while(monkeypatch):
    from craps_streams.kafka import lookups, producers, settings

    clock = Clock()
    monkeypatch.setattr(lookups.time, "monotonic", clock)
    monkeypatch.setattr(settings, "security_settings", lambda role: {"security_protocol": "PLAINTEXT"})

    async def run():
        p = producers.transactional_producer("craps-worker-5", 60_000, bootstrap="127.0.0.1:1")
        cluster_of_three(p.client)
        assert await p.client._get_conn(2) is None  # nothing listens there: the connection fails
        return p.client
    client = asyncio.run(run())
    assert set(picks(client)) == {1, 3}


def test_when_every_node_failed_any_is_asked(monkeypatch):
    client = consumer(monkeypatch)._client
    cluster_of_three(client)
    for port in (19093, 19094, 19095):
        conn = Conn()
        conn.port = port
        client._on_connection_closed(conn, CloseReason.CONNECTION_TIMEOUT)
    assert set(picks(client)) == {1, 2, 3}


class MetadataConn:
    """A connection answering a metadata request with the cluster of three, or never (cut off)."""

    def __init__(self, node, asked, silent):
        self.node, self.asked, self.silent = node, asked, silent

    async def send(self, request):
        self.asked.append(self.node)
        if self.node in self.silent:
            raise asyncio.TimeoutError()
        return types.SimpleNamespace(brokers=[(n, "127.0.0.1", 19092 + n) for n in (1, 2, 3)])


def test_a_node_that_did_not_answer_a_metadata_request_is_asked_last(monkeypatch):
    client = consumer(monkeypatch)._client
    cluster_of_three(client)
    asked: list = []

    async def get_conn(node_id, **kw):
        return MetadataConn(node_id, asked, silent={2})
    client._get_conn = get_conn  # under the patch's own wrapper: the connections of a cut
    from craps_streams.kafka.lookups import avoid_failed_nodes

    avoid_failed_nodes(client)

    updated = types.SimpleNamespace(update_metadata=lambda metadata: None)

    async def updates(n):
        for _ in range(n):
            assert await client._metadata_update(updated, [])
    # Until node 2 times out once, it is asked in its turn (aiokafka's random order); then never first.
    while 2 not in asked:
        asked.clear()
        asyncio.run(updates(1))
    asked.clear()
    asyncio.run(updates(50))
    assert asked and 2 not in asked


def test_a_connection_to_a_silent_node_holds_up_no_connection_to_another(monkeypatch):
    import aiokafka.client

    class Made:
        def connected(self):
            return True

    async def create_conn(host, port, **kw):
        if port == 19094:  # node 2, cut off: nothing answers until the timeout
            await asyncio.sleep(1.0)
            raise asyncio.TimeoutError()
        return Made()
    monkeypatch.setattr(aiokafka.client, "create_conn", create_conn)
    client = consumer(monkeypatch)._client
    cluster_of_three(client)

    async def run():
        loop = asyncio.get_running_loop()
        to_cut = asyncio.create_task(client._get_conn(2))
        await asyncio.sleep(0.05)  # the try to node 2 under way
        t = loop.time()
        made = await client._get_conn(3)
        waited = loop.time() - t
        assert await to_cut is None
        return made, waited
    made, waited = asyncio.run(run())
    assert made is not None and waited < 0.5  # aiokafka's one lock: 0.95 s, behind node 2's try
    assert set(picks(client)) == {1, 3}


def test_a_client_made_after_a_failure_bootstraps_from_the_other_servers(monkeypatch):
    from craps_streams.kafka import lookups

    client = consumer(monkeypatch)._client
    cluster_of_three(client)
    client._on_connection_closed(Conn(), CloseReason.CONNECTION_TIMEOUT)  # node 2, in one client
    another = consumer(monkeypatch)._client
    another._bootstrap_servers = "127.0.0.1:19093,127.0.0.1:19094,127.0.0.1:19095"
    tried = []

    async def bootstrap():
        tried.append(another._bootstrap_servers)
    monkeypatch.setattr(another, "bootstrap", bootstrap)
    lookups.avoid_failed_nodes(another)  # over the stand-in: the patch's own ordering
    asyncio.run(another.bootstrap())
    assert [sorted(servers.split(",")) for servers in tried] == [["127.0.0.1:19093", "127.0.0.1:19095"]]
    assert another._bootstrap_servers.count(",") == 2  # the full list again, for later


def test_the_servers_for_a_new_client_leave_out_a_node_that_just_failed(monkeypatch):
    from craps_streams.kafka import lookups

    clock = Clock()
    servers = "127.0.0.1:19093,127.0.0.1:19094,127.0.0.1:19095"
    assert lookups.answering_servers(servers, clock) == servers
    lookups.FAILED[("127.0.0.1", 19094)] = clock()
    assert lookups.answering_servers(servers, clock) == "127.0.0.1:19093,127.0.0.1:19095"
    clock.now += RECENT_S + 1
    assert lookups.answering_servers(servers, clock) == servers
    for port in (19093, 19094, 19095):
        lookups.FAILED[("127.0.0.1", port)] = clock()
    assert lookups.answering_servers(servers, clock) == servers  # none left: every one
