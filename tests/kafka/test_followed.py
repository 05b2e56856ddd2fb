"""`followed` (the tail's loop) when every node of a cluster is gone at once: kafka-python's poll
raises (its metadata refresh refused by each node) instead of returning nothing. The broker is
waited for as when the poll returns nothing: said after `say_after_s`, given up (BrokerUnreachable,
exit 5) only after `give_up_after_s`, never at the first refusal. Pure: a consumer double whose
poll raises as kafka-python's did in tests/faults/test_lost_broker.py."""
from __future__ import annotations

import pytest
from kafka.errors import KafkaConnectionError

from craps_streams.kafka.followers import followed
from craps_streams.kafka.errors import BrokerUnreachable


class _Client:
    class cluster:  # noqa: N801 - kafka-python's attribute name
        @staticmethod
        def brokers():
            return []

    def connected(self, node_id):
        return False

    def bootstrap_connected(self):
        return False


class GoneCluster:
    _client = _Client()

    def __init__(self):
        self.polls = 0

    def poll(self, timeout_ms):
        self.polls += 1
        raise KafkaConnectionError("111 ECONNREFUSED")


def test_a_cluster_gone_at_once_is_waited_for_then_given_up():
    consumer, said, now = GoneCluster(), [], [0.0]

    def clock():
        now[0] += 1.5
        return now[0]

    with pytest.raises(BrokerUnreachable, match="for 6 s"):
        list(followed(consumer, said.append, "127.0.0.1:1,127.0.0.1:2", say_after_s=3, give_up_after_s=6,
                      clock=clock, wall=lambda: 0.0))
    assert consumer.polls >= 4  # it kept polling through the wait
    assert len(said) == 1 and said[0].startswith("no Kafka broker answers at 127.0.0.1:1,127.0.0.1:2 since ")
