"""The ledger's one write: a batch's rows and the offsets after them, in one database transaction.

Exactly once (docs/operating/ledger.md): the position of every partition the ledger reads is a
row of `consumed_offsets`, moved in the same transaction as the rows its records made. A process
killed at any instant leaves either the batch and its new positions or neither; a restart reads
the positions back (`positions()`) and asks Kafka for what follows, so nothing is lost and nothing
written twice. The move is conditional (`next_offset = the batch's start`): a second ledger that
read the same records (a rebalance, a process believed dead) finds the position already moved and
its batch is refused whole (`StaleBatch`), so it re-reads from where the database says. The
primary keys on the outputs' deterministic ids are the second guard: a row already present is
kept, never doubled (ON CONFLICT DO NOTHING), and counted.

One code path for SQLite and PostgreSQL (SQLAlchemy Core); how a batch's many rows reach each
database (COPY on PostgreSQL, the driver's executemany on SQLite) is craps_streams/ledger/bulk.py's.
SQLite runs in WAL mode with synchronous=FULL: a commit that returned survives a power loss, not
only a kill -9 (SQLite's `PRAGMA synchronous` documentation: NORMAL syncs
the WAL only at checkpoints), and BEGIN IMMEDIATE,
so two writers queue on the lock instead of failing when the reader upgrades.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import create_engine, event, func, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from craps_streams.ledger import books, bulk, migrate, schema
from craps_streams.ledger.rows import Row
from craps_streams.report.calendar import GamingCalendar

TABLES = {t.name: t for t in schema.RECORD_TABLES}


class StaleBatch(RuntimeError):
    """A partition's stored position is not where the batch starts: another ledger moved it."""


class CalendarMismatch(ValueError):
    """The ledger's gaming days were computed with another calendar than the one asked for."""


@dataclass
class Batch:
    """Rows made from records of some partitions, and each partition's span [start, end) of
    offsets they came from (records that made no row count: their offsets move too)."""
    rows: list[Row] = field(default_factory=list)
    spans: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)

    def begin(self, topic: str, partition: int, start: int) -> None:
        """The partition's span starts at `start` (its stored position), whatever offset its
        first record has."""
        self.spans.setdefault((topic, partition), (start, start))

    def extend(self, topic: str, partition: int, offset: int, rows: list[Row]) -> None:
        """A record at `offset` and the rows it made. Offsets may jump forward: a read_committed
        reader never sees transaction markers or aborted records."""
        self.advance(topic, partition, offset)
        start, _ = self.spans[(topic, partition)]
        self.spans[(topic, partition)] = (start, offset + 1)
        self.rows.extend(rows)

    def extend_run(self, topic: str, partition: int, first: int, last: int, rows: list[Row]) -> None:
        """Records of one partition at offsets `first` to `last` (rising), and the rows they made."""
        self.advance(topic, partition, first)
        start, _ = self.spans[(topic, partition)]
        self.spans[(topic, partition)] = (start, last + 1)
        self.rows.extend(rows)

    def advance(self, topic: str, partition: int, offset: int) -> None:
        """The partition's next offset is at least `offset` (the reader's position after a poll)."""
        start, end = self.spans.setdefault((topic, partition), (offset, offset))
        if offset < end:
            raise ValueError(f"{topic}[{partition}]: offset {offset} is behind {end}")
        self.spans[(topic, partition)] = (start, offset)


@dataclass(frozen=True)
class Written:
    new: dict[str, int]  # table -> rows written
    present: dict[str, int]  # table -> rows already there (the primary key's guard)


def open_engine(url: str, reader: bool = False) -> Engine:
    """An engine for a ledger database URL (sqlite:///path, postgresql+psycopg://...). A
    `reader`'s transactions only read: on SQLite they take no write lock (a report never holds
    up the ledger's writes) and read one snapshot (WAL); on PostgreSQL they are REPEATABLE READ,
    one snapshot too."""
    if reader and url.startswith("postgresql"):
        return create_engine(url, pool_pre_ping=True, isolation_level="REPEATABLE READ")
    engine = create_engine(url, pool_pre_ping=True)
    if engine.dialect.name == "sqlite":
        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):
            dbapi_connection.isolation_level = None  # SQLAlchemy's BEGIN below, not the driver's
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(connection):
            connection.exec_driver_sql("BEGIN" if reader else "BEGIN IMMEDIATE")
    return engine


class Ledger:
    """A ledger database: its positions, its calendar, and the transactional write of a batch."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def migrate(self) -> None:
        migrate.upgrade(self.engine)

    def bind_calendar(self, calendar: GamingCalendar) -> None:
        """Record the calendar at the first start; refuse another one later (the stored gaming
        days would mix two calendars)."""
        wanted = {"zone": calendar.zone, "day_start": f"{calendar.day_start:%H:%M}",
                  "shifts": ",".join(f"{n}={c:%H:%M}" for n, c in calendar.shifts)}
        with self.engine.begin() as conn:
            stored = conn.execute(select(schema.calendar).where(schema.calendar.c.id == 1)).mappings().first()
            if stored is None:
                conn.execute(schema.calendar.insert().values(id=1, **wanted))
            elif {k: stored[k] for k in wanted} != wanted:
                raise CalendarMismatch(f"the ledger's gaming days were computed with {dict(stored)}, "
                                       f"not {wanted}: use a new ledger database for another calendar")

    def positions(self) -> dict[tuple[str, int], int]:
        """(topic, partition) -> the next offset to read, as the last committed batch left it."""
        t = schema.consumed_offsets
        with self.engine.connect() as conn:
            return {(r.topic, r.partition): r.next_offset for r in conn.execute(select(t))}

    def write(self, batch: Batch) -> Written:
        """The batch's rows and its partitions' new positions, all or nothing. Raises StaleBatch
        (nothing written) when a partition's position is not where the batch starts.

        The rows are first written as all new, the way each database takes them fastest
        (bulk.insert_new's `expect_new`); when some were there already (a record read twice: after
        a rebalance, or twice in one batch), that transaction fails whole and the batch is written
        again, each row kept only where its key is new."""
        try:
            return self._write(batch, expect_new=True)
        except bulk.KeysPresent:
            return self._write(batch, expect_new=False)

    def _write(self, batch: Batch, expect_new: bool) -> Written:
        new: dict[str, int] = defaultdict(int)
        present: dict[str, int] = defaultdict(int)
        by_table: dict[str, list[dict]] = defaultdict(list)
        for row in batch.rows:
            by_table[row.table].append(row.values)
        try:
            with self.engine.begin() as conn:
                self._move_all(conn, sorted(batch.spans.items()))
                for table in schema.RECORD_TABLES:  # alerts before the wagers they name
                    values = by_table.get(table.name)
                    if values:
                        keys = bulk.insert_new(conn, table, values, expect_new)
                        new[table.name] += len(keys)
                        present[table.name] += len(values) - len(keys)
                        if table is schema.settlements and keys:
                            # the report's books, from the settlements new to the ledger only,
                            # each once (a settlement twice in the batch is one new row)
                            if len(keys) < len(values):
                                fresh = {k[0] for k in keys}
                                values = list({v["id"]: v for v in reversed(values) if v["id"] in fresh}.values())
                            books.book(conn, values)
        except IntegrityError as e:  # two ledgers inserting the first position of a partition
            raise StaleBatch(f"a partition's first position was written by another ledger: {e.orig}") from e
        return Written(dict(new), dict(present))

    @classmethod
    def _move_all(cls, conn: Connection, spans: list) -> None:
        """Every partition's position from the batch's start to its end (bulk.move_positions: one
        statement); those it did not move (a first position, or another ledger's), one by one."""
        if not spans:
            return
        for (topic, partition), (start, end) in bulk.move_positions(conn, schema.consumed_offsets, spans):
            cls._move(conn, topic, partition, start, end)

    @staticmethod
    def _move(conn: Connection, topic: str, partition: int, start: int, end: int) -> None:
        t = schema.consumed_offsets
        where = (t.c.topic == topic) & (t.c.partition == partition)
        moved = conn.execute(update(t).where(where & (t.c.next_offset == start)).values(next_offset=end)).rowcount
        if moved == 1:
            return
        stored = conn.execute(select(t.c.next_offset).where(where)).scalar()
        if stored is not None:
            raise StaleBatch(f"{topic}[{partition}]: the ledger is at {stored}, the batch starts at {start}")
        conn.execute(t.insert().values(topic=topic, partition=partition, next_offset=end))

    def count(self, table: str) -> int:
        with self.engine.connect() as conn:
            return conn.execute(select(func.count()).select_from(TABLES[table])).scalar_one()
