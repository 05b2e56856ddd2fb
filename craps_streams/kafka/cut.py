"""One consistent cut of a live floor: per partition, the table events its worker has committed and
the settlements it wrote for exactly those events.

An audit of a floor being fed reads two topics, the table events and the settlements. Read each to
its end and the two ends belong to different moments: the newest events have not been settled yet
(settlements "missing") or, read the other way round, the newest settlements decide events the
read did not reach ("extra"). The audit must compare what the worker had settled with the events
it had settled them from, at one moment.

Why the worker group's committed offsets make that cut. The worker settles each partition's events
in Kafka transactions (craps_streams/app/worker.py): one transaction holds a batch's outputs, written to
the same partition number of the output topics, and the offset after the batch's last event,
committed for the worker's group (`send_offsets_to_transaction`). Both become visible when the
transaction commits, or neither does. So "the events below the group's committed offset of
partition P" and "the committed settlements of partition P" describe the same transactions, but
only if both are read as of the same transaction, and the commit markers reach the settlements
partition and the group's offsets one after the other, not at one instant. Per partition P:

1. read the group's committed offset C1 of events partition P (OffsetFetch with require_stable:
   while a transaction that carries offsets for P is being committed, the broker answers
   UNSTABLE_OFFSET_COMMIT and the client asks again, so a commit decided is a commit seen);
2. read the settlements partition's last stable offset L (read_committed end offset), then its
   high watermark H (read_uncommitted end offset);
3. read the committed offset C2 again.

P is cut at events [0, C1) and settlements [0, L) when C1 == C2 and L == H:

* no settlement of a later transaction is in [0, L): such a transaction's settlements were visible
  at step 2, so it was committed before step 3, its offsets were stable or pending then, and
  require_stable makes step 3 return them: C2 would be past C1;
* every settlement of the transactions up to C1 is in [0, L): that transaction committed before
  step 1, so its records were written before step 2; L == H says no record of the partition was
  still waiting for its commit marker at step 2, so they were all marked, committed, below L
  (H is read after L and never falls: H == L then means H == L when L was read).

A partition where a transaction committed between steps 1 and 3, or one was open at step 2, is
tried again a moment later; a partition of a floor settling a throw a second is stable in one or
two rounds. A per-table cut (each table's events up to the last seq its recorded settlements
decide) would be simpler, but unsound: a worker that stopped writing a table's settlements would
move that table's cut back with it, and the audit could never see the settlements it lost.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from kafka import KafkaConsumer, TopicPartition

from craps_streams.kafka.settings import client_settings


@dataclass(frozen=True, slots=True)
class Cut:
    """The audited cut: per partition, the events below `events[p]` (the worker group's committed
    offset) and the settlements below `settlements[p]` (their read end)."""

    group: str
    events_topic: str
    settlements_topic: str
    events: dict  # partition -> committed offset of the table events (0: nothing committed)
    settlements: dict  # partition -> read end offset of the settlements
    committed: frozenset  # partitions where the group has committed an offset
    rounds: int  # how many reads it took until every partition was stable

    def lines(self) -> list[str]:
        parts = sorted(self.events)
        events = "  ".join(f"p{p}:{self.events[p]:,}" for p in parts)
        settled = "  ".join(f"p{p}:{self.settlements[p]:,}" for p in parts)
        return [f"cut: the table events worker group {self.group} has committed, read consistently "
                f"({self.rounds} round{'s' if self.rounds != 1 else ''})",
                f"  {self.events_topic} up to offset  {events}",
                f"  {self.settlements_topic} up to offset  {settled}"]

    def to_record(self) -> dict:
        return {"group": self.group, "events_topic": self.events_topic, "settlements_topic": self.settlements_topic,
                "events": {str(p): o for p, o in sorted(self.events.items())},
                "settlements": {str(p): o for p, o in sorted(self.settlements.items())},
                "committed_partitions": sorted(self.committed), "rounds": self.rounds}


def committed_cut(events_topic: str, settlements_topic: str, group: str, *, bootstrap: str | None = None,
                  timeout_s: float = 60.0, pause_s: float = 0.05) -> Cut:
    """The cut of the module's docstring, every partition stable. Raises ValueError when the topics
    do not exist or differ in partitions, TimeoutError when some partition is not stable within
    `timeout_s` (a transaction left open: the readers' stall alert)."""
    settings = client_settings("audit", bootstrap)
    client_id = f"craps-audit-cut-{uuid.uuid4().hex[:6]}"
    # A group id only to read the group's offsets: this consumer never subscribes, so it never joins.
    stable = KafkaConsumer(**settings, group_id=group, client_id=client_id, isolation_level="read_committed",
                           enable_auto_commit=False)
    raw = None
    try:
        raw = KafkaConsumer(**settings, group_id=None, client_id=client_id + "-hw",
                            isolation_level="read_uncommitted", enable_auto_commit=False)
        partitions = {}
        for topic in (events_topic, settlements_topic):
            known = stable.partitions_for_topic(topic)
            if not known:
                raise ValueError(f"topic {topic!r} does not exist on {settings['bootstrap_servers']}")
            partitions[topic] = sorted(known)
        if partitions[events_topic] != partitions[settlements_topic]:
            raise ValueError(f"{events_topic} and {settlements_topic} differ in partitions: the worker writes "
                             "each output to its event's partition number")

        def committed(ps) -> dict:
            return {p: stable.committed(TopicPartition(events_topic, p)) for p in ps}

        events: dict = {}
        ends: dict = {}
        has_commit: set = set()
        pending = list(partitions[settlements_topic])
        rounds = 0
        deadline = time.monotonic() + timeout_s
        while pending:
            rounds += 1
            tps = [TopicPartition(settlements_topic, p) for p in pending]
            before = committed(pending)
            last_stable = stable.end_offsets(tps)
            high = raw.end_offsets(tps)
            after = committed(pending)
            for tp in tps:
                p = tp.partition
                if before[p] == after[p] and last_stable[tp] == high[tp]:
                    events[p] = before[p] or 0
                    ends[p] = last_stable[tp]
                    if before[p] is not None:
                        has_commit.add(p)
            pending = [p for p in pending if p not in ends]
            if pending:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{settlements_topic}: partitions {pending} not stable for {timeout_s} s "
                                       "(a transaction kept open, or commits without a pause)")
                time.sleep(pause_s)
        return Cut(group, events_topic, settlements_topic, events, ends, frozenset(has_commit), rounds)
    finally:
        stable.close()
        if raw is not None:
            raw.close()
