"""Every Kafka client's settings, built in one place: `client_settings(role)`.

A role names who the client acts for; it is the unit a secured broker grants rights to (one
principal per role), so every call site passes its role even while the settings of the roles
are the same:

    controller  feeds table events in (`controller`, `produce`, `simulate --live`); reads them back
                for a new host's seed (`controller seed`)
    worker      the settling worker: consumes table events, writes outputs transactionally
    archive     copies the table-events topic into Avro container files
    audit       reads history and recorded settlements back (`replay --from-topic`, `audit`)
    viewer      read-only followers of the outputs (`tail`, dashboards)
    floor       the floor-wide view (faust, craps_streams/floor)
    ledger      finance's ledger: reads the outputs into SQL (craps_streams/ledger)
    admin       topic creation and description

The keys are the keyword arguments aiokafka and kafka-python share (bootstrap_servers,
client_id, request_timeout_ms, retry_backoff_ms, and the security keys), so one dict serves
either library. The security keys (TLS + SASL/SCRAM-SHA-512 as the role's principal) come from
the role's client config file: craps_streams/kafka/security.py.

The bootstrap servers and the client config files are the process's `Broker` (security.py), handed
over by its edge from the settings (CRAPS_KAFKA_BOOTSTRAP, craps_streams/settings.py).

Timeouts (every role but admin, `CLIENT_TIMEOUTS`): a broker killed -9 resets its TCP connections
at once, so its clients notice in milliseconds; a node cut off by the network sends nothing back,
and a request in flight to it, or a connection being made to it, waits out `request_timeout_ms`
before the client gives it up, refreshes its metadata and finds the new leader or coordinator. The
cluster fences a node that stopped heartbeating after 4 s (`broker.session.timeout.ms`,
infra/kafka/server.properties; 6-8 s in the drills when the node lost was the active controller,
which the quorum replaces first) and moves its leaderships; the clients are set to follow as fast
(and the transactional producers drop a cached coordinator the metadata no longer lists,
producers.py):

    request_timeout_ms        5,000  a request to the cut node (a produce, a fetch, a transaction's
                                     or the group's coordinator call, a metadata or coordinator
                                     lookup sent to it) is abandoned about when the node is fenced;
                                     the retry goes to the new leader. Also a group member's (the
                                     worker's consumer, craps_streams/kafka/consumers.py): its
                                     heartbeat to a cut-off coordinator and its lookups fail well
                                     within its session (10 s), so it reaches the new coordinator
                                     while its membership still holds there, with no rebalance.
                                     Margin: the slowest requests of a normal floor are a transaction's
                                     writes acknowledged by two nodes, 0.3 s at the p99 on the
                                     loaded 2-core cluster (docs/reliability/cluster.md), over 15
                                     times less
    metadata_max_age_ms       5,000  a client that sends nothing to the cut node (a producer with
                                     nothing for its partitions yet) still learns the new leaders
                                     within seconds of the move
    connections_max_idle_ms  60,000  above the request timeout (kafka-python requires it)

kafka-python (the worker's changelog reads at a takeover, the feed, the ledger, the readers) gives a
connection being made 10 s, doubled on every failure to the same node up to 30 s, whatever the
request timeout, and none of its clients lets a caller set it (KafkaConnectionManager's
`socket_connection_setup_timeout_ms`): a takeover during a network cut read its table states for
20.8 s, until the heal, its reader trying the cut node. `client_settings` sets kafka-python's
default to the request timeout, 5 s (`CONNECT_TIMEOUT_MS`), for every client of the process.

aiokafka's defaults (40 s request timeout, metadata 5 minutes old at most, idle connections kept 9
minutes) made a 30 s cut stop the floor for 41 s; these settle it again within 15 s
(docs/reliability/cluster.md, the partition drill).
"""
from __future__ import annotations

import sys

from craps_streams.kafka import client_logs
from craps_streams.kafka.security import DEFAULT_BOOTSTRAP, ROLES, Broker, current_broker, security_settings, use_broker

__all__ = ["DEFAULT_BOOTSTRAP", "Broker", "broker_urls", "client_settings", "default_bootstrap", "sasl_credentials",
           "use_broker"]


def default_bootstrap() -> str:
    """The process's bootstrap servers ("host:port[,...]")."""
    return current_broker().bootstrap


def broker_urls(role: str, bootstrap: str | None = None) -> list[str]:
    """The bootstrap servers as faust broker URLs (["kafka://host:port", ...])."""
    servers = client_settings(role, bootstrap)["bootstrap_servers"]
    return [f"kafka://{hp.strip()}" for hp in servers.split(",") if hp.strip()]


def sasl_credentials(role: str) -> dict | None:
    """Keyword arguments of faust.SASLCredentials for `role` (username, password, ssl_context,
    mechanism), None on a plaintext bench broker. The caller builds the faust object: faust is
    imported only by the faust side (import-linter)."""
    s = security_settings(role)
    if s["security_protocol"] == "PLAINTEXT":
        return None
    return {"username": s["sasl_plain_username"], "password": s["sasl_plain_password"],
            "ssl_context": s["ssl_context"], "mechanism": s["sasl_mechanism"]}


CLIENT_TIMEOUTS = {"request_timeout_ms": 5_000, "metadata_max_age_ms": 5_000, "connections_max_idle_ms": 60_000}
CONNECT_TIMEOUT_MS = 5_000


def _bound_kafka_python_connects() -> None:
    """kafka-python's connection setup timeout, first and after failures: the module docstring.
    Only where kafka-python is loaded: its clients are made by modules that import it first, and a
    process that reads through aiokafka alone (the ledger) need not pay its import."""
    if "kafka" not in sys.modules:
        return
    from kafka.net.manager import KafkaConnectionManager

    KafkaConnectionManager.DEFAULT_CONFIG.update(socket_connection_setup_timeout_ms=CONNECT_TIMEOUT_MS,
                                                 socket_connection_setup_timeout_max_ms=CONNECT_TIMEOUT_MS)


def _role_settings(role: str) -> dict:
    if role == "admin":
        return {"request_timeout_ms": 15_000}
    return dict(CLIENT_TIMEOUTS)


def client_settings(role: str, bootstrap: str | None = None) -> dict:
    """Keyword arguments for any aiokafka or kafka-python client acting for `role`.

    `bootstrap` overrides the process's servers (a --bootstrap option, a test's broker).
    Call sites add what is particular to one client (group, isolation level, transactional id).
    """
    if role not in ROLES:
        raise ValueError(f"unknown Kafka client role {role!r}; one of {', '.join(ROLES)}")
    client_logs.install()  # the clients' logs said once and in the operator's words (client_logs.py)
    _bound_kafka_python_connects()
    # The broker's security (TLS, SASL/SCRAM per role) is merged here, and only here.
    return {"bootstrap_servers": bootstrap or default_bootstrap(), **_role_settings(role),
            **security_settings(role)}
