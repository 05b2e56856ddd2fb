"""The books' tally: a batch's tally is the merge of its polls' (the reader's thread tallies each
poll), whatever the split, and booking a tally books what booking its settlements does."""
from __future__ import annotations

from sqlalchemy import select

from craps_streams.ledger import books, schema
from craps_streams.ledger.rows import Row, rows_of
from craps_streams.ledger.store import Batch, Ledger, open_engine
from craps_streams.report.calendar import GamingCalendar
from tests.ledger.records import floor_records

CAL = GamingCalendar()
SETTLEMENTS = [row.values for topic, partition, offset, record in floor_records()
               for row in rows_of(record, partition, offset, CAL) if row.table == "settlements"]


def fields(t: books.Tally) -> tuple:
    return t.totals, t.partial, dict(t.outcomes), t.seqs


def test_the_tally_of_polls_merged_is_the_tally_of_them_all():
    whole = fields(books.tally(SETTLEMENTS))
    n = len(SETTLEMENTS)
    assert n > 500 and whole[1] and whole[3]
    for cut in sorted({1, 2, 7, n // 3, n // 2, n - 1, *range(0, n, 37)}):
        assert fields(books.tally(SETTLEMENTS[:cut]).merge(books.tally(SETTLEMENTS[cut:]))) == whole, cut
    polls = [SETTLEMENTS[k:k + 13] for k in range(0, n, 13)]  # a decision's settlements split across polls
    merged = books.Tally()
    for poll in polls:
        merged.merge(books.tally(poll))
    assert fields(merged) == whole


def book_rows(url: str, with_tally: bool) -> dict:
    ledger = Ledger(open_engine(url))
    ledger.migrate()
    ledger.bind_calendar(CAL)
    for k in range(0, len(SETTLEMENTS), 101):
        part = SETTLEMENTS[k:k + 101]
        batch = Batch()
        batch.begin("s", 0, k)
        batch.extend_run("s", 0, k, k + len(part) - 1, [Row("settlements", v) for v in part])
        if with_tally:
            batch.tally = books.tally(part[:50]).merge(books.tally(part[50:]))
        ledger.write(batch)
    with ledger.engine.connect() as conn:
        return {t.name: sorted(map(tuple, conn.execute(select(t)))) for t in schema.BOOK_TABLES}


def test_booking_a_tally_books_what_booking_its_settlements_does(tmp_path):
    by_rows = book_rows(f"sqlite:///{tmp_path / 'rows.db'}", with_tally=False)
    by_tally = book_rows(f"sqlite:///{tmp_path / 'tally.db'}", with_tally=True)
    assert by_rows["line_totals"] and by_rows["line_stakes"] and by_rows["open_decisions"]
    assert by_tally == by_rows
