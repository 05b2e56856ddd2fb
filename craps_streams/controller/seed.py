"""A new host's journal started after what the table-events topic already holds.

A controller numbers each table's events from its journal's last seq. When a controller's host
dies and a new one takes its tables, the new journal is empty: numbered from 1 again, the tables'
new events would be duplicates the worker drops (craps_streams/rules/sequence.py), lost to the
settlement. So before a controller starts on a journal that holds nothing of a table, it looks at
the topic: the table's last seq and ts there (read_committed, with the controller's own login,
which may READ table-events for this) become the journal's starting point (`Journal.seed`), and
the numbering goes on without a gap across the hosts (docs/operating/controller.md, replacing a
dead host).

What counts as the table's last event on the topic: the highest seq among its records in the
last chunk of its partition that holds any of them (`read_backwards`); records that are not a
valid event of the table (bad bytes sent by `produce`) are passed over.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from craps_streams.codec import CodecError, decode_event
from craps_streams.controller.journal import Journal
from craps_streams.kafka.reader import offset_ranges, partition_of, read_backwards

ROLE = "controller"


@dataclass(frozen=True, slots=True)
class OnTopic:
    """A table's last event on the topic: its seq and its stamp."""
    table_id: str
    seq: int
    ts: int


class NotSeeded(RuntimeError):
    """The journal holds nothing of tables the topic already has events of."""

    def __init__(self, journal: Path, unseeded: list[OnTopic]):
        self.unseeded = unseeded
        shown = ", ".join(f"{t.table_id} (up to seq {t.seq:,})" for t in unseeded[:10])
        super().__init__(
            f"the journal {journal} holds nothing of {shown}{' ...' if len(unseeded) > 10 else ''}, but the topic "
            "already has their events: numbered from 1 again, the tables' new events would be dropped as "
            "duplicates. On a host that replaces a dead one, seed the journal from the topic "
            "(`craps-streams controller seed`, or start with --seed-from-topic); with --new-tables only for "
            "tables that never played on this topic")


class JournalBehind(RuntimeError):
    """The journal's numbering is behind the topic's: another host served the table since."""


def _event_of(table_id: str, value: bytes) -> OnTopic | None:
    try:
        event = decode_event(value)
    except CodecError:
        return None
    seq, ts = event.get("seq"), event.get("ts")
    if event.get("table_id") != table_id or type(seq) is not int or type(ts) is not int:
        return None
    return OnTopic(table_id, seq, ts)


def last_on_topic(topic: str, tables, bootstrap: str | None = None) -> dict[str, OnTopic]:
    """Each table's last event on `topic` (a table with none is not in the answer; nor is any,
    when the topic does not exist)."""
    ranges = offset_ranges(topic, ROLE, bootstrap=bootstrap)
    by_partition: dict[int, set[str]] = {}
    for t in tables:
        p = partition_of(t.encode("utf-8"), len(ranges)) if ranges else None
        if p is not None and ranges[p][1] > ranges[p][0]:  # an empty partition holds no table's events
            by_partition.setdefault(p, set()).add(t)
    found: dict[str, OnTopic] = {}
    for partition, wanted in sorted(by_partition.items()):
        keys = {t.encode("utf-8"): t for t in wanted}

        def enough(chunk) -> bool:
            seen: dict[str, OnTopic] = {}
            for record in chunk:
                t = keys.get(record.key)
                if t is None or t in found:
                    continue
                event = _event_of(t, record.value)
                if event is not None and (t not in seen or event.seq > seen[t].seq):
                    seen[t] = event
            found.update(seen)
            return wanted <= found.keys()

        read_backwards(topic, ROLE, partition, ranges[partition], enough, bootstrap=bootstrap)
    return found


def unseeded(journals: dict, topic: str, bootstrap: str | None = None) -> dict[Path, list[OnTopic]]:
    """Per journal (`journals`: path -> the tables it serves), the tables it holds nothing of
    while the topic has their events; one look at the topic for them all, none when every journal
    numbers every one of its tables."""
    empty: dict[Path, list[str]] = {}
    for path, tables in journals.items():
        j = Journal(path, sync_full=False)
        try:
            empty[Path(path)] = sorted(t for t in tables if j.last_seq(t) == 0)
        finally:
            j.close()
    wanted = {t for tables in empty.values() for t in tables}
    if not wanted:
        return {}
    on_topic = last_on_topic(topic, wanted, bootstrap)
    return {path: [on_topic[t] for t in tables if t in on_topic] for path, tables in empty.items()
            if any(t in on_topic for t in tables)}


def seed(journal: Path, tables, topic: str, bootstrap: str | None = None) -> list[OnTopic]:
    """Start the journal's numbering of each table after its last event on the topic: -> the
    tables seeded. A table the journal already numbers at or past the topic is left as it is;
    JournalBehind when the journal numbers a table below what the topic holds (its host was
    replaced since: this journal is not the table's)."""
    on_topic = last_on_topic(topic, tables, bootstrap)
    j = Journal(journal)
    try:
        behind = [(t, j.last_seq(t), e.seq) for t, e in sorted(on_topic.items()) if 0 < j.last_seq(t) < e.seq]
        if behind:
            raise JournalBehind("; ".join(f"{t}: the journal {journal} numbers up to seq {mine:,}, the topic holds "
                                          f"up to {theirs:,}" for t, mine, theirs in behind)
                                + ": another controller served these tables since; this journal is not theirs")
        fresh = [e for t, e in sorted(on_topic.items()) if j.last_seq(t) == 0]
        j.seed([(e.table_id, e.seq, e.ts) for e in fresh])
    finally:
        j.close()
    return fresh


def check(journals: dict, topic: str, bootstrap: str | None = None) -> None:
    """NotSeeded (of the first such journal) when a journal (`journals`: path -> its tables)
    holds nothing of tables the topic has events of."""
    for path, missing in unseeded(journals, topic, bootstrap).items():
        raise NotSeeded(path, missing)
