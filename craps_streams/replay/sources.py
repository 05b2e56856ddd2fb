"""Where a replay's history comes from, and the filters on it.

A history is a stream of `(item, where)`: `item` a contract record (dict), a torn line (str), a
`RawMessage` (a Kafka message that is not decodable Avro), or (from an archive, fast path) a core
event already checked; `where` names its source and makes a rejection's id deterministic
("file:line", "topic/partition/offset", like the worker).

Sources: JSON Lines (a file or stdin), an archive directory (`craps_streams.archive`), Avro
container files, or the table-events topic itself (read_committed, up to its end).

Time slices. A table's state is the fold of its whole history since its TableOpened, so a slice
cannot start feeding at `since`: `Slice` feeds every event with `ts <= until` (the history up to
the end of the slice) and keeps only the OUTPUTS whose deciding event's `ts` is in
[since, until]. A wager placed before `since` and decided inside the slice is in the slice; one
decided after `until` is not.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator

from craps_streams.codec import CodecError, RawMessage
from craps_streams.replay.engine import EVENT_TYPES, Replay, json_lines

# Avro and the archive (fastavro, the schemas) are imported where they are read: a JSON Lines
# replay never loads them.


def parse_time(text: str | None) -> int | None:
    """Epoch ms from an ISO 8601 time ("2026-01-01T10:00:00Z", "2026-01-01"; naive means UTC) or
    from a whole number of epoch milliseconds."""
    if text is None or text == "":
        return None
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(f"not an ISO time or epoch ms: {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


@dataclass(slots=True)
class Slice:
    """Tables and a time slice. `feeds` says whether an input goes into the core, `keeps` whether
    an output is reported."""

    tables: frozenset | None = None
    since: int | None = None
    until: int | None = None

    @property
    def active(self) -> bool:
        return self.tables is not None or self.since is not None or self.until is not None

    def feeds(self, item) -> bool:
        if type(item) in EVENT_TYPES:
            return (self.tables is None or item.table_id in self.tables) and \
                (self.until is None or item.ts <= self.until)
        if type(item) is dict:
            if self.tables is not None and item.get("table_id") not in self.tables:
                return False
            ts = item.get("ts")
            return self.until is None or type(ts) is not int or ts <= self.until
        # a torn line or an undecodable message belongs to no known table
        return self.tables is None

    def keeps(self, output) -> bool:
        ts = output.ts
        if self.since is not None and ts < self.since:
            return False
        return self.until is None or ts <= self.until


def feed_item(replay: Replay, item, where: str) -> list:
    """Feed one history item (`Replay.feed_item`); an undecodable Kafka message becomes the
    rejection the worker writes for it (reason "undecodable", id "rejected/topic/partition/offset")."""
    return replay.feed_item(item, where)


# ---------------------------------------------------------------- sources


def jsonl_source(path: str) -> Iterator[tuple[object, str]]:
    name = "stdin" if path == "-" else path
    stream = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="replace")
    with stream:
        yield from json_lines(stream, name)


def jsonl_batches(path: str) -> Iterator:
    """A JSON Lines file (or stdin) in batches of raw lines (`jsonread.LineBatch`), which
    `Replay.feed_batch` settles through the native lane or decodes by msgspec straight into core
    events where it can, else as `jsonl_source` gives them: a file as blocks of its bytes
    (`line_blocks`), stdin as lists of its text lines, each batch handed on as its lines arrive."""
    from craps_streams.replay.jsonread import line_batches, line_blocks

    if path == "-":
        yield from line_batches(sys.stdin, "stdin")
        return
    with open(path, "rb") as stream:
        yield from line_blocks(stream, path)


def archive_source(path, sl: Slice | None = None, fast: bool = True) -> Iterator[tuple[object, str]]:
    """With `fast`, items that need no contract check come as core events (see `fastread`) and
    their `where` is None (it names only what may be rejected as malformed)."""
    from craps_streams.archive import archive_topic, iter_archive, iter_archive_fast

    tables = set(sl.tables) if sl is not None and sl.tables is not None else None
    until = sl.until if sl is not None else None
    if fast:
        return iter_archive_fast(path, tables=tables, until=until)
    topic = archive_topic(path)
    return ((item, f"{topic}/{p}/{offset}") for p, offset, item in iter_archive(path, tables=tables, until=until))


def container_source(paths: Iterable[str]) -> Iterator[tuple[object, str]]:
    from craps_streams.codec import read_container

    for path in paths:
        for n, record in enumerate(read_container(path), 1):
            yield record, f"{path}:{n}"


def topic_source(topic: str | None = None, bootstrap: str | None = None,
                 ends: dict[int, int] | None = None) -> Iterator[tuple[object, str]]:
    """The table-events topic read_committed (`topic`, default the default floor's), up to its end
    or to `ends` (partition -> offset)."""
    from craps_streams.codec import decode_event
    from craps_streams.kafka.reader import read_committed
    from craps_streams.topics import Topics

    topic = topic or Topics().table_events
    for m in read_committed(topic, "audit", bootstrap=bootstrap, ends=ends):
        where = f"{m.topic}/{m.partition}/{m.offset}"
        try:
            item = decode_event(m.value)
        except CodecError as e:
            item = RawMessage(bytes(m.value or b""), m.key, m.topic, m.partition, m.offset, str(e))
        yield item, where


def history_kind(spec: str | None, *, from_topic: bool = False, extra_files: Iterable[str] = ()) -> str:
    """"topic", "archive", "avro" or "jsonl": what `spec` names (ValueError when it cannot be)."""
    if from_topic:
        return "topic"
    if spec is None:
        raise ValueError("no history given")
    files = [spec, *extra_files]
    if spec != "-" and Path(spec).is_dir():
        if extra_files:
            raise ValueError("an archive directory is replayed alone")
        if not (Path(spec) / "index.json").exists():
            raise ValueError(f"{spec}: not an archive (no index.json)")
        return "archive"
    if all(f.endswith(".avro") for f in files):
        return "avro"
    if extra_files:
        raise ValueError("several files are accepted only as .avro containers")
    return "jsonl"


def open_history(spec: str | None, *, from_topic: bool = False, topic: str | None = None,
                 bootstrap: str | None = None, sl: Slice | None = None,
                 extra_files: Iterable[str] = (), fast: bool = True,
                 ends: dict[int, int] | None = None) -> Iterator[tuple[object, str]]:
    """The history named by `spec`: "-" or a .jsonl file, an archive directory, .avro files (more
    in `extra_files`), or the table-events topic with `from_topic` (up to `ends`, partition ->
    offset, when given). `fast=False` gives records, never core events (for readers that look at
    the records themselves)."""
    kind = history_kind(spec, from_topic=from_topic, extra_files=extra_files)
    if kind == "topic":
        return topic_source(topic, bootstrap, ends)
    if kind == "archive":
        return archive_source(spec, sl, fast)
    if kind == "avro":
        return container_source([spec, *extra_files])
    return jsonl_source(spec)


def batched(pairs: Iterable[tuple[object, str]], size: int = 512) -> Iterator[list]:
    """`(item, where)` pairs as the batches of `Replay.feed_batch`: a core event that needs no
    source (where None) as itself, anything else as its pair."""
    chunk: list = []
    append = chunk.append
    for item, where in pairs:
        append(item if where is None and type(item) in EVENT_TYPES else (item, where))
        if len(chunk) >= size:
            yield chunk
            chunk = []
            append = chunk.append
    if chunk:
        yield chunk


def container_batches(paths: Iterable[str]) -> Iterator[list]:
    """Avro container files in batches, core events straight from the Avro records (`fastread`),
    the others with their "file:record" (from 1), as `container_source` names them."""
    from craps_streams.codec.fastread import read_event_batches

    for path in paths:
        yield from read_event_batches(path, (lambda path: lambda n: f"{path}:{n + 1}")(path))


def open_history_batches(spec: str | None, *, from_topic: bool = False, topic: str | None = None,
                         bootstrap: str | None = None, sl: Slice | None = None,
                         extra_files: Iterable[str] = ()) -> Iterator[list]:
    """`open_history` in batches for `Replay.feed_batch` (lists of core events and `(item,
    where)` pairs); archives and .avro files decoded by blocks (`fastread`)."""
    kind = history_kind(spec, from_topic=from_topic, extra_files=extra_files)
    if kind == "archive":
        from craps_streams.archive import iter_archive_batches

        tables = set(sl.tables) if sl is not None and sl.tables is not None else None
        return iter_archive_batches(spec, tables=tables, until=sl.until if sl is not None else None)
    if kind == "avro":
        return container_batches([spec, *extra_files])
    if kind == "jsonl":
        return jsonl_batches(spec)
    return batched(open_history(spec, from_topic=from_topic, topic=topic, bootstrap=bootstrap, sl=sl,
                                extra_files=extra_files))


def reopenable(spec: str | None, from_topic: bool) -> bool:
    """Whether a second pass over this history is possible (stdin is read once)."""
    return from_topic or spec not in (None, "-")
