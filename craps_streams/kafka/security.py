"""How a craps-streams Kafka client proves who it is and whom it talks to: TLS + SASL/SCRAM-SHA-512.

Each role (docs/security.md) has one principal and one client config file in the shape Kafka's own
tools read (`kafka-console-consumer --consumer.config`):

    security.protocol=SASL_SSL
    sasl.mechanism=SCRAM-SHA-512
    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="worker" password="...";
    ssl.truststore.type=PEM
    ssl.truststore.location=/path/to/ca.crt

infra/kafka/kafka.sh makes them at the broker's first start in `<secrets dir>/clients/<role>.properties`
(the setting CRAPS_SECRETS_DIR, default `.secrets/` at the repository root, 0700, files 0600,
git-ignored). A deployment that runs one role per process points `CRAPS_KAFKA_CONFIG` at that role's
file instead; it then serves every role the process asks for. Which broker and which files: a
`Broker`, built from the settings by the process's edge and handed over with `use_broker`. `sasl.username` / `sasl.password` (librdkafka's keys) and `ssl.ca.location`
are read too. `security.protocol=PLAINTEXT` is honoured only so the benchmarks can measure what
security costs; nothing in the repository writes such a file for a floor.
"""
from __future__ import annotations

import pathlib
import re
from functools import lru_cache

import msgspec

# The roles of craps_streams/kafka/settings.py; each has its own principal (docs/security.md).
ROLES = ("controller", "worker", "archive", "audit", "viewer", "floor", "ledger", "admin")
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"

_JAAS_FIELD = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


class SecurityConfigError(RuntimeError):
    """A role's client config is missing or unusable: the client would not get in, so say why now."""


class Broker(msgspec.Struct, frozen=True):
    """Where this process's Kafka clients connect, and the files they log in with (the settings
    CRAPS_KAFKA_BOOTSTRAP, CRAPS_SECRETS_DIR, CRAPS_KAFKA_CONFIG)."""

    bootstrap: str = DEFAULT_BOOTSTRAP
    secrets_dir: pathlib.Path = pathlib.Path(".secrets")  # the current directory's (the settings' default)
    client_config: pathlib.Path | None = None  # one file for every role


# The process's broker: its edge (the CLI's main, a service's start) hands it over once, from the
# settings, before any client is made; every client of the process connects there.
_broker = [Broker()]


def use_broker(broker: Broker) -> None:
    """Connect every Kafka client of this process to `broker` (called by the edge only)."""
    _broker[0] = broker


def current_broker() -> Broker:
    return _broker[0]


def config_path(role: str) -> pathlib.Path:
    """The client config file a client of `role` uses."""
    if role not in ROLES:
        raise ValueError(f"unknown Kafka role {role!r}; one of {', '.join(ROLES)}")
    broker = current_broker()
    return broker.client_config or broker.secrets_dir / "clients" / f"{role}.properties"


def read_properties(path: pathlib.Path) -> dict[str, str]:
    """A Java .properties file's key=value pairs (comments and blank lines skipped)."""
    props: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if sep:
            props[key.strip()] = value.strip()
    return props


def security_settings(role: str) -> dict:
    """aiokafka / kafka-python keyword arguments that log `role` in over TLS with SCRAM-SHA-512.

    Raises SecurityConfigError when the role has no usable client config: a client that cannot log
    in would otherwise wait out its request timeout before saying anything."""
    path = config_path(role)
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        raise SecurityConfigError(
            f"no Kafka client config for role {role!r} at {path}: start the broker with "
            f"`infra/kafka/kafka.sh up` (it makes them), or set CRAPS_KAFKA_CONFIG") from None
    return dict(_settings_of(str(path), mtime))


@lru_cache(maxsize=32)
def _settings_of(path: str, _mtime: int) -> tuple:
    props = read_properties(pathlib.Path(path))
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol == "PLAINTEXT":
        return (("security_protocol", "PLAINTEXT"),)
    if protocol != "SASL_SSL":
        raise SecurityConfigError(f"{path}: security.protocol={protocol} is not supported (SASL_SSL)")
    mechanism = props.get("sasl.mechanism", "SCRAM-SHA-512").upper()
    if mechanism not in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
        raise SecurityConfigError(f"{path}: sasl.mechanism={mechanism} is not supported (SCRAM-SHA-512)")
    jaas = {k: v.replace('\\"', '"') for k, v in _JAAS_FIELD.findall(props.get("sasl.jaas.config", ""))}
    username = props.get("sasl.username") or jaas.get("username")
    password = props.get("sasl.password") or jaas.get("password")
    if not username or not password:
        raise SecurityConfigError(f"{path}: no username/password (sasl.jaas.config or sasl.username/sasl.password)")
    cafile = props.get("ssl.truststore.location") or props.get("ssl.ca.location")
    if not cafile:
        raise SecurityConfigError(f"{path}: no CA (ssl.truststore.location, PEM)")
    if props.get("ssl.truststore.type", "PEM").upper() != "PEM":
        raise SecurityConfigError(f"{path}: ssl.truststore.type must be PEM for Python clients")
    cafile = str((pathlib.Path(path).parent / cafile).resolve()) if not pathlib.Path(cafile).is_absolute() else cafile
    import ssl  # here, not at the top: every command reads the settings, which name a Broker; few connect

    context = ssl.create_default_context(cafile=cafile)  # verifies the chain and the host name (SAN)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if props.get("ssl.endpoint.identification.algorithm", "https") == "":
        context.check_hostname = False  # Kafka's way to turn host name checks off; never written by us
    return (("security_protocol", "SASL_SSL"), ("sasl_mechanism", mechanism),
            ("sasl_plain_username", username), ("sasl_plain_password", password),
            ("ssl_context", context))

