"""An aiokafka client beside a node that stopped answering (a network cut): where it sends a
request any node can answer (a coordinator lookup, a metadata refresh), where it bootstraps, and
how it makes connections, so that no request to the other nodes waits on that node.

aiokafka sends a FindCoordinator to a node picked at random from its metadata
(`AIOKafkaClient.get_random_node`). A node cut off by the network stays in a client's metadata
until the cluster has fenced it and the client's metadata has been refreshed (the refresh itself
may go to the cut node and wait out its 5 s first), and every lookup sent to it waits out the
request timeout too. In the worst-case partition drill (docs/reliability/cluster.md) a worker's
consumer sent its group coordinator lookups to the cut node twice in a row, 5 s each, and reached
the group's new coordinator after its 10 s session there had run out: the coordinator dropped the
worker, the group rebalanced, and every partition was taken over again after the heal.

The metadata requests have the same flaw, worse: aiokafka asks the nodes of its metadata in a
random order (`AIOKafkaClient._metadata_update`) and, when a metadata request times out, keeps the
connection (only `AIOKafkaClient.send` closes one on a timeout), so the next refresh may ask the
cut node again on the same silent connection, 5 s each time. A member whose coordinator lookup
failed (the group still loading on its new coordinator) refreshes its metadata before it asks
again: in a worst-case drill a worker's metadata requests timed out on the cut node three times
while it looked for the new coordinator, which it reached 14 s after losing the old one, after its
session there had run out.

Worse still, aiokafka makes every new connection of a client under one lock (`AIOKafkaClient.
_get_conn`): while it tries the cut node, which answers nothing for the request timeout (5 s), no
other connection of that client is made, to any node. In the worst-case drill a worker's group
consumer was told by a node not yet aware of the fencing that the cut node still coordinated the
group, tried to connect to it, and its connection to the new coordinator waited behind that try
and the next one (the fetcher's, to the cut node as a partition's leader in metadata not yet
refreshed): it reached the new coordinator 11 s after losing the old one, and the group dropped it.

A client made during the cut (a takeover's transactional producer) bootstraps from the servers in
a random order too: in a drill a takeover's producer spent 5 s trying the cut node first.

`avoid_failed_nodes(client)` makes the client make its connections under a lock per connection
(the node and the connection group), so a connection to the cut node holds up only the requests to
that node; and it remembers, for every client of the process (`FAILED`, by host and port), the
nodes a client failed to connect to, whose connection it closed on a request timeout, or that did
not answer a metadata request in time, and for `RECENT_S` picks the random node among the others
(all of them if every node failed), asks those nodes last for metadata, and bootstraps from the
other servers first. Nothing else changes: a request for a partition's leader or a known
coordinator still goes to that node, and every node is still asked for metadata if the others fail.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
import random
import time

from aiokafka.client import ConnectionGroup
from aiokafka.conn import CloseReason, collect_hosts
from aiokafka.errors import KafkaConnectionError, KafkaError
from aiokafka.protocol.metadata import MetadataRequest

log = logging.getLogger("aiokafka")  # aiokafka's own words, so the client logs' filter says a lost node once

RECENT_S = 10.0  # a node that failed within this long is asked only if no other node is left

# The connection being made in this task (node id, connection group), for `_ConnectionLocks`.
_CONNECTING: contextvars.ContextVar = contextvars.ContextVar("craps_kafka_connecting", default=None)


class _ConnectionLocks:
    """Stands in for aiokafka 0.14's client-wide lock around making a connection
    (`AIOKafkaClient._get_conn_lock`): one lock per connection, the one `_CONNECTING` names (the
    patched `_get_conn` sets it for the original's call, in the same task). Two tries of the same
    connection still wait for each other, so it is made once."""

    def __init__(self) -> None:
        self.locks: dict = {}

    def _lock(self) -> asyncio.Lock:
        return self.locks.setdefault(_CONNECTING.get(), asyncio.Lock())

    async def __aenter__(self):
        await self._lock().acquire()

    async def __aexit__(self, *exc) -> None:
        self._lock().release()


# (host, port) -> clock of the latest failure there, shared by every patched client of the process:
# a client made during a cut (a takeover's producer) knows at once what the others learned.
FAILED: dict = {}


def answering_servers(servers: str, clock=None) -> str:
    """`servers` ("host:port,..."), less those a client of this process failed to reach within
    `RECENT_S` (all of them if none is left): the bootstrap servers for a client made now."""
    clock = clock or time.monotonic
    hosts = [(host, port) for host, port, _ in collect_hosts(servers, randomize=False)]
    answering = [f"{host}:{port}" for host, port in hosts if not _recent(clock, (host, port))]
    return ",".join(answering) if answering else servers


def _recent(clock, where) -> bool:
    return where in FAILED and clock() - FAILED[where] <= RECENT_S


def avoid_failed_nodes(client, clock=None) -> None:
    """Patch this one aiokafka client (AIOKafkaClient, before it connects) as the module says."""
    clock = clock or time.monotonic
    get_conn, closed, bootstrap = client._get_conn, client._on_connection_closed, client.bootstrap

    def endpoint(node_id):
        broker = client.cluster.broker_metadata(node_id) if node_id != "bootstrap" else None
        return (broker.host, broker.port) if broker is not None else None

    def failed(node_id) -> None:
        where = endpoint(node_id)
        if where is not None:
            FAILED[where] = clock()

    def recent(node_id) -> bool:
        return _recent(clock, endpoint(node_id))

    async def _get_conn(node_id, *, group=ConnectionGroup.DEFAULT, no_hint=False):
        making = _CONNECTING.set((node_id, group))
        try:
            conn = await get_conn(node_id, group=group, no_hint=no_hint)
        finally:
            _CONNECTING.reset(making)
        if conn is None:
            failed(node_id)
        return conn

    def _on_connection_closed(conn, reason):
        if reason == CloseReason.CONNECTION_TIMEOUT:
            FAILED[(conn.host, conn.port)] = clock()
        closed(conn, reason)

    async def _bootstrap():
        # aiokafka tries the bootstrap servers in a random order, each for the request timeout: a
        # client started during a cut (a takeover's producer) first asks the others.
        servers = client._bootstrap_servers
        answering = answering_servers(servers, clock)
        if answering != servers:
            client._bootstrap_servers = answering
            try:
                return await bootstrap()
            except KafkaConnectionError:
                pass  # none of them: every server, as aiokafka would
            finally:
                client._bootstrap_servers = servers
        return await bootstrap()

    def get_random_node():
        nodes = [b.nodeId for b in client.cluster.brokers()]
        if not nodes:
            return None
        answering = [n for n in nodes if not recent(n)]
        return random.choice(answering or nodes)

    async def _metadata_update(cluster_metadata, topics):
        # aiokafka 0.14's AIOKafkaClient._metadata_update, but for the order of the nodes (those that
        # failed recently last) and a timed-out metadata request counted as a failure of its node.
        request = MetadataRequest(list(topics) if topics else None)
        nodes = [b.nodeId for b in client.cluster.brokers()]
        bootstrap_id = ("bootstrap", ConnectionGroup.DEFAULT)
        if bootstrap_id in client._conns:
            nodes.append("bootstrap")
        random.shuffle(nodes)
        nodes.sort(key=recent)  # stable: the answering nodes first, each group in random order
        for node_id in nodes:
            conn = await client._get_conn(node_id)
            if conn is None:
                continue
            try:
                metadata = await conn.send(request)
            except (KafkaError, asyncio.TimeoutError) as err:
                log.warning("Unable to request metadata from node with id %s: %r", node_id, err)
                failed(node_id)
                continue
            if not metadata.brokers:
                return False
            cluster_metadata.update_metadata(metadata)
            if bootstrap_id in client._conns and len(client.cluster.brokers()):
                client._conns.pop(bootstrap_id).close()
            return True
        log.error("Unable to update metadata from %s", nodes)
        cluster_metadata.failed_update(None)
        return False

    client._get_conn_lock_value = _ConnectionLocks()  # read through aiokafka's `_get_conn_lock` property
    client._get_conn = _get_conn
    client.bootstrap = _bootstrap
    client._on_connection_closed = _on_connection_closed
    client.get_random_node = get_random_node
    client._metadata_update = _metadata_update
