"""Open transactions on the brokers' partitions, and ending one by hand: the remedy for readers
stalled behind a last stable offset that does not move (alert CrapsReadersStalled).

A partition's leader knows, per producer id, whether a transaction of it is open on the partition
(DescribeProducers: its first offset and the time of its last record). The transaction coordinator
of the producer's transactional id knows which partitions the transaction holds and when it began
(ListTransactions, DescribeTransactions). An open transaction its coordinator also holds open
will end by itself: committed, or aborted at its timeout. One the coordinator does not hold
(another state, or no longer that partition) is hanging: nothing will ever write its marker, and
every read_committed reader of the partition waits at its first offset forever. Aborting it writes
an abort marker on that partition (WriteTxnMarkers, as `kafka-transactions.sh abort` does): its
records are dropped for readers and the last stable offset moves on.

Run as the administrator (the `admin` role's client config, craps_streams/kafka/settings.py).
"""
from __future__ import annotations

import dataclasses
import time
from typing import Iterable, Optional

from kafka import TopicPartition
from kafka.admin import AbortTransactionSpec

from craps_streams.kafka.cluster import admin_client

# The coordinator's states of a transaction that still holds its partitions open.
OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort")


@dataclasses.dataclass(frozen=True)
class OpenTransaction:
    """A transaction open on one partition, as its leader and its coordinator see it."""
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    start_offset: int  # the first offset of the transaction on this partition (where readers stop)
    age_s: float  # since the coordinator began it, or since its last record when the coordinator does not hold it
    transactional_id: Optional[str]  # None: no coordinator knows the producer id
    coordinator_state: Optional[str]  # the coordinator's state of it (None: unknown)
    timeout_s: Optional[float]  # the transaction's timeout, by which its coordinator aborts it

    @property
    def hanging(self) -> bool:
        """No coordinator holds it open on this partition: nothing but an abort by hand ends it."""
        return self.coordinator_state not in OPEN_STATES

    @property
    def where(self) -> str:
        return f"{self.topic}:{self.partition}"


class AbortRefused(RuntimeError):
    """An abort that is not the operator's to make (or nothing to abort)."""


def _state_name(state) -> str:
    """The coordinator's state as the broker spells it ("Ongoing"), from kafka-python's enum."""
    return str(getattr(state, "value", state))


def _partitions(admin, prefix: str) -> list[TopicPartition]:
    names = sorted(n for n in admin.list_topics() if n.startswith(prefix) and not n.startswith("__"))
    out = []
    for t in admin.describe_topics(names) if names else []:
        name = t.get("name", t.get("topic"))
        for p in t.get("partitions") or []:
            out.append(TopicPartition(name, p.get("partition_index", p.get("partition"))))
    return out


def _open_on(admin, partitions: Iterable[TopicPartition]) -> list[tuple[TopicPartition, object]]:
    """(partition, producer state) of every producer with a transaction open on the partitions."""
    out = []
    for tp, state in admin.describe_producers(list(partitions)).items():
        for producer in state.active_producers:
            if producer.current_transaction_start_offset >= 0:
                out.append((tp, producer))
    return out


def _coordinators(admin, producer_ids: set[int]) -> dict[int, tuple[str, object]]:
    """producer id -> (transactional id, DescribeTransactions description) of the open ones known."""
    if not producer_ids:
        return {}
    ids: dict[int, str] = {}
    for listings in admin.list_transactions(producer_id_filters=sorted(producer_ids)).values():
        for listing in listings:
            ids[listing.producer_id] = listing.transactional_id
    if not ids:
        return {}
    described = admin.describe_transactions(sorted(set(ids.values())))
    return {pid: (tid, described[tid]) for pid, tid in ids.items() if tid in described}


def open_transactions(bootstrap: Optional[str] = None, older_than_s: float = 0.0, prefix: str = "",
                      timeout_s: float = 30.0, now_ms: Optional[int] = None) -> list[OpenTransaction]:
    """Every transaction open on a partition of the topics starting with `prefix` (all but the
    broker's own by default) for at least `older_than_s`, oldest first."""
    admin = admin_client(bootstrap, "craps-streams-transactions", timeout_s)
    try:
        opened = _open_on(admin, _partitions(admin, prefix))
        known = _coordinators(admin, {p.producer_id for _, p in opened})
    finally:
        admin.close()
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    out = []
    for tp, producer in opened:
        tid, desc = known.get(producer.producer_id, (None, None))
        holds = desc is not None and tp in set(desc.topic_partitions)
        state = _state_name(desc.state) if desc is not None else None
        if desc is not None and not holds:
            state = f"{state} (not on this partition)"
        began = desc.transaction_start_time_ms if holds and desc.transaction_start_time_ms > 0 else producer.last_timestamp
        age = max(0.0, (now - began) / 1000) if began and began > 0 else 0.0
        if age < older_than_s:
            continue
        out.append(OpenTransaction(
            topic=tp.topic, partition=tp.partition, producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch, coordinator_epoch=producer.coordinator_epoch,
            start_offset=producer.current_transaction_start_offset, age_s=age, transactional_id=tid,
            coordinator_state=state, timeout_s=desc.transaction_timeout_ms / 1000 if desc is not None else None))
    return sorted(out, key=lambda t: -t.age_s)


def abort(topic: str, partition: int, producer_id: Optional[int] = None, force: bool = False,
          bootstrap: Optional[str] = None, timeout_s: float = 30.0) -> OpenTransaction:
    """Write an abort marker for the transaction open on `topic`:`partition` (the one of
    `producer_id` when several are), and return what was aborted.

    Refused (AbortRefused) when none is open there, when several are and no producer id is given,
    or, unless `force`, when its coordinator still holds it open: it ends by itself by its timeout,
    and aborting it under a producer that may still commit splits the transaction."""
    found = [t for t in open_transactions(bootstrap, 0.0, topic, timeout_s)
             if t.topic == topic and t.partition == partition
             and (producer_id is None or t.producer_id == producer_id)]
    if not found:
        raise AbortRefused(f"no transaction open on {topic}:{partition}"
                           + (f" of producer id {producer_id}" if producer_id is not None else ""))
    if len(found) > 1:
        raise AbortRefused(f"{len(found)} transactions open on {topic}:{partition} (producer ids "
                           f"{', '.join(str(t.producer_id) for t in found)}): name one with --producer-id")
    txn = found[0]
    if not txn.hanging and not force:
        raise AbortRefused(f"the transaction of {txn.transactional_id} (producer id {txn.producer_id}) on "
                           f"{txn.where} is held open by its coordinator ({txn.coordinator_state}, "
                           f"{txn.age_s:.0f} s of a {txn.timeout_s:.0f} s timeout): it ends by itself; "
                           "--force to abort it now")
    admin = admin_client(bootstrap, "craps-streams-transactions", timeout_s)
    try:
        admin.abort_transaction(AbortTransactionSpec(
            TopicPartition(topic, partition), txn.producer_id, txn.producer_epoch,
            txn.coordinator_epoch if txn.coordinator_epoch >= 0 else -1))
    finally:
        admin.close()
    return txn
