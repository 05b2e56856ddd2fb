"""Kafka topic names and configs for craps-streams, in one place.

    python -m streams.topics            # create missing topics, print what exists
    python -m streams.topics --list     # only print

Only the standard library and kafka-python are imported here, so this module can
be used from tests, CI scripts and the worker alike.

Creating a floor's topics is the administrator's job (the `admin` role: streams/kafka/security.py),
and so is granting the floor's ACLs to the roles (streams/kafka/access.py), done here with them.

Environment:
    CRAPS_KAFKA_BOOTSTRAP      bootstrap servers, "host:port[,host:port]" (default 127.0.0.1:9092)
    CRAPS_TOPIC_PREFIX         the floor's topic prefix (default "craps.")
    CRAPS_APP_ID               the floor's worker group / transactional id prefix (default craps-streams)
    CRAPS_REPLICATION_FACTOR   replication factor for new topics (default 1)
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
BOOTSTRAP_ENV = "CRAPS_KAFKA_BOOTSTRAP"
REPLICATION_FACTOR_ENV = "CRAPS_REPLICATION_FACTOR"

# Topic names. CRAPS_TOPIC_PREFIX (default "craps.") lets tests and benchmarks run on topics of
# their own beside a live floor on the same broker.
TOPIC_PREFIX = os.environ.get("CRAPS_TOPIC_PREFIX", "craps.")
# The settling workers' group id and transactional id prefix.
APP_ID = os.environ.get("CRAPS_APP_ID", "craps-streams")
TABLE_EVENTS = TOPIC_PREFIX + "table-events"
SETTLEMENTS = TOPIC_PREFIX + "settlements"
LAYOUT_MARKERS = TOPIC_PREFIX + "layout-markers"
SURVEILLANCE = TOPIC_PREFIX + "surveillance"
REJECTIONS = TOPIC_PREFIX + "rejections"
# The state of every table, the worker's changelog: compacted, one record per table kept.
TABLE_STATE = TOPIC_PREFIX + "table-state"

PARTITIONS = 8
RETAIN_FOREVER_MS = -1
SEVEN_DAYS_MS = 7 * 24 * 60 * 60 * 1000


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)


def _delete_policy(retention_ms: int) -> Dict[str, str]:
    return {"cleanup.policy": "delete", "retention.ms": str(retention_ms)}


TOPICS: Dict[str, TopicSpec] = {
    spec.name: spec
    for spec in (
        # Audit history of everything that happened at the table: kept forever.
        TopicSpec(TABLE_EVENTS, PARTITIONS, _delete_policy(RETAIN_FOREVER_MS)),
        TopicSpec(SETTLEMENTS, PARTITIONS, _delete_policy(RETAIN_FOREVER_MS)),
        TopicSpec(LAYOUT_MARKERS, PARTITIONS, _delete_policy(SEVEN_DAYS_MS)),
        TopicSpec(SURVEILLANCE, PARTITIONS, _delete_policy(RETAIN_FOREVER_MS)),
        TopicSpec(REJECTIONS, PARTITIONS, _delete_policy(RETAIN_FOREVER_MS)),
        TopicSpec(TABLE_STATE, PARTITIONS, {"cleanup.policy": "compact", "min.compaction.lag.ms": "60000"}),
    )
}


def default_bootstrap() -> str:
    """Bootstrap servers for kafka-python / aiokafka ("host:port[,...]")."""
    return os.environ.get(BOOTSTRAP_ENV) or DEFAULT_BOOTSTRAP


def replication_factor() -> int:
    raw = os.environ.get(REPLICATION_FACTOR_ENV, "1")
    try:
        rf = int(raw)
    except ValueError:
        raise ValueError(f"{REPLICATION_FACTOR_ENV} must be an integer, got {raw!r}") from None
    if rf < 1:
        raise ValueError(f"{REPLICATION_FACTOR_ENV} must be >= 1, got {rf}")
    return rf


# --- kafka-python helpers (work with kafka-python 2.x and 3.x result shapes) ---


def _admin(bootstrap: str, timeout_s: float):
    from streams.kafka.access import admin_client

    return admin_client(bootstrap, timeout_s, client_id="craps-streams-topics")


def _describe(admin, names: List[str]) -> Dict[str, dict]:
    """name -> {"partitions": n, "leaders_ok": bool} for the topics that exist."""
    out: Dict[str, dict] = {}
    if not names:
        return out
    for t in admin.describe_topics(names):
        name = t.get("name", t.get("topic"))
        if t.get("error_code", 0) != 0 or name is None:
            continue
        parts = t.get("partitions") or []
        leaders_ok = bool(parts) and all(
            p.get("error_code", 0) == 0 and p.get("leader_id", p.get("leader", -1)) >= 0 for p in parts
        )
        out[name] = {"partitions": len(parts), "leaders_ok": leaders_ok}
    return out


def _topic_configs(admin, names: List[str]) -> Dict[str, Dict[str, str]]:
    """Best effort: name -> {config: value}; {} if the client's result shape is unknown."""
    from kafka.admin import ConfigResource, ConfigResourceType

    if not names:
        return {}
    try:
        res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n) for n in names])
    except Exception:
        return {}
    out: Dict[str, Dict[str, str]] = {}
    if isinstance(res, dict):  # kafka-python 3.x: {"topic": {name: {key: {"value": ...}}}}
        for name, entries in (res.get("topic") or {}).items():
            out[name] = {k: (v.get("value") if isinstance(v, dict) else v) for k, v in entries.items()}
        return out
    for resp in res or []:  # kafka-python 2.x: DescribeConfigsResponse objects
        for resource in getattr(resp, "resources", []):
            _err, _msg, _rtype, rname, entries = resource[:5]
            out[rname] = {e[0]: e[1] for e in entries}
    return out


def create_topics(
    bootstrap: Optional[str] = None,
    topics: Optional[Mapping[str, TopicSpec]] = None,
    timeout_s: float = 30.0,
    grant: bool = True,
) -> Dict[str, str]:
    """Idempotently create the pipeline topics, and grant the floor's ACLs (TOPIC_PREFIX, APP_ID)
    to the roles (streams/kafka/access.py) unless `grant` is false.

    Returns {topic: "created" | "exists"}. Waits until every topic has a leader
    for all partitions and the ACLs are in force, so clients can be used right after this returns.
    Existing topics are left alone (their partition count / configs are not changed).
    """
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    bootstrap = bootstrap or default_bootstrap()
    specs = dict(topics if topics is not None else TOPICS)
    rf = replication_factor()
    admin = _admin(bootstrap, timeout_s)
    try:
        existing = set(admin.list_topics())
        result: Dict[str, str] = {}
        for spec in specs.values():
            if spec.name in existing:
                result[spec.name] = "exists"
                continue
            try:
                # NewTopic is deprecated in kafka-python 3.x but still accepted, and it is
                # the only form kafka-python 2.x understands.
                admin.create_topics(
                    [NewTopic(spec.name, spec.partitions, rf, topic_configs=dict(spec.configs))],
                    timeout_ms=int(timeout_s * 1000),
                )
                result[spec.name] = "created"
            except TopicAlreadyExistsError:  # lost a race with another creator
                result[spec.name] = "exists"

        deadline = time.monotonic() + timeout_s
        while True:
            described = _describe(admin, list(specs))
            missing = [n for n in specs if not described.get(n, {}).get("leaders_ok")]
            if not missing:
                break
            if time.monotonic() >= deadline:
                raise TimeoutError(f"topics not ready after {timeout_s}s: {missing}")
            time.sleep(0.2)
        if grant and _secured():
            from streams.kafka.access import grant_floor

            grant_floor(admin, TOPIC_PREFIX, APP_ID)
        return result
    finally:
        admin.close()


def _secured() -> bool:
    from streams.kafka.security import security_settings

    return security_settings("admin").get("security_protocol") != "PLAINTEXT"


def describe_topics(bootstrap: Optional[str] = None, timeout_s: float = 30.0) -> Dict[str, dict]:
    """{topic: {"partitions": n, "configs": {...}}} for every non-internal topic."""
    admin = _admin(bootstrap or default_bootstrap(), timeout_s)
    try:
        names = sorted(n for n in admin.list_topics() if not n.startswith("__"))
        described = _describe(admin, names)
        configs = _topic_configs(admin, names)
        return {
            n: {"partitions": described.get(n, {}).get("partitions", 0), "configs": configs.get(n, {})}
            for n in names
        }
    finally:
        admin.close()


def main(argv: Optional[List[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m streams.topics", description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", default=None, help=f"default ${BOOTSTRAP_ENV} or {DEFAULT_BOOTSTRAP}")
    parser.add_argument("--list", action="store_true", help="only print the existing topics")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")
    args = parser.parse_args(argv)
    bootstrap = args.bootstrap or default_bootstrap()

    if not args.list:
        for name, status in create_topics(bootstrap, timeout_s=args.timeout).items():
            print(f"{status:8} {name}")

    rc = 0
    print(f"topics on {bootstrap}:")
    for name, info in describe_topics(bootstrap, timeout_s=args.timeout).items():
        cfg = info["configs"]
        shown = " ".join(f"{k}={cfg[k]}" for k in ("cleanup.policy", "retention.ms") if k in cfg)
        drift = ""
        spec = TOPICS.get(name)
        if spec is not None:
            bad = [k for k, v in spec.configs.items() if cfg and cfg.get(k) != v]
            if info["partitions"] != spec.partitions:
                bad.append(f"partitions (want {spec.partitions})")
            if bad:
                drift = "  DIFFERS FROM SPEC: " + ", ".join(bad)
                rc = 1
        print(f"  {name:32} partitions={info['partitions']:<3} {shown}{drift}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
