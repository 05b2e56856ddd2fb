"""The cluster's health as an operator reads it: how many brokers, and for each topic how many
partitions have fewer in-sync replicas than replicas (under-replicated), fewer than the topic's
`min.insync.replicas` (writes with acks=all refused), or no leader (offline).

    python -m craps_streams.kafka.cluster in-sync [--bootstrap B] [--timeout S]   # kafka.sh restart waits on it

Run as the administrator (the `admin` role's client config, craps_streams/kafka/settings.py).
"""
from __future__ import annotations

import dataclasses
import time
from typing import Iterable, Mapping, Optional

from kafka.admin import KafkaAdminClient

from craps_streams.kafka.settings import client_settings


# The broker's own topics that hold the floor's progress (list_topics leaves them out).
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")


@dataclasses.dataclass(frozen=True)
class TopicHealth:
    """One topic's replication, read from its partitions' metadata."""
    partitions: int
    replicas: int  # the replication factor (the most replicas any partition has)
    under_replicated: int  # partitions with fewer in-sync replicas than replicas
    below_min_isr: int  # partitions with fewer in-sync replicas than min.insync.replicas
    offline: int  # partitions without a leader

    def flags(self) -> list[str]:
        """What an operator must look at, worst first ([] when the topic is healthy)."""
        out = []
        if self.offline:
            out.append(f"OFFLINE {self.offline}/{self.partitions}")
        if self.below_min_isr:
            out.append(f"BELOW MIN ISR {self.below_min_isr}/{self.partitions}")
        if self.under_replicated:
            out.append(f"UNDER-REPLICATED {self.under_replicated}/{self.partitions}")
        return out


def admin_client(bootstrap: Optional[str], client_id: str, timeout_s: float = 30.0) -> KafkaAdminClient:
    """The administrator's client (craps_streams.kafka.access.admin_client, retried while no broker
    answers yet), on the default bootstrap servers when none are given."""
    from craps_streams.kafka.access import admin_client as administrator
    from craps_streams.kafka.settings import default_bootstrap

    return administrator(bootstrap or default_bootstrap(), timeout_s, client_id)


def broker_count(admin: KafkaAdminClient) -> int:
    """Brokers registered and not fenced."""
    return sum(1 for b in admin.describe_cluster()["brokers"] if not b.get("is_fenced"))


def topic_health(described: Iterable[dict], min_isr: Mapping[str, int]) -> dict[str, TopicHealth]:
    """TopicHealth per topic of a describe_topics answer; `min_isr`: each topic's min.insync.replicas
    (1 where unknown)."""
    out = {}
    for t in described:
        name = t.get("name", t.get("topic"))
        if name is None or t.get("error_code", 0) != 0:
            continue
        parts = t.get("partitions") or []
        floor = min_isr.get(name, 1)
        replicas = [len(_field(p, "replica_nodes", "replicas")) for p in parts]
        isr = [len(_field(p, "isr_nodes", "isr")) for p in parts]
        out[name] = TopicHealth(
            partitions=len(parts),
            replicas=max(replicas, default=0),
            under_replicated=sum(1 for r, i in zip(replicas, isr) if i < r),
            below_min_isr=sum(1 for i in isr if i < floor),
            offline=sum(1 for p in parts if p.get("leader_id", p.get("leader", -1)) < 0),
        )
    return out


def _field(partition: dict, *keys: str) -> list:
    """A partition's replica list under kafka-python 3.x's key or 2.x's."""
    for key in keys:
        if partition.get(key) is not None:
            return partition[key]
    return []


def min_isr_of(configs: Mapping[str, Mapping[str, str]]) -> dict[str, int]:
    """min.insync.replicas per topic from described topic configs (the broker's default included)."""
    out = {}
    for name, cfg in configs.items():
        try:
            out[name] = int(cfg.get("min.insync.replicas") or 1)
        except ValueError:
            out[name] = 1
    return out


def not_in_sync(admin: KafkaAdminClient) -> dict[str, TopicHealth]:
    """Every topic (internal ones too) with a partition under-replicated or offline."""
    names = list(admin.list_topics()) + list(INTERNAL_TOPICS)
    health = topic_health(admin.describe_topics(names), {})
    return {n: h for n, h in health.items() if h.under_replicated or h.offline}


def wait_in_sync(bootstrap: Optional[str] = None, timeout_s: float = 90.0, interval_s: float = 0.5) -> float:
    """Seconds until no partition of any topic is under-replicated or offline; TimeoutError after
    `timeout_s` naming the topics still behind."""
    start = time.monotonic()
    admin = admin_client(bootstrap, "craps-streams-cluster", timeout_s)
    try:
        while True:
            try:
                behind = not_in_sync(admin)
            except Exception as e:  # noqa: BLE001 - a node still coming back: ask again
                behind = {"?": repr(e)}
            if not behind:
                return time.monotonic() - start
            if time.monotonic() - start >= timeout_s:
                raise TimeoutError(f"not in sync after {timeout_s:.0f} s: {behind}")
            time.sleep(interval_s)
    finally:
        admin.close()


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m craps_streams.kafka.cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("in-sync",))
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--timeout", type=float, default=90.0)
    args = parser.parse_args(argv)
    try:
        took = wait_in_sync(args.bootstrap, args.timeout)
    except TimeoutError as e:
        print(f"cluster: {e}", file=sys.stderr)
        return 1
    print(f"cluster: every partition in sync ({took:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
