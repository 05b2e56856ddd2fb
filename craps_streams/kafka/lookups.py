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

`avoid_failed_nodes(client)` makes the client remember the nodes it failed to connect to, or whose
connection it closed on a request timeout, and pick the random node among the others for
`RECENT_S` (all of them if every node failed). Nothing else changes: a request for a partition's
leader or a known coordinator still goes to that node.
"""
from __future__ import annotations

import random
import time

from aiokafka.client import ConnectionGroup
from aiokafka.conn import CloseReason

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

    def get_random_node():
        nodes = [b.nodeId for b in client.cluster.brokers()]
        if not nodes:
            return None
        now = clock()
        answering = [n for n in nodes if now - failed.get(n, now - RECENT_S - 1) > RECENT_S]
        return random.choice(answering or nodes)

    client._get_conn = _get_conn
    client._on_connection_closed = _on_connection_closed
    client.get_random_node = get_random_node
