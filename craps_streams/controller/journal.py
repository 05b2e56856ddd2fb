"""The table's journal: every event the controller acknowledged, durable before the answer.

SQLite in WAL mode with `synchronous=FULL` (docs/decisions/controller-journal.md): a commit that
returned has had its WAL frames fsynced, so it survives a power cut where the storage honours
fsync, not only a kill -9 (which `synchronous=NORMAL` would also survive). One transaction holds a
whole group of events (`append`): a burst costs one fsync, not one per event.

Tables:

    events   one row per acknowledged event: `id` the journal's order (the order the sender
             forwards in), `table_id`, `seq`, `ts`, the Kafka key and value bytes exactly as sent
             (a re-send sends the same bytes), when it was journaled and when the broker
             acknowledged it (`sent_ns`, NULL while held at the table), and the equipment's
             `request_id` for the entry when it gave one (a retry after a lost answer finds it)
    tables   per table the last seq and ts ever journaled: the gapless numbering and the
             monotone clock resume from here after a restart, even once the rows are purged;
             on a new host, seeded from what the topic already holds (`seed`)

Pure of Kafka: the sender (craps_streams/controller/sender.py) reads `unsent` and calls `mark_sent`.
One process writes a journal at a time; `resend` may be called from another process (WAL lets
readers and one writer through).
"""
from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    table_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ts INTEGER NOT NULL,
    key BLOB NOT NULL,
    value BLOB NOT NULL,
    journaled_ns INTEGER NOT NULL,
    sent_ns INTEGER,
    request_id TEXT,
    UNIQUE (table_id, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS events_request ON events (table_id, request_id) WHERE request_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_held ON events (id) WHERE sent_ns IS NULL;
CREATE INDEX IF NOT EXISTS events_sent ON events (sent_ns) WHERE sent_ns IS NOT NULL;
CREATE TABLE IF NOT EXISTS tables (
    table_id TEXT PRIMARY KEY,
    last_seq INTEGER NOT NULL,
    last_ts INTEGER NOT NULL
);
"""

MAX_RESEND = 100_000  # a day of a busy table's events


class JournalError(RuntimeError):
    """The journal cannot take the events: nothing of the group was written, none acknowledged."""


class JournalFull(JournalError):
    """The journal's disk (or its configured size limit) is full: new input is refused; every
    event already acknowledged stays in the journal."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One event to journal: its table, seq and ts, and the Kafka record's key and value bytes."""
    table_id: str
    seq: int
    ts: int
    key: bytes
    value: bytes
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class Held:
    """A journaled event the broker has not acknowledged yet (or one marked for a re-send)."""
    id: int
    table_id: str
    seq: int
    key: bytes
    value: bytes
    journaled_ns: int


class Journal:
    """The SQLite journal at `path`. `max_pages` caps the file (SQLite's max_page_count): what a
    deployment may give the journal of a shared disk, and how the tests fill a disk. `sync_full`
    false only for a connection that writes nothing a dealer was answered for (the sender's marks)."""

    def __init__(self, path: Path | str, max_pages: int | None = None, sync_full: bool = True):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: transactions are begun and committed here, explicitly.
        self._db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={'FULL' if sync_full else 'NORMAL'}")
        self._db.execute("PRAGMA busy_timeout=10000")
        if max_pages is not None:
            self._db.execute(f"PRAGMA max_page_count={int(max_pages)}")
        self._db.executescript(SCHEMA)
        self._last = {t: (s, ts) for t, s, ts in self._db.execute("SELECT table_id, last_seq, last_ts FROM tables")}

    def close(self) -> None:
        self._db.close()

    def last_seq(self, table_id: str) -> int:
        """The last seq journaled for the table (0 for a table that never sent anything)."""
        return self._last.get(table_id, (0, 0))[0]

    def last_ts(self) -> int:
        """The latest ts journaled for any table (0 for a new journal): the clock's floor."""
        return max((ts for _, ts in self._last.values()), default=0)

    def append(self, entries: list[Entry], now_ns: int | None = None) -> None:
        """Journal the group in one transaction, durable when this returns. Each table's seqs must
        continue its last seq without a gap (a caller's bug otherwise: ValueError, nothing written).
        JournalFull when the disk or the size limit is reached; JournalError on any other failure;
        in both cases nothing of the group is written."""
        if not entries:
            return
        last = dict(self._last)
        for e in entries:
            prev_seq, prev_ts = last.get(e.table_id, (0, 0))
            if e.seq != prev_seq + 1:
                raise ValueError(f"table {e.table_id}: seq {e.seq} does not follow {prev_seq}")
            last[e.table_id] = (e.seq, max(prev_ts, e.ts))
        now_ns = time.time_ns() if now_ns is None else now_ns
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT INTO events (table_id, seq, ts, key, value, journaled_ns, request_id) "
                           "VALUES (?,?,?,?,?,?,?)",
                           [(e.table_id, e.seq, e.ts, e.key, e.value, now_ns, e.request_id) for e in entries])
            db.executemany("INSERT INTO tables (table_id, last_seq, last_ts) VALUES (?,?,?) ON CONFLICT (table_id) "
                           "DO UPDATE SET last_seq = excluded.last_seq, last_ts = excluded.last_ts",
                           [(t, *last[t]) for t in {e.table_id for e in entries}])
            db.execute("COMMIT")
        except sqlite3.Error as e:
            if db.in_transaction:
                db.execute("ROLLBACK")
            if getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "full" in str(e):
                raise JournalFull(f"the journal {self.path} is full ({e}): free space on its disk") from None
            raise JournalError(f"the journal {self.path} could not be written: {e}") from None
        self._last = last

    def seed(self, starts: list[tuple[str, int, int]]) -> None:
        """Start the numbering of tables this journal holds nothing of after (last seq, last ts)
        (craps_streams/controller/seed.py: what the topic already holds, on a new host). A table
        the journal already numbers is a ValueError: nothing is written."""
        numbered = [t for t, _, _ in starts if self.last_seq(t)]
        if numbered:
            raise ValueError(f"the journal {self.path} already numbers {', '.join(numbered)}")
        if not starts:
            return
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany("INSERT INTO tables (table_id, last_seq, last_ts) VALUES (?,?,?) ON CONFLICT (table_id) "
                           "DO UPDATE SET last_seq = excluded.last_seq, last_ts = excluded.last_ts", starts)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._last.update({t: (seq, ts) for t, seq, ts in starts})

    def answered(self, table_id: str, request_id: str) -> tuple[int, int] | None:
        """(seq, ts) of the table's event journaled for `request_id`, None if there is none (or it
        is past the retention)."""
        return self._db.execute("SELECT seq, ts FROM events WHERE table_id = ? AND request_id = ?",
                                (table_id, request_id)).fetchone()

    def unsent(self, limit: int = 1000) -> list[Held]:
        """The oldest held events, in journal order (at most `limit`)."""
        return [Held(*row) for row in self._db.execute(
            "SELECT id, table_id, seq, key, value, journaled_ns FROM events WHERE sent_ns IS NULL ORDER BY id LIMIT ?",
            (limit,))]

    def mark_sent(self, ids: list[int], now_ns: int | None = None) -> None:
        """Record that the broker acknowledged these events."""
        now_ns = time.time_ns() if now_ns is None else now_ns
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany("UPDATE events SET sent_ns = ? WHERE id = ?", [(now_ns, i) for i in ids])
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def held(self) -> dict[str, tuple[int, int]]:
        """Per table with held events: (how many, the oldest's journaled_ns)."""
        return {t: (n, oldest) for t, n, oldest in self._db.execute(
            "SELECT table_id, count(*), min(journaled_ns) FROM events WHERE sent_ns IS NULL GROUP BY table_id")}

    def depth(self) -> tuple[int, int | None]:
        """(events held, the oldest's journaled_ns or None)."""
        n, oldest = self._db.execute("SELECT count(*), min(journaled_ns) FROM events WHERE sent_ns IS NULL").fetchone()
        return n, oldest

    def purge_sent(self, before_ns: int) -> int:
        """Delete the events the broker acknowledged before `before_ns` (the retention): -> how
        many. Held events are never purged; the per-table last seq stays."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            n = db.execute("DELETE FROM events WHERE sent_ns IS NOT NULL AND sent_ns < ?", (before_ns,)).rowcount
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return n

    def resend(self, table_id: str, from_seq: int, to_seq: int) -> tuple[int, list[int]]:
        """Mark the table's events from_seq..to_seq (inclusive) for sending again: -> (how many
        were marked, the seqs of the range no longer in the journal: purged by the retention,
        or never journaled)."""
        if to_seq < from_seq:
            raise ValueError(f"an empty range: {from_seq}..{to_seq}")
        if to_seq - from_seq >= MAX_RESEND:
            raise ValueError(f"at most {MAX_RESEND:,} events a re-send: ask for {from_seq}..{to_seq} in parts")
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            present = [s for (s,) in db.execute(
                "SELECT seq FROM events WHERE table_id = ? AND seq BETWEEN ? AND ?", (table_id, from_seq, to_seq))]
            db.execute("UPDATE events SET sent_ns = NULL WHERE table_id = ? AND seq BETWEEN ? AND ?",
                       (table_id, from_seq, to_seq))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        have = set(present)
        missing = [s for s in range(from_seq, to_seq + 1) if s not in have]
        return len(present), missing

    def events(self, table_id: str) -> list[tuple[int, int, bytes, int | None]]:
        """The table's journaled events: (seq, ts, value, sent_ns), by seq (tests and inspection)."""
        return list(self._db.execute("SELECT seq, ts, value, sent_ns FROM events WHERE table_id = ? ORDER BY seq",
                                     (table_id,)))
