"""Writing an archive: files under temporary names, renamed, then the index; `archive` runs it
over what is new on the topic since the last run."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from fastavro.write import Writer

from craps_streams.archive.chain import (
    GENESIS,
    SIDECAR_SUFFIX,
    seal,
    file_sha256,
    line_digest,
    link,
    record_digest,
    sidecar_of,
    sidecar_text,
)
from craps_streams.codec import decode_event, default_codec, default_container_codec
from craps_streams.archive.index import INDEX, UNDECODABLE_DIR, _add_offset, _fsync_dir, _write_json_atomically, day_of, load_index


@dataclass(slots=True)
class _Open:
    """A file being written in this run: a temporary name until the run completes."""

    entry: dict
    tmp: Path
    final: Path
    fo: object
    writer: object = None  # fastavro Writer for event files
    tables: set = field(default_factory=set)
    digests: list = field(default_factory=list)  # per record, for the chain's sidecar


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

    def __init__(self, out_dir, topic: str, *, codec: str | None = None, sync_interval: int = 64_000,
                 seal_key: bytes | None = None):
        self.seal_key = seal_key  # the archiver's key: seals the chain head (archive.chain)
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
            base = rel[:-len(SIDECAR_SUFFIX)] if rel.endswith(SIDECAR_SUFFIX) else rel
            if path.name.endswith(".tmp") or (base not in known and path.suffix in (".avro", ".jsonl", SIDECAR_SUFFIX)):
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
            self._add_event(partition, offset, record, datum, record_digest(record))
        self.next_offsets[partition] = offset + 1

    def add_record(self, partition: int, offset: int, record: dict) -> None:
        """A table-event record already decoded (or about to be produced): archived as `add` would
        archive its Avro message; a record the codec refuses raises CodecError."""
        expected = self.next_offsets.get(partition)
        if expected is not None and offset < expected:
            return
        # the digest of the record as the archive gives it back (optional fields filled in)
        self._add_event(partition, offset, record, self.avro.event_datum(record),
                        record_digest(decode_event(self.avro.encode_event(record))))
        self.next_offsets[partition] = offset + 1

    def _add_event(self, partition: int, offset: int, record: dict, datum: dict, digest: str) -> None:
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
        f.digests.append(digest)
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
        text = (json.dumps(line, sort_keys=True) + "\n").encode()
        f.fo.write(text)
        f.digests.append(line_digest(text))
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
            # the hash chain (archive.chain): the file's digest and its records' digests
            side = sidecar_of(f.final)
            tmp = side.with_name(f".{side.name}.{uuid.uuid4().hex[:8]}.tmp")
            text = sidecar_text(f.digests)
            with open(tmp, "wb") as so:
                so.write(text)
                so.flush()
                os.fsync(so.fileno())
            os.replace(tmp, side)
            f.entry["sha256"] = file_sha256(f.final)
            f.entry["digests_sha256"] = hashlib.sha256(text).hexdigest()
            entries.append(f.entry)
            self.result.files.append(f.entry["path"])
        for d in {f.final.parent for f in self.open.values()}:
            _fsync_dir(d)
        self.open = {}
        entries.sort(key=lambda e: (e["partition"], e["first_offset"]))
        # An archive begun before the chain: the chain starts with this run's files.
        self.index["chain_head"] = link(entries, self.index.get("chain_head") or GENESIS)
        if self.seal_key is not None:  # the head sealed with the archiver's key (archive.chain)
            self.index["chain_seal"] = seal(self.index["chain_head"], self.seal_key)
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
            progress=None, seal_key: bytes | None = None) -> ArchiveResult:
    """Archive what is new on the table-events topic (`topic`, default the default floor's) since
    the last run; `seal_key` seals the chain head."""
    if topic is None:
        from craps_streams.topics import Topics

        topic = Topics().table_events
    from craps_streams.kafka.reader import read_committed

    writer = ArchiveWriter(out_dir, topic, seal_key=seal_key)
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

