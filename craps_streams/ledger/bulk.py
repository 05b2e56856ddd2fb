"""A batch's many rows written the way each database takes them fastest: the ledger's only
dialect-specific code (craps_streams/ledger/store.py and books.py say what to write, this module
how, inside the caller's transaction).

    insert_new(conn, table, rows)   the rows not there yet (ON CONFLICT DO NOTHING); the keys of
                                    those that were new; with `expect_new`, KeysPresent when
                                    one was there (PostgreSQL: the rows COPYed straight in)
    upsert(conn, books)             the books' rows (`BookRows`, one per key) added to what they hold
    move_positions(conn, ...)       the partitions' positions moved past a batch, where they are at its start

PostgreSQL takes a batch's rows in a few statements, never row by row: the record rows by COPY
straight into their table when they are expected new (a batch read once, nearly every batch), or
else into a temporary table and one INSERT ... SELECT ... ON CONFLICT DO NOTHING (a multi-row
VALUES statement of thousands of parameters cost psycopg more to parse than the server to run),
a book's rows as one array per
column, unnested side by side into an INSERT ... ON CONFLICT DO UPDATE, the four books' in one
statement (run row by row, as executemany does, the server's work on a batch's hundreds of book
rows was most of the write; and each statement is a round trip, long on a loaded machine).
SQLite, in the process, runs one prepared statement over the rows (the driver's executemany),
each row's parameters converted by SQLAlchemy's own types (a date as the text SQLAlchemy reads
back): building and binding SQLAlchemy's statements per row took most of the write's CPU.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter

from sqlalchemy import Table, bindparam, case, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError


def _columns_sql(names) -> str:
    return ", ".join(f'"{n}"' for n in names)


def _tuple_of(names: list[str]):
    """A row's values of `names`, as a tuple (itemgetter gives a lone value for one name)."""
    if len(names) == 1:
        return lambda v, name=names[0]: (v[name],)
    return itemgetter(*names)


def _key_names(table) -> list[str]:
    return [c.name for c in table.primary_key.columns]


@lru_cache(maxsize=64)
def _parameters_of(table, names: tuple, dialect):
    """A row's parameters for `names` (columns of `table`), each converted as SQLAlchemy binds its
    column's type on `dialect`."""
    take = _tuple_of(list(names))
    converts = [(i, table.c[n].type.bind_processor(dialect)) for i, n in enumerate(names)]
    converts = [(i, f) for i, f in converts if f is not None]
    if not converts:
        return take

    def parameters_of(v: dict) -> tuple:
        row = list(take(v))
        for i, f in converts:
            row[i] = f(row[i])
        return tuple(row)

    return parameters_of


def _check(conn: Connection) -> str:
    dialect = conn.dialect.name
    if dialect not in ("sqlite", "postgresql"):
        raise ValueError(f"the ledger runs on SQLite or PostgreSQL, not {dialect}")
    return dialect


@contextmanager
def _driver_errors(conn: Connection, statement: str):
    """The driver's errors on its own cursor (COPY has no SQLAlchemy form) raised as SQLAlchemy's
    DBAPIError, as every other statement's are: the service retries a batch the database failed
    (a server restarted mid-COPY), whichever statement met it."""
    error = conn.dialect.loaded_dbapi.Error
    try:
        yield
    except error as e:
        raise DBAPIError.instance(statement, None, e, error,
                                  connection_invalidated=conn.dialect.is_disconnect(e, None, None)) from e


@lru_cache(maxsize=16)
def _copy_types(table) -> list[str]:
    """The PostgreSQL type of each column, as COPY's binary format is told them."""
    dialect = postgresql.dialect()
    return [c.type.compile(dialect=dialect).split("(")[0].lower() for c in table.columns]


class KeysPresent(RuntimeError):
    """Rows expected new were not: their transaction is lost, to be written again without the
    expectation (`insert_new`)."""


def insert_new(conn: Connection, table, rows: list[dict], expect_new: bool = False) -> list[tuple]:
    """Insert the rows not there yet; returns the keys of those that were new. `expect_new`: the
    rows are expected all new and distinct; on PostgreSQL they are then COPYed straight into the
    table (no staging table, no second pass over the rows: the server's work on a batch halved),
    and a key already there (or twice in the rows) raises KeysPresent, the transaction failed.
    SQLite's one statement tells new from present as it goes, so it takes no expectation."""
    if _check(conn) == "sqlite":
        return _insert_new_sqlite(conn, table, rows)
    with _driver_errors(conn, f"COPY {table.name}"):
        if expect_new:
            return _copy_new_postgresql(conn, table, rows)
        return _insert_new_postgresql(conn, table, rows)


def _copy_rows(cursor, table, target: str, rows: list[dict]) -> None:
    names = [c.name for c in table.columns]
    row_of = _tuple_of(names)
    # The binary format: each value dumped by its type in C, half the client's time of the text
    # format (whose every value is formatted and escaped as text), and nothing for the server to parse.
    with cursor.copy(f"COPY {target} ({_columns_sql(names)}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(_copy_types(table))
        for v in rows:
            copy.write_row(row_of(v))


def _copy_new_postgresql(conn: Connection, table, rows: list[dict]) -> list[tuple]:
    unique = conn.dialect.loaded_dbapi.errors.UniqueViolation
    cursor = conn.connection.driver_connection.cursor()
    try:
        _copy_rows(cursor, table, table.name, rows)
    except unique as e:
        raise KeysPresent(f"{table.name}: {e}") from e
    key_of = _tuple_of(_key_names(table))
    return [key_of(v) for v in rows]


def _insert_new_postgresql(conn: Connection, table, rows: list[dict]) -> list[tuple]:
    names = [c.name for c in table.columns]
    keys = _columns_sql(_key_names(table))
    staging = f"ledger_staging_{table.name}"
    cursor = conn.connection.driver_connection.cursor()
    # ON COMMIT DELETE ROWS: the staging rows go at the commit (a rollback takes them too), and a
    # transaction inserts into each table once.
    cursor.execute(f"CREATE TEMPORARY TABLE IF NOT EXISTS {staging} "
                   f"(LIKE {table.name} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS")
    columns = _columns_sql(names)
    _copy_rows(cursor, table, staging, rows)
    # A key twice in the rows (a record read twice in one batch) is kept once, the first: DO NOTHING
    # skips a row whose key the same statement inserted (no sort of the rows by key, as DISTINCT
    # ON took). The keys of the new rows come back only when some were not new (after a re-read):
    # otherwise the answer is one NULL, not a batch's thousands of keys.
    cursor.execute(f"WITH new AS (INSERT INTO {table.name} ({columns}) SELECT {columns} "
                   f"FROM {staging} ON CONFLICT DO NOTHING RETURNING {keys}) "
                   f"SELECT CASE WHEN count(*) = %s THEN NULL ELSE coalesce(json_agg(json_build_array({keys})), '[]') END FROM new",
                   (len(rows),))
    [(new,)] = cursor.fetchall()
    if new is None:
        key_of = _tuple_of(_key_names(table))
        return [key_of(v) for v in rows]
    return [tuple(k) for k in new]


@lru_cache(maxsize=4)
def _move_statement(table):
    """A partition's position moved from b_start to b_end, where it is at b_start."""
    return update(table).where((table.c.topic == bindparam("b_topic")) & (table.c.partition == bindparam("b_partition")) &
                               (table.c.next_offset == bindparam("b_start"))).values(next_offset=bindparam("b_end"))


def move_positions(conn: Connection, table, spans: list) -> list:
    """Each partition's position (`table`: consumed_offsets) moved from its span's start to its
    end where it is at the start; returns the spans not moved (a partition without a position
    yet, or one not at the start: another ledger's), whose positions are as they were. `spans`:
    [((topic, partition), (start, end)), ...]. One statement on PostgreSQL (a round trip, where a
    savepoint and its release took two more); on SQLite, one prepared statement over the spans."""
    if _check(conn) == "postgresql":
        with _driver_errors(conn, f"UPDATE {table.name}"):
            return _move_positions_postgresql(conn, table, spans)
    moves = [{"b_topic": topic, "b_partition": partition, "b_start": start, "b_end": end}
             for (topic, partition), (start, end) in spans]
    savepoint = conn.begin_nested()
    if conn.execute(_move_statement(table), moves).rowcount == len(moves):
        savepoint.commit()
        return []
    savepoint.rollback()
    return spans


def _move_positions_postgresql(conn: Connection, table, spans: list) -> list:
    cursor = conn.connection.driver_connection.cursor()
    cursor.execute(f'UPDATE {table.name} AS c SET next_offset = m.end_at '
                   f'FROM unnest(%s::text[], %s::int[], %s::bigint[], %s::bigint[]) AS m(topic, part, start_at, end_at) '
                   f'WHERE c.topic = m.topic AND c."partition" = m.part AND c.next_offset = m.start_at '
                   f'RETURNING c.topic, c."partition"',
                   [[t for (t, _), _ in spans], [p for (_, p), _ in spans],
                    [a for _, (a, _) in spans], [b for _, (_, b) in spans]])
    moved = set(map(tuple, cursor.fetchall()))
    return [span for span in spans if span[0] not in moved]


@lru_cache(maxsize=16)
def _insert_sqlite_statement(table) -> str:
    names = [c.name for c in table.columns]
    return (f'INSERT INTO "{table.name}" ({_columns_sql(names)}) '
            f'VALUES ({", ".join("?" * len(names))}) ON CONFLICT DO NOTHING')


def _insert_new_sqlite(conn: Connection, table, values: list[dict]) -> list[tuple]:
    """The rows new are those the database changed: all of them (the case but after a re-read),
    or else the rows are undone to a savepoint and written one by one, each row's change telling
    new from present."""
    statement = _insert_sqlite_statement(table)
    key_of = _tuple_of(_key_names(table))
    parameters_of = _parameters_of(table, tuple(c.name for c in table.columns), conn.dialect)
    rows = [parameters_of(v) for v in values]
    driver = conn.connection.driver_connection
    changes = driver.total_changes
    conn.exec_driver_sql("SAVEPOINT ledger_rows")
    conn.exec_driver_sql(statement, rows)  # through SQLAlchemy: its errors, as the service expects
    if driver.total_changes - changes == len(rows):
        conn.exec_driver_sql("RELEASE ledger_rows")
        return [key_of(v) for v in values]
    conn.exec_driver_sql("ROLLBACK TO ledger_rows")
    conn.exec_driver_sql("RELEASE ledger_rows")
    return [key_of(v) for v, row in zip(values, rows) if conn.exec_driver_sql(statement, row).rowcount == 1]


@dataclass(frozen=True)
class BookRows:
    """Rows (one per key) to add to a book: a key new is inserted; a present one has its columns
    `add` summed, `replace` replaced, `least` / `greatest` kept at the lesser / greater."""
    table: Table
    rows: list
    add: tuple = ()
    replace: tuple = ()
    least: tuple = ()
    greatest: tuple = ()

    @property
    def shape(self) -> tuple:
        return self.table, self.add, self.replace, self.least, self.greatest


@lru_cache(maxsize=64)
def _upsert_statement(dialect: str, shape: tuple, prefix: str = ""):
    # Built once per book: SQLAlchemy then finds its compiled form by the statement's cache key.
    table, add, replace, least, greatest = shape
    names = [c.name for c in table.columns]
    if dialect == "postgresql":
        insert = postgresql.insert(table).from_select(names, select(
            *(func.unnest(bindparam(prefix + n, type_=postgresql.ARRAY(table.c[n].type))) for n in names)))
    else:
        insert = sqlite.insert(table).values({n: bindparam(n) for n in names})
    new = insert.excluded
    changes = {c: table.c[c] + new[c] for c in add}
    changes.update({c: new[c] for c in replace})
    changes.update({c: case((new[c] < table.c[c], new[c]), else_=table.c[c]) for c in least})
    changes.update({c: case((new[c] > table.c[c], new[c]), else_=table.c[c]) for c in greatest})
    return insert.on_conflict_do_update(index_elements=_key_names(table), set_=changes)


@lru_cache(maxsize=32)
def _postgresql_upserts(shapes: tuple):
    """The books' upserts as one statement: each but the last a data-modifying WITH of it (the
    books are distinct tables, so no row is changed twice), its parameters named by its table."""
    statements = [_upsert_statement("postgresql", shape, f"{shape[0].name}__") for shape in shapes]
    return statements[-1].add_cte(*(s.cte(f"book_{i}") for i, s in enumerate(statements[:-1])))


@lru_cache(maxsize=32)
def _sqlite_upsert(statement, dialect) -> tuple[str, tuple]:
    """The statement's SQL on SQLite and its parameters' names, in order."""
    compiled = statement.compile(dialect=dialect)
    return compiled.string, tuple(compiled.positiontup)


def upsert(conn: Connection, books: list[BookRows]) -> None:
    """Add each book's rows to it. PostgreSQL: one statement for them all, one round trip."""
    books = [b for b in books if b.rows]
    if not books:
        return
    if _check(conn) == "postgresql":
        statement = _postgresql_upserts(tuple(b.shape for b in books))
        conn.execute(statement, {f"{b.table.name}__{c.name}": [r[c.name] for r in b.rows]
                                 for b in books for c in b.table.columns})
        return
    for b in books:
        sql, order = _sqlite_upsert(_upsert_statement("sqlite", b.shape), conn.dialect)
        parameters_of = _parameters_of(b.table, order, conn.dialect)
        conn.exec_driver_sql(sql, [parameters_of(r) for r in b.rows])
