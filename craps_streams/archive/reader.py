"""Reading an archive back for replay: records (or RawMessage for undecodable ones) in offset
order per partition, whole or by batches, and partition groups for a parallel replay."""
from __future__ import annotations

import base64
import heapq
import json
from pathlib import Path
from typing import Callable, Iterable, Iterator

from craps_streams.archive.index import _offsets, load_index
from craps_streams.codec import RawMessage, read_container


def _event_file_items(path: Path, entry: dict, fast: bool = False) -> Iterator[tuple[int, object]]:
    offsets = _offsets(entry["offsets"])
    n = 0
    if fast:
        from craps_streams.codec.fastread import read_events

        records = read_events(path)
    else:
        records = read_container(path)
    for record in records:
        try:
            offset = next(offsets)
        except StopIteration:
            raise ValueError(f"{path}: more records than the index lists ({entry['count']})") from None
        n += 1
        yield offset, record
    if n != entry["count"]:
        raise ValueError(f"{path}: {n} records, the index lists {entry['count']}")


def _undecodable_file_items(path: Path, topic: str) -> Iterator[tuple[int, RawMessage]]:
    with open(path, encoding="utf-8") as fo:
        for line in fo:
            r = json.loads(line)
            value = base64.b64decode(r["value_b64"]) if r.get("value_b64") is not None else b""
            key = base64.b64decode(r["key_b64"]) if r.get("key_b64") is not None else None
            yield r["offset"], RawMessage(value, key, topic, r["partition"], r["offset"], r.get("error", ""))


def iter_archive(out_dir, *, tables: set | None = None, until: int | None = None,
                 partitions: Iterable[int] | None = None, fast: bool = False) -> Iterator[tuple[int, int, object]]:
    """(partition, offset, record or RawMessage) of an archive, in offset order per partition,
    partition after partition: exactly the order each table's events had on the topic.

    `tables` skips files holding none of those tables (and undecodable messages), `until` skips
    files whose events all come after it; the caller still filters record by record. With `fast`,
    records that need no further contract check come as the core's events (`fastread`)."""
    d = Path(out_dir)
    index = load_index(d)
    topic = index.get("topic") or "table-events"
    wanted = None if partitions is None else set(partitions)
    for p, entries in _selected_files(index, tables, until).items():
        if wanted is not None and p not in wanted:
            continue
        streams = []
        for e in entries:
            path = d / e["path"]
            streams.append(_event_file_items(path, e, fast) if e["kind"] == "events"
                           else _undecodable_file_items(path, topic))
        disjoint = all(a["last_offset"] < b["first_offset"] for a, b in zip(entries, entries[1:]))
        if disjoint:  # the usual case: one file after the other, no merge needed
            for stream in streams:
                for offset, item in stream:
                    yield p, offset, item
        else:
            for offset, item in heapq.merge(*streams, key=lambda oi: oi[0]):
                yield p, offset, item


def _offset_at(entry: dict, n: int) -> int:
    """The offset of the n-th record (from 0) of an events file."""
    for first, last in entry["offsets"]:
        if n <= last - first:
            return first + n
        n -= last - first + 1
    raise ValueError(f"{entry['path']}: record {n} beyond the offsets the index lists")


def after_slice(entry: dict, until: int) -> bool:
    """Whether an index entry is an events file whose events all come after `until`: a slice ending
    there has nothing to read in it (what it left of the history begins there)."""
    return entry["kind"] == "events" and entry["min_ts"] is not None and entry["min_ts"] > until


def _selected_files(index: dict, tables: set | None, until: int | None) -> dict:
    """partition -> its files worth reading for these tables and this end of slice, by offset."""
    by_partition: dict = {}
    for e in index["files"]:
        if tables is not None and (e["kind"] != "events" or not tables.intersection(e["tables"])):
            continue
        if until is not None and after_slice(e, until):
            continue
        by_partition.setdefault(e["partition"], []).append(e)
    return {p: sorted(es, key=lambda e: e["first_offset"]) for p, es in sorted(by_partition.items())}


def iter_archive_batches(out_dir, *, tables: set | None = None, until: int | None = None,
                         partitions: Iterable[int] | None = None, batch: int = 1024) -> Iterator[list]:
    """The fast replay source of an archive, in batches (lists): core events when no contract check
    is left (see `fastread`), else `(item, where)` tuples, a record, torn or undecodable message
    with its "topic/partition/offset". Offset order per partition (files merged by offset when a
    partition's files interleave), partition after partition, only `partitions` when given."""
    for _, _, items in located_batches(out_dir, tables=tables, until=until, partitions=partitions, batch=batch):
        yield items


def located_batches(out_dir, *, tables: set | None = None, until: int | None = None,
                    partitions: Iterable[int] | None = None,
                    batch: int = 1024) -> Iterator[tuple[int, Callable[[int], int], list]]:
    """`iter_archive_batches`'s batches, each as `(partition, the offset of item i, items)`: for a
    reader that needs an item's offset only now and then (the seq walk of `archive verify`, a
    finding's place)."""
    from craps_streams.codec.fastread import EVENT_TYPES, read_event_batches

    d = Path(out_dir)
    index = load_index(d)
    topic = index.get("topic") or "table-events"
    wanted = None if partitions is None else set(partitions)
    for p, entries in _selected_files(index, tables, until).items():
        if wanted is not None and p not in wanted:
            continue
        if not all(a["last_offset"] < b["first_offset"] for a, b in zip(entries, entries[1:])):
            chunk: list = []
            offsets: list = []
            for _, offset, item in iter_archive(d, tables=tables, until=until, partitions=(p,), fast=True):
                chunk.append(item if type(item) in EVENT_TYPES else (item, f"{topic}/{p}/{offset}"))
                offsets.append(offset)
                if len(chunk) >= batch:
                    yield p, offsets.__getitem__, chunk
                    chunk, offsets = [], []
            if chunk:
                yield p, offsets.__getitem__, chunk
            continue
        for e in entries:
            path = d / e["path"]
            if e["kind"] == "events":
                count = 0
                for items in read_event_batches(path, (lambda e: lambda n: f"{topic}/{p}/{_offset_at(e, n)}")(e),
                                                batch=batch):
                    yield p, (lambda e, n: lambda i: _offset_at(e, n + i))(e, count), items
                    count += len(items)
                if count != e["count"]:
                    raise ValueError(f"{path}: {count} records, the index lists {e['count']}")
            else:
                chunk, offsets = [], []
                for offset, item in _undecodable_file_items(path, topic):
                    chunk.append((item, f"{topic}/{p}/{offset}"))
                    offsets.append(offset)
                    if len(chunk) >= batch:
                        yield p, offsets.__getitem__, chunk
                        chunk, offsets = [], []
                if chunk:
                    yield p, offsets.__getitem__, chunk


def iter_archive_after(out_dir, until: int, partition: int, index: dict | None = None) -> Iterator[tuple[bool, list]] | None:
    """What a slice ending at `until` left unread of one partition (`iter_archive_batches` with
    `until` skips the events files whose events all come after it): its events files holding an
    event after `until`, in offset order, each as `(whether it was skipped whole, its batches)`
    (the batches as `iter_archive_batches` gives them). None when the partition's files are not
    one after the other, or a file skipped whole comes before one that was read: what follows
    `until` is then not the partition's tail. `index`: the archive's index, when the caller has it."""
    from craps_streams.codec.fastread import read_event_batches

    d = Path(out_dir)
    index = load_index(d) if index is None else index
    topic = index.get("topic") or "table-events"
    entries = sorted((e for e in index["files"] if e["partition"] == partition and e["kind"] == "events"),
                     key=lambda e: e["first_offset"])
    if not all(a["last_offset"] < b["first_offset"] for a, b in zip(entries, entries[1:])):
        return None
    skipped = [after_slice(e, until) for e in entries]
    if any(a and not b for a, b in zip(skipped, skipped[1:])):
        return None

    def files():
        for e, whole in zip(entries, skipped):
            if whole or (e["max_ts"] is not None and e["max_ts"] > until):
                yield whole, read_event_batches(d / e["path"], (lambda e: lambda n: f"{topic}/{partition}/{_offset_at(e, n)}")(e))

    return files()


def iter_archive_fast(out_dir, *, tables: set | None = None, until: int | None = None,
                      partitions: Iterable[int] | None = None) -> Iterator[tuple]:
    """`(item, where)` for replays: core events (where None) when no contract check is left, else
    records, torn or undecodable messages with "topic/partition/offset" (`iter_archive_batches`,
    one item at a time)."""
    for items in iter_archive_batches(out_dir, tables=tables, until=until, partitions=partitions):
        for item in items:
            yield item if type(item) is tuple else (item, None)


def partition_groups(out_dir, *, tables: set | None = None, until: int | None = None) -> list[tuple]:
    """The partitions of an archive (those holding these tables and this slice) in groups that
    share no table, each `(partitions, events)` in partition order: a table's events are all in
    one group, so groups replay independently (a table on two partitions joins them)."""
    index = load_index(out_dir)
    selected = _selected_files(index, tables, until)
    parent = {p: p for p in selected}

    def root(p):
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    owner: dict = {}
    for p, entries in selected.items():
        for e in entries:
            for t in e["tables"]:
                q = owner.setdefault(t, p)
                if root(q) != root(p):
                    parent[max(root(q), root(p))] = min(root(q), root(p))
    groups: dict = {}
    for p, entries in selected.items():
        members, events = groups.setdefault(root(p), ([], [0]))
        members.append(p)
        events[0] += sum(e["count"] for e in entries)
    return [(tuple(members), events[0]) for _, (members, events) in sorted(groups.items())]


def archive_topic(out_dir) -> str:
    return load_index(out_dir).get("topic") or "table-events"

