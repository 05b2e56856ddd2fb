"""How a batch's rows reach each database (craps_streams/ledger/bulk.py): rows expected new go in
the fast way, and a key already there fails that attempt whole, never half of it."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select

from craps_streams.ledger import bulk, schema
from craps_streams.ledger.store import Ledger, open_engine

from tests.ledger.test_store import RECORDS, batches


def settlement_rows() -> list[dict]:
    [batch, *_] = batches(RECORDS, {}, 30)
    return [r.values for r in batch.rows if r.table == "settlements"]


def count(conn) -> int:
    return conn.execute(select(func.count()).select_from(schema.settlements)).scalar_one()


def test_rows_expected_new_are_written_and_their_keys_returned(ledger_url):
    ledger = Ledger(open_engine(ledger_url))
    ledger.migrate()
    rows = settlement_rows()
    with ledger.engine.begin() as conn:
        keys = bulk.insert_new(conn, schema.settlements, rows, expect_new=True)
    assert keys == [(v["id"],) for v in rows] and len(rows) > 0
    with ledger.engine.connect() as conn:
        assert count(conn) == len(rows)


def test_a_key_already_there_fails_rows_expected_new_on_postgresql_and_is_told_apart_on_sqlite(ledger_url):
    ledger = Ledger(open_engine(ledger_url))
    ledger.migrate()
    rows = settlement_rows()
    with ledger.engine.begin() as conn:
        bulk.insert_new(conn, schema.settlements, rows[:1])
    if ledger.engine.dialect.name == "postgresql":
        # COPY straight into the table meets the primary key: the attempt fails, and the
        # transaction with it (nothing of the rows stays)
        with pytest.raises(bulk.KeysPresent):
            with ledger.engine.begin() as conn:
                bulk.insert_new(conn, schema.settlements, rows, expect_new=True)
        with ledger.engine.connect() as conn:
            assert count(conn) == 1
        # written again without the expectation: the new rows only, a key twice kept once
        with ledger.engine.begin() as conn:
            keys = bulk.insert_new(conn, schema.settlements, rows + rows[:2])
        assert sorted(keys) == sorted((v["id"],) for v in rows[1:])
    else:  # SQLite's one statement tells the new rows from the present as it goes
        with ledger.engine.begin() as conn:
            keys = bulk.insert_new(conn, schema.settlements, rows, expect_new=True)
        assert keys == [(v["id"],) for v in rows[1:]]
    assert ledger.count("settlements") == len(rows)
