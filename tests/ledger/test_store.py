"""The store's exactly-once on SQLite and on a real PostgreSQL: rows and positions in one
transaction; a crash between or inside batches loses nothing and doubles nothing."""
from __future__ import annotations

import collections
import signal
import subprocess
import sys
import time

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import ProgrammingError

from craps_streams.ledger import schema
from craps_streams.ledger.rows import rows_of
from craps_streams.ledger.store import Batch, CalendarMismatch, Ledger, StaleBatch, open_engine
from craps_streams.report.calendar import GamingCalendar

from tests.conftest import ROOT
from tests.ledger.records import floor_records

CAL = GamingCalendar()
RECORDS = floor_records()


def fresh(url: str) -> Ledger:
    ledger = Ledger(open_engine(url))
    ledger.migrate()
    ledger.bind_calendar(CAL)
    return ledger


def batches(records, positions, size):
    """Batches of `size` records from where the positions say, as the service builds them."""
    batch = Batch()
    for topic, partition, offset, record in records:
        if offset < positions.get((topic, partition), 0):
            continue
        batch.extend(topic, partition, offset, rows_of(record, partition, offset, CAL))
        if sum(e - s for s, e in batch.spans.values()) >= size:
            yield batch
            batch = Batch()
    if batch.spans:
        yield batch


def ids(ledger: Ledger, table) -> list[str]:
    with ledger.engine.connect() as conn:
        return [r[0] for r in conn.execute(select(table.c.id))]


def expected_ids(kind: str) -> list[str]:
    return sorted(r["id"] for _, _, _, r in RECORDS if r["type"] == kind)


def test_the_floor_has_every_kind_of_record():
    kinds = collections.Counter(r["type"] for *_, r in RECORDS)
    assert kinds["WagerSettled"] > 100 and kinds["EventRejected"] > 2 and kinds["MarkerPlaced"] > 10


def test_a_crash_between_batches_resumes_where_the_database_says(ledger_url):
    first = fresh(ledger_url)
    stream = batches(RECORDS, first.positions(), 37)
    for _ in range(4):
        first.write(next(stream))
    next(stream)  # read, never written: the process dies here
    first.engine.dispose()

    second = fresh(ledger_url)  # a new process: only the database knows where it was
    positions = second.positions()
    assert sum(positions.values()) == 4 * 37
    present = collections.Counter()
    for batch in batches(RECORDS, positions, 37):
        present.update(second.write(batch).present)
    assert sum(present.values()) == 0, "a record was written again"
    settled = ids(second, schema.settlements)
    assert len(settled) == len(set(settled))
    assert sorted(settled) == expected_ids("WagerSettled")
    assert sorted(ids(second, schema.rejections)) == expected_ids("EventRejected")
    assert second.positions() == {(t, p): o + 1 for t, p, o, _ in RECORDS}


def test_a_batch_read_again_by_a_second_ledger_is_refused_whole(ledger_url):
    ledger = fresh(ledger_url)
    stream = list(batches(RECORDS, {}, 50))
    ledger.write(stream[0])
    before = ledger.count("settlements"), ledger.positions()
    with pytest.raises(StaleBatch):
        ledger.write(stream[0])  # the same records, from a ledger that had not seen the commit
    with pytest.raises(StaleBatch):
        ledger.write(stream[2])  # a batch that skips records nobody wrote
    assert (ledger.count("settlements"), ledger.positions()) == before


def test_a_row_already_present_is_kept_once_and_counted(ledger_url):
    ledger = fresh(ledger_url)
    [batch, *_] = batches(RECORDS, {}, 30)
    written = ledger.write(batch)
    again = Batch(batch.rows, {("t.other", 0): (0, 1)})  # the same rows under another position
    assert ledger.write(again).present == {k: v for k, v in written.new.items() if v}
    assert ledger.count("settlements") == written.new["settlements"]


def test_a_batch_of_rows_new_and_present_writes_and_books_the_new_only(ledger_url):
    ledger = fresh(ledger_url)
    [first, second, *_] = batches(RECORDS, {}, 30)
    written = ledger.write(first)
    mixed = Batch(first.rows + second.rows, {("t.other", 0): (0, 1)})
    result = ledger.write(mixed)
    assert result.present == {k: v for k, v in written.new.items() if v}
    assert sum(result.new.values()) == len(second.rows) > 0
    with ledger.engine.connect() as conn:
        booked = conn.execute(select(schema.line_totals.c.settled)).scalars().all()
    assert sum(booked) == ledger.count("settlements") == sum(r.table == "settlements" for r in mixed.rows)


def test_a_row_twice_in_one_batch_is_written_and_booked_once(ledger_url):
    ledger = fresh(ledger_url)
    [batch, *_] = batches(RECORDS, {}, 30)
    settled = [r for r in batch.rows if r.table == "settlements"]
    twice = Batch(batch.rows + settled, batch.spans)
    result = ledger.write(twice)
    assert result.new["settlements"] == result.present["settlements"] == len(settled) > 0
    with ledger.engine.connect() as conn:
        booked = conn.execute(select(schema.line_totals.c.settled)).scalars().all()
    assert sum(booked) == ledger.count("settlements") == len(settled)


def test_another_calendar_is_refused(ledger_url):
    fresh(ledger_url)
    with pytest.raises(CalendarMismatch):
        Ledger(open_engine(ledger_url)).bind_calendar(GamingCalendar("UTC"))


WRITER = """
import sys
from tests.ledger.test_store import RECORDS, batches, fresh
ledger = fresh(sys.argv[1])
print("ready", flush=True)
for batch in batches(RECORDS, ledger.positions(), 3):
    ledger.write(batch)
print("done", flush=True)
"""


def test_a_writer_killed_at_any_instant_leaves_rows_and_positions_agreeing(ledger_url):
    """kill -9 of a process writing small batches, three times at different instants: the rows
    are exactly those of the records before the stored positions, each once."""
    for delay in (0.3, 0.7, 1.1):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, ledger_url], cwd=ROOT, stdout=subprocess.PIPE,
                                text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        ledger = Ledger(open_engine(ledger_url))
        positions = ledger.positions()
        before = sorted(r["id"] for t, p, o, r in RECORDS
                        if r["type"] == "WagerSettled" and o < positions.get((t, p), 0))
        assert sorted(ids(ledger, schema.settlements)) == before
        ledger.engine.dispose()
    last = fresh(ledger_url)
    for batch in batches(RECORDS, last.positions(), 50):
        assert sum(last.write(batch).present.values()) == 0
    assert sorted(ids(last, schema.settlements)) == expected_ids("WagerSettled")


def test_report_lines_sum_the_settlements_money(ledger_url, request):
    ledger = fresh(ledger_url)
    for batch in batches(RECORDS, {}, 100):
        ledger.write(batch)
    settled = [r for *_, r in RECORDS if r["type"] == "WagerSettled"]
    with ledger.engine.connect() as conn:
        totals = conn.execute(text("SELECT sum(settled), sum(handle_cents), sum(collected_cents), sum(won_cents), "
                                   "sum(house_win_cents), sum(wins) + sum(losses) + sum(pushes) FROM report_lines")).one()
    collected = sum(r["stake_cents"] for r in settled if r["outcome"] == "lose")
    won = sum(r["won_cents"] for r in settled)
    assert tuple(totals) == (len(settled), sum(r["stake_cents"] for r in settled), collected, won, collected - won,
                             len(settled))
    finance = getattr(request.node, "pg_finance_url", None)
    if finance:  # PostgreSQL: finance reads, and cannot write
        engine = open_engine(finance)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT sum(settled) FROM report_lines")).scalar() == len(settled)
            with pytest.raises(ProgrammingError, match="permission denied"):
                conn.execute(text("DELETE FROM settlements"))
        engine.dispose()


def test_a_batch_the_database_refuses_mid_copy_is_a_dbapi_error_and_writes_nothing(ledger_url):
    """A value the database refuses in the rows' bulk write (on PostgreSQL its COPY, through the
    driver's own cursor) is SQLAlchemy's DBAPIError, as every other statement's failure: the
    service's retry of a failed batch catches it, and nothing of the batch is in."""
    from sqlalchemy.exc import DBAPIError

    ledger = fresh(ledger_url)
    topic, partition, offset, record = next(r for r in RECORDS if r[3]["type"] == "WagerSettled")
    batch = Batch()
    batch.extend(topic, partition, offset, rows_of({**record, "table_id": "T" * 65}, partition, offset, CAL))
    if ledger.engine.dialect.name == "sqlite":  # SQLite keeps a text longer than its declared length
        ledger.write(batch)
        assert ledger.count("settlements") == 1
        return
    with pytest.raises(DBAPIError):
        ledger.write(batch)
    assert ledger.count("settlements") == 0 and ledger.positions() == {}
