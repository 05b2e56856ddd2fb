"""What went wrong between a command and the broker, in the operator's terms.

Two kinds the command line answers with a line and an exit code of their own (docs/operating/cli.md):

    BrokerUnreachable   nothing answers at the bootstrap servers, or the broker stopped answering
    BrokerRefused       the broker answered, and refused: the login (SASL/SCRAM), the TLS
                        handshake, or the role's rights (ACLs)

`preflight(role)` finds either before a command starts its work, in well under a second: a TCP
connection to the bootstrap servers (a closed port answers at once, where kafka-python's bootstrap
retries for 30 s), then one login as the role.
`broker_problem(exc)` names the kind of an exception raised later by either client library.
"""
from __future__ import annotations

import logging
import socket

from craps_streams.kafka.security import config_path
from craps_streams.kafka.settings import client_settings

CONNECT_TIMEOUT_S = 3.0
LOGIN_TIMEOUT_S = 10.0


class BrokerUnreachable(ConnectionError):
    """No broker answers at the bootstrap servers, or it stopped answering."""


class BrokerRefused(PermissionError):
    """The broker refused the client: its login, the TLS handshake, or the role's rights."""


def servers_of(bootstrap: str) -> list[tuple[str, int]]:
    out = []
    for hp in bootstrap.split(","):
        host, sep, port = hp.strip().rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"bootstrap server {hp.strip()!r} is not host:port")
        out.append((host.strip("[]"), int(port)))
    return out


def _connect(servers: list[tuple[str, int]], timeout_s: float) -> None:
    reasons = []
    for host, port in servers:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return
        except OSError as e:
            reasons.append(f"{host}:{port}: {e.strerror or type(e).__name__}")
    raise BrokerUnreachable("no Kafka broker answers at " + "; ".join(reasons))


class _LoginWatch(logging.Handler):
    """Keeps the client's log line that says why a bootstrap connection failed."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.failures: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a log record that does not format is not ours to judge
            return
        if record.levelno >= logging.ERROR and message.startswith("Unable connect to"):
            self.failures.append(message)


_REFUSALS = (("SaslAuthentication", "the broker refused the login"),
             ("AuthenticationFailed", "the broker refused the login"),
             ("CERTIFICATE_VERIFY_FAILED", "the broker's TLS certificate is not signed by the client config's CA"),
             ("SSL", "the TLS handshake with the broker failed"))


def preflight(role: str, bootstrap: str | None = None, *, connect_timeout_s: float = CONNECT_TIMEOUT_S,
              login_timeout_s: float = LOGIN_TIMEOUT_S) -> None:
    """Raise BrokerUnreachable or BrokerRefused when a client of `role` cannot get in; return when
    it can. SecurityConfigError when the role has no usable client config.

    The login is aiokafka's bootstrap: it tries each server once and logs why one failed (a
    refused SASL login, a TLS certificate), where kafka-python retries until its 30 s bootstrap
    timeout and often hears only the closed socket."""
    settings = client_settings(role, bootstrap)
    servers = servers_of(settings["bootstrap_servers"])
    _connect(servers, connect_timeout_s)
    import asyncio

    from aiokafka.client import AIOKafkaClient

    async def login() -> None:
        client = AIOKafkaClient(**settings, client_id=f"craps-{role}-preflight")
        try:
            await asyncio.wait_for(client.bootstrap(), login_timeout_s)
        finally:
            await client.close()

    watch = _LoginWatch()
    logger = logging.getLogger("aiokafka")
    level, propagate = logger.level, logger.propagate
    logger.addHandler(watch)
    logger.propagate = False  # the reason is told once, by the caller
    if logger.getEffectiveLevel() > logging.ERROR:
        logger.setLevel(logging.ERROR)
    try:
        asyncio.run(login())
    except Exception as e:  # noqa: BLE001 - judged by what the client logged
        said = " ".join(watch.failures) or f"{type(e).__name__}: {e}"
        for mark, meaning in _REFUSALS:
            if mark in said:
                reason = said.split(": ", 1)[-1]
                raise BrokerRefused(f"{meaning} of role {role!r} at {settings['bootstrap_servers']} ({reason}); "
                                    f"client config {config_path(role)}") from None
        raise BrokerUnreachable(f"the broker at {settings['bootstrap_servers']} accepts connections but no "
                                f"Kafka client gets in ({said})") from None
    finally:
        logger.removeHandler(watch)
        logger.setLevel(level)
        logger.propagate = propagate


_REFUSED_LOGIN = ("SaslAuthenticationFailed", "AuthenticationFailed", "SaslAuthenticationFailedError",
                  "UnsupportedSaslMechanism", "IllegalSaslState", "SSLError", "SSLCertVerificationError")
_UNREACHABLE = ("NoBrokersAvailable", "KafkaConnectionError", "NodeNotReadyError", "KafkaTimeoutError",
                "RequestTimedOutError", "BrokerNotAvailableError", "ConnectionRefusedError")


def broker_problem(exc: BaseException) -> BrokerUnreachable | BrokerRefused | None:
    """The kind of `exc` (or of an exception it was raised from), raised by aiokafka or
    kafka-python, or None when it is no broker problem."""
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, (BrokerUnreachable, BrokerRefused)):
            return e
        name = type(e).__name__
        module = type(e).__module__ or ""
        if "AuthorizationFailed" in name:
            resource = name.replace("AuthorizationFailedError", "").replace("AuthorizationFailed", "").lower()
            return BrokerRefused(f"the broker's ACLs refuse this role the {resource or 'operation'} "
                                 f"({e}); the floor's grants are made by `craps-streams topics` as the administrator")
        if name in _REFUSED_LOGIN and (module.startswith(("kafka", "aiokafka", "ssl"))):
            return BrokerRefused(f"the broker refused the login ({e})")
        if name in _UNREACHABLE and module.startswith(("kafka", "aiokafka", "builtins")):
            return BrokerUnreachable(f"the broker does not answer ({e})")
        e = e.__cause__ or e.__context__
    return None
