"""Settlement records split by wager into buckets on disk, so an audit of a long history holds one
bucket at a time in memory instead of every settlement of the history.

Every finding of the audit (craps_streams/replay/audit.py `compare`) is about one wager: the
settlements recorded or replayed under its id, and its other ids. A settlement's id names its wager
(`table/seq/settle/wager_id`), so the bucket of a record is a hash of its wager id, and a bucket
holds every record any finding of it needs: comparing bucket by bucket finds exactly what one
comparison of the whole would.

The files are this process's own, in a private temporary directory, written with pickle (the records'
types kept as they are: the comparison checks types as well as values) and read back in the order
they were added. What one bucket holds is buffered in memory up to a share of BUFFERED records for
all buckets, then appended to its file, so the number of buckets is not bounded by open files.
"""
from __future__ import annotations

import os
import pickle
import zlib
from pathlib import Path
from typing import Iterator

BUFFERED = 200_000  # records held in memory across every bucket before they go to disk


def bucket_of(wager_id, count: int) -> int:
    """The bucket of a wager id; a record without a string wager id (unreadable, or another output
    kind) goes to bucket 0, where the comparison reports it."""
    if type(wager_id) is not str:
        return 0
    return zlib.crc32(wager_id.encode("utf-8", "surrogatepass")) % count


class WagerBuckets:
    """`count` buckets of items under `directory` (made, mode 0700), named `name`."""

    def __init__(self, directory: Path, name: str, count: int):
        self.directory = Path(directory)
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.name = name
        self.count = count
        self.added = 0
        self._buffers: list[list] = [[] for _ in range(count)]
        self._batch = max(16, BUFFERED // count)

    def _path(self, b: int) -> Path:
        return self.directory / f"{self.name}-{b}.pickle"

    def add(self, wager_id, item) -> None:
        b = bucket_of(wager_id, self.count)
        buffer = self._buffers[b]
        buffer.append(item)
        self.added += 1
        if len(buffer) >= self._batch:
            self._flush(b)

    def _flush(self, b: int) -> None:
        buffer = self._buffers[b]
        if buffer:
            with open(self._path(b), "ab") as f:
                pickle.dump(buffer, f, protocol=pickle.HIGHEST_PROTOCOL)
            self._buffers[b] = []

    def close(self) -> None:
        for b in range(self.count):
            self._flush(b)

    def read(self, b: int) -> Iterator:
        """Bucket `b`'s items in the order they were added; its file removed once read."""
        path = self._path(b)
        if path.exists():
            with open(path, "rb") as f:
                while True:
                    try:
                        batch = pickle.load(f)  # noqa: S301 - this process's own file, in its private directory
                    except EOFError:
                        break
                    yield from batch
            os.unlink(path)
        yield from self._buffers[b]
        self._buffers[b] = []


class ReplayedBuckets(WagerBuckets):
    """The replayed settlements (id -> record), as `replay_settlements` fills a dict."""

    def __setitem__(self, settlement_id: str, record: dict) -> None:
        self.add(record.get("wager_id"), record)

    def by_id(self, b: int) -> dict:
        """Bucket `b` as the comparison takes it: settlement id -> record, a later record under the
        same id in the place of the first (as a dict filled in replay order holds it)."""
        return {r["id"]: r for r in self.read(b)}
