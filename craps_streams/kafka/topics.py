"""Topic admin: create the pipeline topics (idempotent), describe what the broker holds.

Works with kafka-python 2.x and 3.x result shapes. Topic names and configs: craps_streams.topics. On a
cluster the replication factor is the cluster's size up to 3 (or the one given: the setting
CRAPS_REPLICATION_FACTOR), with
min.insync.replicas=2 and no unclean leader election (craps_streams.topics.replication_configs).
"""
from __future__ import annotations

import time
from typing import Dict, List, Mapping, Optional

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError

from craps_streams.kafka.cluster import INTERNAL_TOPICS, admin_client, broker_count, min_isr_of, topic_health
from craps_streams.kafka.settings import client_settings
from craps_streams.topics import (DEFAULT_APP_ID, RUN_PREFIX, Topics, TopicSpec, replication_configs,
                                  replication_factor)


def _admin(bootstrap: Optional[str], timeout_s: float) -> KafkaAdminClient:
    return admin_client(bootstrap, "craps-streams-topics", timeout_s)


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
    *,
    floor: Topics = Topics(),
    app_id: str = DEFAULT_APP_ID,
    replication: Optional[int] = None,
) -> Dict[str, str]:
    """Idempotently create the pipeline topics (`topics`, default every topic of `floor`), as the
    administrator, and grant the roles the floor's ACLs (its prefix and `app_id`:
    craps_streams/kafka/access.py) unless `grant` is false. `replication`: the replication factor
    (None: the cluster's size, at most 3).

    Returns {topic: "created" | "exists"}. Waits until every topic has a leader
    for all partitions and the ACLs are in force, so clients can be used right after this returns.
    Existing topics are left alone (their partition count / configs are not changed).
    """
    specs = dict(topics if topics is not None else floor.specs())
    admin = _admin(bootstrap, timeout_s)
    try:
        rf = replication_factor(replication, broker_count(admin))
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
                    [NewTopic(spec.name, spec.partitions, rf,
                              topic_configs={**spec.configs, **replication_configs(rf)})],
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
        if grant and client_settings("admin", bootstrap).get("security_protocol") != "PLAINTEXT":
            from craps_streams.kafka.access import grant_floor

            grant_floor(admin, floor.prefix, app_id)
        return result
    finally:
        admin.close()


def describe_topics(bootstrap: Optional[str] = None, timeout_s: float = 30.0) -> Dict[str, dict]:
    """{topic: {"partitions": n, "configs": {...}, "health": TopicHealth}} for every topic but the
    broker's own (the transaction log and the group offsets are in `internal_health`)."""
    admin = _admin(bootstrap, timeout_s)
    try:
        names = sorted(n for n in admin.list_topics() if not n.startswith("__"))
        described = _describe(admin, names)
        configs = _topic_configs(admin, names)
        health = topic_health(admin.describe_topics(names), min_isr_of(configs)) if names else {}
        return {
            n: {"partitions": described.get(n, {}).get("partitions", 0), "configs": configs.get(n, {}),
                "health": health.get(n)}
            for n in names
        }
    finally:
        admin.close()


def internal_health(bootstrap: Optional[str] = None, timeout_s: float = 30.0) -> Dict[str, object]:
    """TopicHealth of the broker's transaction log and group offsets (those that exist yet)."""
    admin = _admin(bootstrap, timeout_s)
    try:
        described = [t for t in admin.describe_topics(list(INTERNAL_TOPICS)) if t.get("error_code", 0) == 0]
        names = [t.get("name", t.get("topic")) for t in described]
        return topic_health(described, min_isr_of(_topic_configs(admin, names))) if names else {}
    finally:
        admin.close()




def spec_drift(name: str, info: dict, floor: Topics = Topics()) -> list[str]:
    """What of a described topic differs from its spec among the floor's ([] if none or no spec)."""
    spec = floor.specs().get(name)
    if spec is None:
        return []
    cfg = info["configs"]
    bad = [k for k, v in spec.configs.items() if cfg and cfg.get(k) != v]
    if info["partitions"] != spec.partitions:
        bad.append(f"partitions (want {spec.partitions})")
    return bad


def prune_runs(keep: int, bootstrap: Optional[str] = None, timeout_s: float = 30.0) -> List[str]:
    """Delete the topics of `make run`'s floors (`craps.run-<time>.*`) but those of the newest
    `keep` runs, so `.kafka-data` does not grow with every run, and the ACLs that named them.
    Returns the deleted topic names."""
    admin = _admin(bootstrap, timeout_s)
    try:
        names = [n for n in admin.list_topics() if n.startswith(RUN_PREFIX)]
        runs = sorted({n[len(RUN_PREFIX):].split(".", 1)[0] for n in names})  # <time> sorts by age
        kept = set(runs[-keep:]) if keep > 0 else set()
        doomed = sorted(n for n in names if n[len(RUN_PREFIX):].split(".", 1)[0] not in kept)
        _delete(admin, doomed, bootstrap, timeout_s)
        return doomed
    finally:
        admin.close()


def delete_floor(prefix: str, bootstrap: Optional[str] = None, timeout_s: float = 30.0) -> List[str]:
    """Delete every topic of one floor (`prefix`, e.g. a benchmark run's) and the ACLs that named
    them. Returns the deleted topic names."""
    admin = _admin(bootstrap, timeout_s)
    try:
        doomed = sorted(n for n in admin.list_topics() if n.startswith(prefix))
        _delete(admin, doomed, bootstrap, timeout_s)
        return doomed
    finally:
        admin.close()


def _delete(admin, names: List[str], bootstrap: Optional[str], timeout_s: float) -> None:
    if not names:
        return
    admin.delete_topics(names, timeout_ms=int(timeout_s * 1000))
    if client_settings("admin", bootstrap).get("security_protocol") != "PLAINTEXT":
        from craps_streams.kafka.access import revoke_topics

        revoke_topics(admin, names)
