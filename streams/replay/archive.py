"""Archive the table-events topic into Avro Object Container Files, resumably, and verify it.

Layout of an archive directory:

    DIR/index.json                               what is archived (the only source of truth)
    DIR/2026-01-01/p3-000000000123.avro          events of partition 3, UTC day of the event `ts`,
                                                 first offset 123 in the name
    DIR/undecodable/p3-000000000456.jsonl        messages that are not decodable Avro: base64 key
                                                 and value with partition and offset, nothing lost

`index.json` lists per file its partition, first and last offset, the offset ranges it holds (a
partition's messages spread over several files when they cross a day, so one file's offsets are not
always contiguous), min and max `ts`, count and tables; and per partition the next offset to
archive. A run reads from those offsets up to the end offsets as of its start (read_committed),
writes each file to a temporary name, renames it, and only then rewrites the index (also atomically):
a crash at any point leaves an archive whose index is right, and the next run continues after the
last archived offset without duplicating anything. Files not named by the index (left over by a
crash between the rename and the index update) are removed at the start of a run.

`verify` checks that per partition the archived offsets cover a contiguous range with one record
per offset (no hole, no overlap), and walks every table's `seq` in offset order reporting gaps and
duplicates: the floor may send those (they are findings about the floor, not about the archive).
"""
from __future__ import annotations

import base64
import heapq
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator

from fastavro.write import Writer

from streams.codec import decode_event, default_codec, default_container_codec, read_container

INDEX = "index.json"
UNDECODABLE_DIR = "undecodable"
INDEX_VERSION = 1


# ---------------------------------------------------------------- the index


def day_of(ts) -> str:
    """The UTC day of an epoch-ms `ts` ("2026-01-01"); "undated" when it is not a usable time."""
    if type(ts) is not int:
        return "undated"
    try:
        return datetime.fromtimestamp(ts / 1000, tz=timezone.utc).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):
        return "undated"


def load_index(out_dir) -> dict:
    path = Path(out_dir) / INDEX
    if not path.exists():
        return {"version": INDEX_VERSION, "topic": None, "partitions": {}, "files": [], "runs": []}
    index = json.loads(path.read_text())
    if index.get("version") != INDEX_VERSION:
        raise ValueError(f"{path}: index version {index.get('version')!r}, expected {INDEX_VERSION}")
    return index


def _write_json_atomically(path: Path, obj) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "w", encoding="utf-8") as fo:
        json.dump(obj, fo, indent=1, sort_keys=True)
        fo.write("\n")
        fo.flush()
        os.fsync(fo.fileno())
    os.replace(tmp, path)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _add_offset(ranges: list, offset: int) -> None:
    if ranges and ranges[-1][1] + 1 == offset:
        ranges[-1][1] = offset
    else:
        ranges.append([offset, offset])


def _offsets(ranges) -> Iterator[int]:
    for first, last in ranges:
        yield from range(first, last + 1)


# ---------------------------------------------------------------- writing


@dataclass(slots=True)
class _Open:
    """A file being written in this run: a temporary name until the run completes."""

    entry: dict
    tmp: Path
    final: Path
    fo: object
    writer: object = None  # fastavro Writer for event files
    tables: set = field(default_factory=set)


@dataclass(slots=True)
class ArchiveResult:
    archived: int = 0  # messages archived in this run
    undecodable: int = 0
    files: list = field(default_factory=list)  # paths (relative) written in this run
    partitions: dict = field(default_factory=dict)  # partition -> next offset after the run


class ArchiveWriter:
    """Writes messages of one topic (in offset order per partition) into an archive directory.

    `add(partition, offset, value)` for each message, then `commit()`; `abort()` drops the run.
    Used by `archive()` with a Kafka reader and directly by tests and benchmarks.
    """

    def __init__(self, out_dir, topic: str, *, codec: str | None = None, sync_interval: int = 64_000):
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.index = load_index(self.dir)
        if self.index.get("topic") not in (None, topic):
            raise ValueError(f"{self.dir} archives topic {self.index['topic']!r}, not {topic!r}")
        self.index["topic"] = topic
        self.topic = topic
        self.codec = codec or default_container_codec()
        self.sync_interval = sync_interval
        self.avro = default_codec()
        self.open: dict = {}  # (partition, day) or (partition, None) for undecodable -> _Open
        self.result = ArchiveResult()
        self.next_offsets = {int(p): v["next_offset"] for p, v in self.index["partitions"].items()}
        self._remove_strays()

    # ---- resume

    def start_offset(self, partition: int) -> int:
        return self.next_offsets.get(partition, 0)

    def _remove_strays(self) -> None:
        """Temporary files and files the index does not name: debris of an interrupted run."""
        known = {f["path"] for f in self.index["files"]}
        for path in self.dir.rglob("*"):
            if not path.is_file() or path.name == INDEX:
                continue
            rel = path.relative_to(self.dir).as_posix()
            if path.name.endswith(".tmp") or (rel not in known and path.suffix in (".avro", ".jsonl")):
                path.unlink()

    # ---- writing

    def add(self, partition: int, offset: int, value: bytes | None, key: bytes | None = None,
            timestamp: int | None = None) -> None:
        expected = self.next_offsets.get(partition)
        if expected is not None and offset < expected:
            return  # already archived (a resumed run, or a re-delivered message): never twice
        try:
            record = decode_event(value)
            datum = self.avro.event_datum(record)
        except Exception as e:  # CodecError; anything else is kept raw as well
            self._add_undecodable(partition, offset, value, key, timestamp, e)
        else:
            self._add_event(partition, offset, record, datum)
        self.next_offsets[partition] = offset + 1

    def add_record(self, partition: int, offset: int, record: dict) -> None:
        """A table-event record already decoded (or about to be produced): archived as `add` would
        archive its Avro message; a record the codec refuses raises CodecError."""
        expected = self.next_offsets.get(partition)
        if expected is not None and offset < expected:
            return
        self._add_event(partition, offset, record, self.avro.event_datum(record))
        self.next_offsets[partition] = offset + 1

    def _add_event(self, partition: int, offset: int, record: dict, datum: dict) -> None:
        ts = record.get("ts")
        day = day_of(ts)
        f = self.open.get((partition, day))
        if f is None:
            rel = f"{day}/p{partition}-{offset:012d}.avro"
            f = self._open(partition, day, rel, offset, "events")
            f.writer = Writer(f.fo, self.avro.event_schema.parsed, codec=self.codec,
                              sync_interval=self.sync_interval,
                              metadata={"casino.craps.topic": self.topic,
                                        "casino.craps.partition": str(partition)})
        f.writer.write(datum)
        e = f.entry
        _add_offset(e["offsets"], offset)
        e["last_offset"] = offset
        e["count"] += 1
        if type(ts) is int:
            if e["min_ts"] is None or ts < e["min_ts"]:
                e["min_ts"] = ts
            if e["max_ts"] is None or ts > e["max_ts"]:
                e["max_ts"] = ts
        table_id = record.get("table_id")
        if type(table_id) is str:
            f.tables.add(table_id)
        self.result.archived += 1

    def _add_undecodable(self, partition, offset, value, key, timestamp, error) -> None:
        f = self.open.get((partition, None))
        if f is None:
            rel = f"{UNDECODABLE_DIR}/p{partition}-{offset:012d}.jsonl"
            f = self._open(partition, None, rel, offset, "undecodable")
        line = {"partition": partition, "offset": offset, "timestamp": timestamp,
                "key_b64": None if key is None else base64.b64encode(bytes(key)).decode(),
                "value_b64": None if value is None else base64.b64encode(bytes(value)).decode(),
                "error": str(error)[:500]}
        f.fo.write((json.dumps(line, sort_keys=True) + "\n").encode())
        e = f.entry
        _add_offset(e["offsets"], offset)
        e["last_offset"] = offset
        e["count"] += 1
        self.result.archived += 1
        self.result.undecodable += 1

    def _open(self, partition: int, day, rel: str, offset: int, kind: str) -> _Open:
        final = self.dir / rel
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f".{final.name}.{uuid.uuid4().hex[:8]}.tmp")
        entry = {"path": rel, "kind": kind, "partition": partition, "day": day, "first_offset": offset,
                 "last_offset": offset, "offsets": [], "count": 0, "min_ts": None, "max_ts": None,
                 "tables": []}
        f = self.open[(partition, day)] = _Open(entry, tmp, final, open(tmp, "wb"))
        return f

    def commit(self) -> ArchiveResult:
        """Close, rename, then record the run in the index (atomically). Idempotent on no data."""
        entries = []
        for f in self.open.values():
            if f.writer is not None:
                f.writer.flush()
            f.fo.flush()
            os.fsync(f.fo.fileno())
            f.fo.close()
            os.replace(f.tmp, f.final)
            f.entry["tables"] = sorted(f.tables)
            entries.append(f.entry)
            self.result.files.append(f.entry["path"])
        for d in {f.final.parent for f in self.open.values()}:
            _fsync_dir(d)
        self.open = {}
        entries.sort(key=lambda e: (e["partition"], e["first_offset"]))
        self.index["files"].extend(entries)
        for p, nxt in sorted(self.next_offsets.items()):
            self.index["partitions"][str(p)] = {"next_offset": nxt}
        self.index["runs"].append({"at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                   "archived": self.result.archived,
                                   "undecodable": self.result.undecodable,
                                   "files": len(entries)})
        _write_json_atomically(self.dir / INDEX, self.index)
        _fsync_dir(self.dir)
        self.result.partitions = dict(sorted(self.next_offsets.items()))
        return self.result

    def abort(self) -> None:
        for f in self.open.values():
            try:
                f.fo.close()
            finally:
                f.tmp.unlink(missing_ok=True)
        self.open = {}


# ---------------------------------------------------------------- Kafka


def archive(out_dir, topic: str | None = None, bootstrap: str | None = None,
            progress=None) -> ArchiveResult:
    """Archive what is new on the table-events topic since the last run."""
    if topic is None:
        from streams.topics import TABLE_EVENTS

        topic = TABLE_EVENTS
    from streams.kafka.reader import read_committed

    writer = ArchiveWriter(out_dir, topic)
    starts = dict(writer.next_offsets)
    try:
        for m in read_committed(topic, "archive", bootstrap=bootstrap, starts=starts):
            writer.add(m.partition, m.offset, m.value, m.key, m.timestamp)
            if progress is not None:
                progress.tick()
    except BaseException:
        writer.abort()
        raise
    return writer.commit()


# ---------------------------------------------------------------- reading


@dataclass(slots=True)
class RawMessage:
    """A message of the topic that is not decodable Avro, as the worker saw it."""

    value: bytes
    key: bytes | None
    topic: str
    partition: int
    offset: int
    error: str = ""


def _event_file_items(path: Path, entry: dict, fast: bool = False) -> Iterator[tuple[int, object]]:
    offsets = _offsets(entry["offsets"])
    n = 0
    if fast:
        from streams.replay.fastread import read_events

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
    by_partition: dict = {}
    for e in index["files"]:
        if tables is not None:
            if e["kind"] != "events" or not tables.intersection(e["tables"]):
                continue
        if until is not None and e["kind"] == "events" and e["min_ts"] is not None and e["min_ts"] > until:
            continue
        by_partition.setdefault(e["partition"], []).append(e)
    wanted = None if partitions is None else set(partitions)
    for p in sorted(by_partition):
        if wanted is not None and p not in wanted:
            continue
        entries = sorted(by_partition[p], key=lambda e: e["first_offset"])
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


def _selected_files(index: dict, tables: set | None, until: int | None) -> dict:
    """partition -> its files worth reading for these tables and this end of slice, by offset."""
    by_partition: dict = {}
    for e in index["files"]:
        if tables is not None and (e["kind"] != "events" or not tables.intersection(e["tables"])):
            continue
        if until is not None and e["kind"] == "events" and e["min_ts"] is not None and e["min_ts"] > until:
            continue
        by_partition.setdefault(e["partition"], []).append(e)
    return {p: sorted(es, key=lambda e: e["first_offset"]) for p, es in sorted(by_partition.items())}


def iter_archive_batches(out_dir, *, tables: set | None = None, until: int | None = None,
                         partitions: Iterable[int] | None = None, batch: int = 1024) -> Iterator[list]:
    """The fast replay source of an archive, in batches (lists): core events when no contract check
    is left (see `fastread`), else `(item, where)` tuples, a record, torn or undecodable message
    with its "topic/partition/offset". Offset order per partition (files merged by offset when a
    partition's files interleave), partition after partition, only `partitions` when given."""
    from streams.replay.fastread import EVENT_TYPES, read_event_batches

    d = Path(out_dir)
    index = load_index(d)
    topic = index.get("topic") or "table-events"
    wanted = None if partitions is None else set(partitions)
    for p, entries in _selected_files(index, tables, until).items():
        if wanted is not None and p not in wanted:
            continue
        if not all(a["last_offset"] < b["first_offset"] for a, b in zip(entries, entries[1:])):
            chunk: list = []
            for _, offset, item in iter_archive(d, tables=tables, until=until, partitions=(p,), fast=True):
                chunk.append(item if type(item) in EVENT_TYPES else (item, f"{topic}/{p}/{offset}"))
                if len(chunk) >= batch:
                    yield chunk
                    chunk = []
            if chunk:
                yield chunk
            continue
        for e in entries:
            path = d / e["path"]
            if e["kind"] == "events":
                count = 0
                for items in read_event_batches(path, (lambda e: lambda n: f"{topic}/{p}/{_offset_at(e, n)}")(e),
                                                batch=batch):
                    count += len(items)
                    yield items
                if count != e["count"]:
                    raise ValueError(f"{path}: {count} records, the index lists {e['count']}")
            else:
                chunk = []
                for offset, item in _undecodable_file_items(path, topic):
                    chunk.append((item, f"{topic}/{p}/{offset}"))
                    if len(chunk) >= batch:
                        yield chunk
                        chunk = []
                if chunk:
                    yield chunk


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


# ---------------------------------------------------------------- verifying


@dataclass(slots=True)
class Verification:
    partitions: dict = field(default_factory=dict)  # p -> {"first","next","count","covered"}
    offset_gaps: list = field(default_factory=list)  # (partition, first missing, last missing)
    offset_overlaps: list = field(default_factory=list)  # (partition, offset, files)
    count_mismatches: list = field(default_factory=list)  # (partition, count, covered)
    records: int = 0
    seq_gaps: list = field(default_factory=list)  # (table, after seq, next seq, partition, offset)
    seq_duplicates: list = field(default_factory=list)  # (table, seq, last seq, partition, offset)
    tables: int = 0

    @property
    def archive_ok(self) -> bool:
        """The archive itself: every offset once, counts equal to offsets covered."""
        return not (self.offset_gaps or self.offset_overlaps or self.count_mismatches)

    def lines(self, limit: int = 20) -> list[str]:
        out = []
        for p, info in sorted(self.partitions.items()):
            out.append(f"partition {p}: offsets {info['first']}..{info['next'] - 1} covered {info['covered']:,}, "
                       f"archived {info['count']:,}" + ("" if info["count"] == info["covered"] else "  MISMATCH"))
        for p, a, b in self.offset_gaps[:limit]:
            out.append(f"offset gap: partition {p} offsets {a}..{b} not archived")
        for p, o, files in self.offset_overlaps[:limit]:
            out.append(f"offset overlap: partition {p} offset {o} in {', '.join(files)}")
        for t, last, nxt, p, o in self.seq_gaps[:limit]:
            out.append(f"seq gap (floor): table {t} seq {last} then {nxt} (partition {p} offset {o})")
        for t, seq, last, p, o in self.seq_duplicates[:limit]:
            out.append(f"seq duplicate or out of order (floor): table {t} seq {seq} after {last} "
                       f"(partition {p} offset {o})")
        more = max(0, len(self.seq_gaps) - limit) + max(0, len(self.seq_duplicates) - limit)
        if more:
            out.append(f"... and {more:,} more seq findings")
        out.append(self.summary())
        return out

    def summary(self) -> str:
        return (f"verify: {self.records:,} records in {len(self.partitions)} partitions, "
                f"archive {'OK' if self.archive_ok else 'INCONSISTENT'} "
                f"({len(self.offset_gaps)} offset gaps, {len(self.offset_overlaps)} overlaps, "
                f"{len(self.count_mismatches)} count mismatches); floor: {self.tables} tables, "
                f"{len(self.seq_gaps)} seq gaps, {len(self.seq_duplicates)} seq duplicates")


def verify(out_dir, *, check_seq: bool = True) -> Verification:
    d = Path(out_dir)
    index = load_index(d)
    v = Verification()
    by_partition: dict = {}
    for e in index["files"]:
        by_partition.setdefault(e["partition"], []).append(e)
    for p, entries in sorted(by_partition.items()):
        ranges = sorted((first, last, e["path"]) for e in entries for first, last in e["offsets"])
        count = sum(e["count"] for e in entries)
        listed = sum(last - first + 1 for first, last, _ in ranges)
        if listed != count:
            v.count_mismatches.append((p, count, listed))
        first = ranges[0][0] if ranges else 0
        nxt = index["partitions"].get(str(p), {}).get("next_offset", first)
        covered = nxt - first
        reach, reach_path = first - 1, None
        for a, b, path in ranges:
            if a <= reach:
                v.offset_overlaps.append((p, a, [reach_path, path]))
            elif a > reach + 1:
                v.offset_gaps.append((p, reach + 1, a - 1))
            if b > reach:
                reach, reach_path = b, path
        if reach < nxt - 1:
            v.offset_gaps.append((p, reach + 1, nxt - 1))
        if count != covered:
            v.count_mismatches.append((p, count, covered))
        v.partitions[p] = {"first": first, "next": nxt, "count": count, "covered": covered}
        v.records += count
    if check_seq:
        last: dict = {}
        for p, offset, item in iter_archive(d):
            if type(item) is not dict:
                continue
            t, seq = item.get("table_id"), item.get("seq")
            if type(t) is not str or type(seq) is not int:
                continue
            prev = last.get(t)
            if prev is not None:
                if seq <= prev:
                    v.seq_duplicates.append((t, seq, prev, p, offset))
                    continue
                if seq > prev + 1:
                    v.seq_gaps.append((t, prev, seq, p, offset))
            elif seq != 1:
                v.seq_gaps.append((t, 0, seq, p, offset))
            last[t] = seq
        v.tables = len(last)
    return v
