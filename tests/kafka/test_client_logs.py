"""The Kafka clients' logs said once (craps_streams/kafka/client_logs.py): a node that keeps failing
is one warning, not hundreds of ERROR lines; a group still forming is INFO, not ERROR. Records are
logged on aiokafka's and kafka-python's own loggers, with their own message templates, or by a real
kafka-python client."""
from __future__ import annotations

import logging

import pytest

from craps_streams.kafka import client_logs
from craps_streams.kafka.client_logs import QUIET_S, REMIND_S, ClientLogs


class Clock:
    def __init__(self):
        self.now = 1_796_540_000.0

    def __call__(self):
        return self.now


@pytest.fixture
def logs():
    """aiokafka's and kafka-python's loggers with a fresh filter on a fake clock, and the records
    that pass it."""
    clock = Clock()
    f = ClientLogs(clock)
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record)

    handler = Keep(logging.DEBUG)
    loggers = [logging.getLogger(n) for n in client_logs.LOGGERS + client_logs.SYNC_LOGGERS]
    saved = [(lg.level, list(lg.filters)) for lg in loggers]
    for lg in loggers:
        lg.filters = [f]
        lg.setLevel(logging.INFO)
    tops = [logging.getLogger("aiokafka"), logging.getLogger("kafka")]  # the children's records propagate to them
    for top in tops:
        top.addHandler(handler)
    yield clock, f, seen
    for top in tops:
        top.removeHandler(handler)
    for lg, (level, filters) in zip(loggers, saved):
        lg.setLevel(level)
        lg.filters = filters


def unreachable(node=1, error="[Errno 111] Connect call failed ('127.0.0.1', 19093)"):
    # aiokafka/client.py's own line
    logging.getLogger("aiokafka").error("Unable connect to node with id %s: %s", node, error)


def test_a_lost_node_is_one_warning_then_a_reminder_then_a_new_outage(logs):
    clock, f, seen = logs
    for _ in range(357):  # the worker's 357 lines in 12 s of the issue
        unreachable()
        clock.now += 12 / 357
    assert [(r.levelname, r.getMessage().split(" (")[0]) for r in seen] == [("WARNING", "broker node 1 lost at 06:53:20 UTC")]
    assert "the clients retry it and move to its partitions' new leaders" in seen[0].getMessage()
    assert [(n.node, n.attempts) for n in f.lost()] == [("1", 357)]
    unreachable(node=2)  # another node: its own warning
    assert [r.getMessage().split(" lost")[0] for r in seen] == ["broker node 1", "broker node 2"]
    while clock.now < 1_796_540_000.0 + REMIND_S + 20:  # still failing, every second
        clock.now += 1
        unreachable()
    assert len(seen) == 3 and seen[2].levelname == "WARNING"
    assert seen[2].getMessage().startswith("broker node 1 still unreachable since 06:53:20 UTC (")
    clock.now += QUIET_S + 1  # nobody tries it any more: no longer lost
    assert f.lost() == []
    unreachable()  # a new outage
    assert len(seen) == 4 and seen[3].getMessage().startswith("broker node 1 lost at ")


def test_a_group_still_forming_is_info_not_error(logs):
    _, _, seen = logs
    log = logging.getLogger("aiokafka.consumer.group_coordinator")
    log.error("Group Coordinator Request failed: %s", "[Error 15] GroupCoordinatorNotAvailableError: craps-worker")
    log.error("Heartbeat failed: %r", "UnknownMemberIdError")
    assert [(r.levelname, r.getMessage()[:33]) for r in seen] == [
        ("INFO", "Group Coordinator Request failed:"), ("ERROR", "Heartbeat failed: 'UnknownMemberI")]


class Connection:
    """What kafka-python's network lines pass as their first argument (kafka/net/connection.py)."""

    def __init__(self, node_id):
        self.node_id = node_id

    def __str__(self):
        return f"<KafkaConnection node_id={self.node_id} broker_version=(4, 3) (disconnected)>"


def kafka_python_lost(node=2, error="KafkaConnectionError: 111 ECONNREFUSED"):
    """One failed attempt on `node` as kafka-python 3 logs it (a ledger's poll while node 2 is down)."""
    logging.getLogger("kafka.net.manager").error("Connection failed: %s", error)
    logging.getLogger("kafka.net.connection").error("%s: Connection lost: %s", Connection(node), error)
    logging.getLogger("kafka.net.transport").error("%s: socket disconnected", "<KafkaSSLTransport [none]>")
    logging.getLogger("kafka.net.transport").error("%s: Abort (%s)", "<KafkaSSLTransport [none]>",
                                                   "KafkaConnectionError: socket disconnected")
    logging.getLogger("kafka.consumer.fetcher").error("Fetch to node %s failed: %s", node, error)
    logging.getLogger("kafka.cluster").error("Metadata refresh: failed %s", error)


def test_kafka_pythons_lost_node_is_said_once_as_aiokafkas(logs):
    """The ledger's client (kafka-python): six ERROR lines a failed attempt, one WARNING an outage,
    in the same list of lost nodes as the aiokafka clients of the same process."""
    clock, f, seen = logs
    for _ in range(200):
        kafka_python_lost()
        clock.now += 0.125
    assert [(r.name, r.levelname) for r in seen] == [("kafka.net.connection", "WARNING")]
    assert seen[0].getMessage().startswith("broker node 2 lost at 06:53:20 UTC (KafkaConnectionError: 111 ECONNREFUSED): "
                                           "the clients retry it")
    assert [(n.node, n.attempts) for n in f.lost()] == [("2", 400)]  # the connection's line and the fetch's
    unreachable(node=2)  # aiokafka failing on the same node: the same outage, not said again
    logging.getLogger("kafka.net.connection").warning(
        "%s: Request timed out after %d ms. Closing connection.", "<KafkaConnection node_id=3 broker_version=(4, 3) (connected)>",
        5000)  # a node cut off: its own warning
    assert [r.getMessage().split(" lost")[0] for r in seen] == ["broker node 2", "broker node 3"]
    assert seen[1].getMessage().startswith("broker node 3 lost at 06:53:45 UTC (Request timed out after 5000 ms. ")
    clock.now += QUIET_S + 1
    assert f.lost() == []


def test_kafka_pythons_other_lines_pass(logs):
    """Only the lines of a failed node are said once: an error of another kind, a line with no node
    to tell, and the fetcher's INFO about a cancelled fetch pass as they were logged."""
    _, _, seen = logs
    logging.getLogger("kafka.cluster").error("Topic %s is not authorized for this client", "craps.settlements")
    logging.getLogger("kafka.net.connection").error("%s: Connection lost: %s", "<KafkaConnection>", "boom")
    logging.getLogger("kafka.consumer.fetcher").info("Fetch to node %s failed: %s", 1, "Cancelled")
    assert [(r.levelname, r.getMessage()) for r in seen] == [
        ("ERROR", "Topic craps.settlements is not authorized for this client"),
        ("ERROR", "<KafkaConnection>: Connection lost: boom"), ("INFO", "Fetch to node 1 failed: Cancelled")]


def test_a_real_kafka_python_client_refused_says_it_once(logs):
    """A real kafka-python consumer whose only bootstrap server refuses, for 1.5 s: four lines an
    attempt, several attempts a second without the filter; with it, one warning, and the client's
    own giving up."""
    from kafka import KafkaConsumer
    from kafka.errors import KafkaTimeoutError

    from tests.conftest import free_port

    _, f, seen = logs
    with pytest.raises(KafkaTimeoutError):
        KafkaConsumer(bootstrap_servers=f"127.0.0.1:{free_port()}", bootstrap_timeout_ms=1500,
                      reconnect_backoff_max_ms=100, request_timeout_ms=2000, connections_max_idle_ms=60_000)
    [lost] = f.lost()
    assert lost.node == "bootstrap-0" and lost.attempts >= 3, vars(lost)
    assert [(r.levelname, r.getMessage().split(" (")[0].split(":")[0]) for r in seen if r.levelno >= logging.WARNING] == [
        ("WARNING", "broker node bootstrap-0 lost at 06"), ("ERROR", "Bootstrap failed")]


def test_every_clients_settings_install_the_filter():
    from craps_streams.kafka.settings import client_settings

    try:
        client_settings("viewer")
    except Exception:  # no client config here: the filter is installed before the security is read
        pass
    assert all(client_logs._FILTER in logging.getLogger(n).filters
               for n in client_logs.LOGGERS + client_logs.SYNC_LOGGERS)


def test_every_client_notices_a_dead_connection_within_its_timeouts(monkeypatch):
    """The timeouts of craps_streams/kafka/settings.py: a request to a node cut off by the network is
    abandoned 5 s on, not aiokafka's 40 s (about when the controller fences the node, 4-8 s: a retry finds
    its new leaders); metadata at most 5 s old; kafka-python's order fetch wait < request < idle; a
    group member's requests (its heartbeats, its coordinator lookups) are abandoned within its
    session, so it finds a new coordinator in time; the floor view's faust gets the same."""
    from craps_streams.floor.broker import faust_broker_settings
    from craps_streams.kafka import consumers, settings

    monkeypatch.setattr(settings, "security_settings", lambda role: {"security_protocol": "PLAINTEXT"})
    for role in ("controller", "worker", "archive", "audit", "viewer", "floor"):
        s = settings.client_settings(role)
        assert (s["request_timeout_ms"], s["metadata_max_age_ms"], s["connections_max_idle_ms"]) == (5_000, 5_000, 60_000)
        assert 500 < s["request_timeout_ms"] < s["connections_max_idle_ms"]
    import asyncio

    async def made(session_ms):
        return consumers.group_consumer("g", session_timeout_ms=session_ms, heartbeat_interval_ms=session_ms // 5,
                                        max_poll_interval_ms=120_000, bootstrap="127.0.0.1:1")
    for session_ms in (6_000, 10_000, 30_000):
        assert asyncio.run(made(session_ms))._client._request_timeout_ms == 5_000 < session_ms
    # kafka-python's connection setup, which none of its clients takes as a setting, bound the same way.
    from kafka.net.manager import KafkaConnectionManager

    assert (KafkaConnectionManager.DEFAULT_CONFIG["socket_connection_setup_timeout_ms"],
            KafkaConnectionManager.DEFAULT_CONFIG["socket_connection_setup_timeout_max_ms"]) == (5_000, 5_000)
    faust = faust_broker_settings(settings.client_settings("floor"))
    assert faust["broker_request_timeout"] == faust["producer_request_timeout"] == 5.0
