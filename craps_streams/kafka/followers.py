"""The tail's follower: a topic's committed records as they commit, through kafka-python, and what
it says when the broker is gone (docs/operating/cli.md, `tail`)."""
from __future__ import annotations

import time
import uuid

from kafka import KafkaConsumer
from kafka.errors import KafkaError as SyncKafkaError

from craps_streams.kafka.errors import BrokerUnreachable
from craps_streams.kafka.settings import client_settings

# A follower whose broker is gone: it says so once no broker connection has been up for
# BROKER_SAY_AFTER_S, and gives up (BrokerUnreachable: exit 5) after BROKER_GIVE_UP_AFTER_S without
# one; a broker back within the wait is said too, and followed on.
BROKER_SAY_AFTER_S = 3.0
BROKER_GIVE_UP_AFTER_S = 30.0
POLL_MS = 500


def follower(topics: list[str], *, from_beginning: bool, role: str = "viewer",
             bootstrap: str | None = None) -> KafkaConsumer:
    """An iterator of the topics' committed records, from the beginning or from now on, in a
    group of its own (nothing committed: a follower never moves anyone else's position)."""
    return KafkaConsumer(*topics, **client_settings(role, bootstrap), group_id=f"craps-tail-{uuid.uuid4().hex[:8]}",
                         isolation_level="read_committed", enable_auto_commit=False,
                         auto_offset_reset="earliest" if from_beginning else "latest")


def _connected(consumer: KafkaConsumer) -> bool:
    """Whether the consumer holds a connection to any broker of the cluster it knows (kafka-python
    keeps its network client private; `connected` and the cluster's brokers are its public API)."""
    client = consumer._client
    return any(client.connected(b.node_id) for b in client.cluster.brokers()) or client.bootstrap_connected()


def followed(consumer: KafkaConsumer, notice=lambda message: None, bootstrap: str = "",
             say_after_s: float = BROKER_SAY_AFTER_S, give_up_after_s: float = BROKER_GIVE_UP_AFTER_S,
             clock=time.monotonic, wall=time.time):
    """The consumer's records, as they commit; `notice(message)` when the broker is gone and when it
    is back. Raises BrokerUnreachable after `give_up_after_s` with no broker connection."""
    lost_at = lost_wall = None
    said = False
    while True:
        try:
            batches = consumer.poll(timeout_ms=POLL_MS)
        except (SyncKafkaError, OSError):
            # Every node of a cluster gone at once: the poll's metadata refresh raises (each refused
            # it). The broker is away, waited for as below, not given up on at once.
            batches = {}
            time.sleep(POLL_MS / 1000)
        for records in batches.values():
            yield from records
        if _connected(consumer):
            if said:
                notice("the Kafka broker answers again: following on")
            lost_at, said = None, False
            continue
        now = clock()
        if lost_at is None:
            lost_at, lost_wall = now, wall()
        since = time.strftime("%H:%M:%S", time.gmtime(lost_wall))
        if not said and now - lost_at >= say_after_s:
            said = True
            notice(f"no Kafka broker answers{' at ' + bootstrap if bootstrap else ''} since {since} UTC: "
                   f"waiting up to {give_up_after_s:.0f} s for it")
        if now - lost_at >= give_up_after_s:
            raise BrokerUnreachable(f"no Kafka broker answered{' at ' + bootstrap if bootstrap else ''} "
                                    f"for {give_up_after_s:.0f} s (since {since} UTC)")
