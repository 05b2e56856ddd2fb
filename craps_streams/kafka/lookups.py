"""Where an aiokafka client sends a request any node can answer (a coordinator lookup): not to a
node that has just failed it.

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
again: in a worst-case drill a worker's refreshes went to the cut node twice during its search,
and it reached the new coordinator 14 s after it lost the old one, after its session there had run
out.

`avoid_failed_nodes(client)` makes the client remember the nodes it failed to connect to, whose
connection it closed on a request timeout, or that did not answer a metadata request in time, and
pick the random node among the others for `RECENT_S` (all of them if every node failed), and ask
those nodes last for metadata. Nothing else changes: a request for a partition's leader or a known
coordinator still goes to that node, and every node is still asked for metadata if the others fail.
"""
from __future__ import annotations

import asyncio
import logging
import random
import time

from aiokafka.client import ConnectionGroup
from aiokafka.conn import CloseReason
from aiokafka.errors import KafkaError
from aiokafka.protocol.metadata import MetadataRequest

log = logging.getLogger("aiokafka")  # aiokafka's own words, so the client logs' filter says a lost node once

RECENT_S = 10.0  # a node that failed within this long is asked only if no other node is left


def avoid_failed_nodes(client, clock=None) -> None:
    """Patch this one aiokafka client (AIOKafkaClient, before it connects) as the module says."""
    clock = clock or time.monotonic
    failed: dict = {}  # node id -> clock of its latest failure
    get_conn, closed = client._get_conn, client._on_connection_closed

    async def _get_conn(node_id, *, group=ConnectionGroup.DEFAULT, no_hint=False):
        conn = await get_conn(node_id, group=group, no_hint=no_hint)
        if conn is None:
            failed[node_id] = clock()
        return conn

    def _on_connection_closed(conn, reason):
        if reason == CloseReason.CONNECTION_TIMEOUT:
            for broker in client.cluster.brokers():
                if (broker.host, broker.port) == (conn.host, conn.port):
                    failed[broker.nodeId] = clock()
        closed(conn, reason)

    def recent(node_id) -> bool:
        return clock() - failed.get(node_id, clock() - RECENT_S - 1) <= RECENT_S

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
                failed[node_id] = clock()
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

    client._get_conn = _get_conn
    client._on_connection_closed = _on_connection_closed
    client.get_random_node = get_random_node
    client._metadata_update = _metadata_update
