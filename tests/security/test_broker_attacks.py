"""Attacks on the real broker: each is refused, and nothing is written.

Every attack runs on a floor of its own (topic prefix, app id, ACLs granted by the administrator as
craps_streams.topics does for any floor). "Nothing written" is checked by the administrator: the floor's
topics, their end offsets (read_uncommitted: even an aborted write would move them) and the broker's
ACLs are the same after the attack as before. Each refusal has a control beside it: the same client
with the right credentials, role or CA gets through, so a refusal for another reason (a broker that
is down) cannot pass for a security check.

Clients that cannot log in do not fail fast (they retry until their timeout): timeouts are short here.
"""
from __future__ import annotations

import asyncio
import socket
import ssl
import subprocess
import threading

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import (KafkaError, KafkaTimeoutError, TopicAuthorizationFailedError,
                          TransactionalIdAuthorizationFailedError)

from craps_streams.codec import encode_event
from craps_streams.kafka.access import admin_client, current_acls
from craps_streams.kafka.security import security_settings
from craps_streams.sim.floor import floor_events

pytestmark = pytest.mark.kafka

FAST = dict(bootstrap_timeout_ms=3000, request_timeout_ms=3000, reconnect_backoff_max_ms=300)
OUR_TOPICS = ("table-events", "settlements", "layout-markers", "surveillance", "rejections", "table-state")
# What a client that cannot get in raises (kafka-python waits for a broker it can talk to, then gives up).
NOT_IN = (KafkaTimeoutError,)


class refused_by_acl:
    """`with refused_by_acl():` the block fails with an authorization error of the broker (topic,
    cluster or transactional id), not a timeout or any other failure."""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        assert error is not None, "the broker let it through"
        assert isinstance(error, KafkaError) and "AuthorizationFailed" in f"{type(error).__name__} {error}", \
            f"failed, but not by an ACL: {error!r}"
        return True


def a_dice_throw() -> tuple[bytes, bytes]:
    record = next(r for r in floor_events(1, 1.0, 7) if type(r) is dict and r["type"] == "DiceThrown")
    return record["table_id"].encode(), encode_event(record)


class Floor:
    """What the administrator sees of a floor: its topics, their end offsets, the ACLs that could open it."""

    def __init__(self, pipeline):
        self.p = pipeline
        self.admin = admin_client(pipeline.bootstrap)

    def topic(self, name: str) -> str:
        return self.p.prefix + name

    def snapshot(self) -> dict:
        topics = sorted(t for t in self.admin.list_topics() if t.startswith(self.p.prefix))
        c = KafkaConsumer(bootstrap_servers=self.p.bootstrap, group_id=None, isolation_level="read_uncommitted",
                          **security_settings("admin"))
        try:
            tps = [TopicPartition(t, p) for t in topics for p in sorted(c.partitions_for_topic(t) or ())]
            ends = {f"{tp.topic}/{tp.partition}": o for tp, o in c.end_offsets(tps).items()}
        finally:
            c.close()
        # The ACLs that could open this floor: those naming its resources, wildcards, the cluster.
        # (Other floors provisioned meanwhile on a shared broker add theirs: not this test's business.)
        acls = sorted(str(a) for a in current_acls(self.admin)
                      if a.resource_pattern.resource_name.startswith(self.p.prefix)
                      or a.resource_pattern.resource_name in ("*", self.p.app_id, self.p.app_id + "-")
                      or a.resource_pattern.resource_type.name == "CLUSTER")
        return {"topics": topics, "end_offsets": ends, "acls": acls}

    def produce(self, settings: dict, topic: str, key: bytes, value: bytes) -> None:
        producer = KafkaProducer(bootstrap_servers=self.p.bootstrap, max_block_ms=3000, **FAST, **settings)
        try:
            producer.send(self.topic(topic), key=key, value=value).get(timeout=10)
        finally:
            producer.close(timeout=2)

    def close(self) -> None:
        self.admin.close()


@pytest.fixture
def floor(pipeline):
    f = Floor(pipeline)
    yield f
    f.close()


def with_(role: str, **changes) -> dict:
    return {**security_settings(role), **changes}


def test_no_credentials_wrong_password_and_plaintext_are_refused(floor):
    key, throw = a_dice_throw()
    ca = security_settings("controller")["ssl_context"]
    before = floor.snapshot()
    attempts = {
        "no credentials (TLS, no SASL login)": dict(security_protocol="SSL", ssl_context=ca),
        "a wrong password": with_("controller", sasl_plain_password="not-the-password"),
        "another role's name with this role's password": with_("controller", sasl_plain_username="worker"),
        "plaintext to the TLS port": dict(security_protocol="PLAINTEXT"),
        "SASL without TLS": with_("controller", security_protocol="SASL_PLAINTEXT", ssl_context=None),
    }
    for what, settings in attempts.items():
        with pytest.raises(NOT_IN):
            floor.produce(settings, "table-events", key, throw)
    assert floor.snapshot() == before, "a refused client wrote something"
    # Control: the table controller with its own login gets the same throw in.
    floor.produce(security_settings("controller"), "table-events", key, throw)
    assert floor.snapshot()["end_offsets"] != before["end_offsets"]


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def self_signed(tmp_path, name: str) -> tuple[str, str]:
    """A certificate for 127.0.0.1 from a CA that is not the floor's (an impostor's)."""
    key, crt = tmp_path / f"{name}.key", tmp_path / f"{name}.crt"
    _openssl("req", "-x509", "-new", "-newkey", "rsa:2048", "-noenc", "-keyout", str(key), "-out", str(crt),
             "-days", "2", "-subj", f"/CN={name}", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost")
    return str(key), str(crt)


def test_a_client_trusting_another_ca_is_refused(floor, tmp_path):
    """The client does not trust the broker's certificate (a different CA): no connection at all."""
    _, other_ca = self_signed(tmp_path, "other-ca")
    key, throw = a_dice_throw()
    before = floor.snapshot()
    with pytest.raises(NOT_IN):
        floor.produce(with_("controller", ssl_context=ssl.create_default_context(cafile=other_ca)),
                      "table-events", key, throw)
    assert floor.snapshot() == before


def test_a_broker_with_an_untrusted_certificate_never_gets_the_password(tmp_path):
    """An impostor broker (a certificate not signed by the floor's CA) on a port the worker is sent
    to: the TLS handshake fails on the client's side, before any SASL byte (the password's proof)."""
    key, crt = self_signed(tmp_path, "impostor")
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(crt, key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    seen = {"handshakes": 0, "connections": 0, "bytes": b""}

    def impostor():
        listener.settimeout(0.5)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            seen["connections"] += 1
            try:
                with server_ctx.wrap_socket(conn, server_side=True) as tls:
                    seen["handshakes"] += 1
                    tls.settimeout(1)
                    seen["bytes"] += tls.recv(65536)
            except OSError:  # the client aborts the handshake: it does not trust this certificate
                pass

    stop = threading.Event()
    thread = threading.Thread(target=impostor, daemon=True)
    thread.start()
    try:
        with pytest.raises(NOT_IN):
            KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", max_block_ms=3000, **FAST,
                          **security_settings("worker"))
    finally:
        stop.set()
        thread.join(5)
        listener.close()
    assert seen["connections"] >= 1, "the client never tried the impostor: the test proves nothing"
    assert seen["handshakes"] == 0 and seen["bytes"] == b""


def test_a_table_controller_cannot_read_settlements(floor):
    floor.produce(security_settings("worker"), "settlements", b"T001", b"a settlement")
    before = floor.snapshot()
    tps = [TopicPartition(floor.topic("settlements"), p) for p in range(8)]

    def read_as(role: str) -> int:
        c = KafkaConsumer(bootstrap_servers=floor.p.bootstrap, group_id=None, **FAST, **security_settings(role))
        try:
            c.assign(tps)
            c.seek_to_beginning(*tps)
            return sum(len(v) for _ in range(4) for v in c.poll(timeout_ms=750).values())
        finally:
            c.close()

    c = KafkaConsumer(bootstrap_servers=floor.p.bootstrap, group_id=None, **FAST,
                      **security_settings("controller"))
    try:
        assert not c.partitions_for_topic(floor.topic("settlements")), "the topic is even visible to it"
        with pytest.raises(TopicAuthorizationFailedError):
            c.end_offsets(tps)
    finally:
        c.close()
    assert read_as("controller") == 0
    assert read_as("viewer") == 1  # control: a viewer reads the settlement the controller could not
    assert floor.snapshot() == before


def test_a_viewer_cannot_produce_a_dice_throw(floor):
    key, throw = a_dice_throw()
    before = floor.snapshot()
    for role in ("viewer", "archive", "audit", "floor", "worker"):
        # A producer is idempotent by default: a principal that may write no topic at all is
        # refused its producer id (ClusterAuthorizationFailed), one that may write others the topic.
        with refused_by_acl():
            floor.produce(security_settings(role), "table-events", key, throw)
    # Nor a forged settlement, nor a table state.
    for role, topic in (("viewer", "settlements"), ("controller", "settlements"),
                        ("controller", "table-state"), ("audit", "settlements")):
        with refused_by_acl():
            floor.produce(security_settings(role), topic, key, b"forged")
    assert floor.snapshot() == before


def test_a_worker_cannot_create_or_delete_topics_or_grant_itself_acls(floor):
    from kafka.admin import (ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient,
                             ResourcePattern, ResourceType)

    floor.produce(security_settings("controller"), "table-events", *a_dice_throw())
    before = floor.snapshot()
    for role in ("worker", "controller", "viewer", "floor"):
        attacker = KafkaAdminClient(bootstrap_servers=floor.p.bootstrap, **FAST, **security_settings(role))
        try:
            with pytest.raises(TopicAuthorizationFailedError):
                attacker.create_topics([NewTopic(floor.topic("settlements-copy"), 1, 1)])
            with pytest.raises(TopicAuthorizationFailedError):
                attacker.delete_topics([floor.topic("table-events")])
            with pytest.raises(KafkaError):
                result = attacker.create_acls([ACL(
                    "User:worker", "*", ACLOperation.ALL, ACLPermissionType.ALLOW,
                    ResourcePattern(ResourceType.TOPIC, "*", ACLResourcePatternType.LITERAL))])
                if result.get("failed"):
                    raise KafkaError(str(result["failed"]))
        finally:
            attacker.close()
    assert floor.snapshot() == before


def test_only_the_worker_uses_its_transactional_ids(floor):
    app_id = floor.p.app_id
    before = floor.snapshot()
    for role in ("controller", "viewer", "archive", "audit", "floor"):
        producer = KafkaProducer(bootstrap_servers=floor.p.bootstrap, transactional_id=f"{app_id}-0",
                                 max_block_ms=5000, **FAST, **security_settings(role))
        try:
            with pytest.raises(TransactionalIdAuthorizationFailedError):
                producer.init_transactions()
        finally:
            producer.close(timeout=2)
    # The worker principal outside its own application's prefix: refused too (aiokafka, as the worker runs).
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import TransactionalIdAuthorizationFailed

    async def start(transactional_id: str) -> None:
        p = AIOKafkaProducer(bootstrap_servers=floor.p.bootstrap, transactional_id=transactional_id,
                             request_timeout_ms=5000, **security_settings("worker"))
        try:
            await p.start()
            await p.begin_transaction()
            await p.send_and_wait(floor.topic("settlements"), b"txn", key=b"T001")
            await p.abort_transaction()  # the control writes nothing committed
        finally:
            await p.stop()

    with pytest.raises(TransactionalIdAuthorizationFailed):
        asyncio.run(start(f"another-floor-{app_id}-0"))
    assert floor.snapshot() == before
    asyncio.run(start(f"{app_id}-0"))  # control: the worker itself may
    after = floor.snapshot()
    assert after["end_offsets"] != before["end_offsets"]  # its aborted record and marker
