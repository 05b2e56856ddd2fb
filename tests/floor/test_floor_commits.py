"""The floor view's commit position never passes a record whose fold still waits for its changelog
record (craps_streams/floor/app.py, `ChangelogWrites` and `_ReadCommittedConsumer._new_offset`), where
Faust's own reckoning would: it lets a single unacked offset right after its last commit go (it
takes it for a transaction marker), and before its first commit it checks nothing. And one commit
passes every transaction marker read (`_add_gap`), where Faust's gets past one marker per commit on
a transactional topic, its acked offsets growing without end. Computed on
Faust's own bookkeeping (acked offsets, gaps, committed offsets), without a broker; the kill -9 of
a view on the broker is tests/floor/test_floor_view_kafka.py."""
from __future__ import annotations

import asyncio
from collections import defaultdict
from types import SimpleNamespace

import pytest
from faust.transport.drivers import aiokafka as faust_aiokafka
from faust.types import TP
from intervaltree import IntervalTree

from craps_streams.floor import app as floor_app

SETTLEMENTS = TP("t.settlements", 3)
OTHER = TP("t.settlements", 4)


def consumer(acked: list[int], committed: int | None = None, tp: TP = SETTLEMENTS):
    c = object.__new__(floor_app._ReadCommittedConsumer)
    c._acked, c._acked_index = defaultdict(list), defaultdict(set)
    c._gap, c._committed_offset = defaultdict(IntervalTree), defaultdict(lambda: None)
    c._acked[tp].extend(acked)
    c._acked_index[tp].update(acked)
    if committed is not None:
        c._committed_offset[tp] = committed
    return c


@pytest.fixture
def hold(monkeypatch):
    """hold(tp, offset): a table's fold from that record waits for its changelog record."""
    waiting: dict = {}
    monkeypatch.setattr(floor_app.settlement_books, "waiting", waiting)

    def held(tp: TP, offset: int, table: str = "T001") -> None:
        waiting[table] = (SimpleNamespace(tp=tp, offset=offset), 0.0)
    held.release = lambda table="T001": waiting.pop(table)
    return held


def test_faust_alone_commits_past_a_single_unacked_record():
    # The premise: the record at 101 is not acked, yet Faust's reckoning commits 104.
    c = consumer([102, 103], committed=101)
    assert faust_aiokafka.Consumer._new_offset(c, SETTLEMENTS) == 104


def test_a_held_record_right_after_the_commit_stops_it(hold):
    hold(SETTLEMENTS, 101)
    c = consumer([102, 103], committed=101)
    assert c._new_offset(SETTLEMENTS) is None  # nothing to commit: 101 is still the next record
    assert sorted(c._acked[SETTLEMENTS]) == [102, 103]  # the later acks wait, kept
    hold.release()
    c._acked[SETTLEMENTS].append(101)  # its changelog record written: acked
    assert c._new_offset(SETTLEMENTS) == 104


def test_before_the_first_commit_the_held_record_is_the_limit(hold):
    hold(SETTLEMENTS, 50)
    c = consumer([47, 48, 49, 51, 52])
    assert c._new_offset(SETTLEMENTS) == 50  # up to the held record, not past it
    assert sorted(c._acked[SETTLEMENTS]) == [51, 52]


def test_the_lowest_held_record_of_the_partition_is_the_limit(hold):
    hold(SETTLEMENTS, 60, "T001")
    hold(SETTLEMENTS, 55, "T002")
    hold(OTHER, 10, "T003")  # another partition's hold does not limit this one
    c = consumer([50, 51, 52, 53, 54, 56, 57, 58, 59, 61], committed=50)
    assert c._new_offset(SETTLEMENTS) == 55


def test_without_a_hold_faust_reckons_as_before(hold):
    c = consumer([10, 11, 12, 14], committed=10)
    assert c._new_offset(SETTLEMENTS) == 13


async def read_transactional(c, tp: TP, records: list[int], read_from: int | None = None) -> None:
    """Faust's drain loop over `records` (offsets read; the ones between are markers): it notes a
    gap from one past the last offset read up to the record just read, as `_drain_messages` does."""
    last = read_from
    for offset in records:
        if last is not None and offset - last > 1:
            await c._add_gap(tp, last + 1, offset)
        last = offset


def transactions(first: int, count: int, records_each: int) -> list[int]:
    """The offsets of `count` committed transactions of `records_each` records, each followed by
    its commit marker (one offset, never delivered to a read_committed consumer)."""
    offsets, offset = [], first
    for _ in range(count):
        offsets.extend(range(offset, offset + records_each))
        offset += records_each + 1
    return offsets


def test_faust_alone_gets_past_one_marker_per_commit():
    async def scenario():
        # The premise: Faust's gap takes in the record read after it, so that record is acked twice
        # and its reckoning stops at the repeat: ten transactions read and acked, one commit passes one.
        plain = consumer([], committed=0)
        records = transactions(0, 10, 3)
        for last, offset in zip(records, records[1:]):
            if offset - last > 1:
                await faust_aiokafka.Consumer._add_gap(plain, SETTLEMENTS, last + 1, offset)
        plain._acked[SETTLEMENTS].extend(records)
        assert faust_aiokafka.Consumer._new_offset(plain, SETTLEMENTS) == 5  # 5 of 40 offsets
    asyncio.run(scenario())


def test_one_commit_passes_every_marker_read():
    async def scenario():
        c = consumer([], committed=0)
        records = transactions(0, 10, 3)  # records 0-2, marker 3, records 4-6, marker 7, ...
        await read_transactional(c, SETTLEMENTS, records)
        c._acked[SETTLEMENTS].extend(records)
        assert c._new_offset(SETTLEMENTS) == records[-1] + 1  # 39: the last record's next offset
        assert c._acked[SETTLEMENTS] == [] and not c._gap[SETTLEMENTS]  # nothing left to grow
    asyncio.run(scenario())


def test_a_marker_right_at_the_commit_is_passed(hold):
    async def scenario():
        # Committed 3 (the next offset to read) is the marker of the transaction before.
        c = consumer([], committed=3)
        await read_transactional(c, SETTLEMENTS, [4, 5, 6], read_from=2)
        c._acked[SETTLEMENTS].extend([4, 5, 6])
        assert c._new_offset(SETTLEMENTS) == 7
    asyncio.run(scenario())


def test_markers_after_a_held_record_wait_with_it(hold):
    async def scenario():
        c = consumer([], committed=0)
        records = transactions(0, 4, 3)  # 0-2, 4-6, 8-10, 12-14
        await read_transactional(c, SETTLEMENTS, records)
        hold(SETTLEMENTS, 5)
        c._acked[SETTLEMENTS].extend(o for o in records if o != 5)
        assert c._new_offset(SETTLEMENTS) == 5  # the records and the marker before the held one
        c._committed_offset[SETTLEMENTS] = 5  # committed (Faust's _commit_offsets)
        hold.release()
        c._acked[SETTLEMENTS].append(5)
        assert c._new_offset(SETTLEMENTS) == 15
    asyncio.run(scenario())


def test_a_gap_read_again_after_a_seek_is_noted_once():
    async def scenario():
        c = consumer([], committed=0)
        records = transactions(0, 3, 2)
        await read_transactional(c, SETTLEMENTS, records)
        await read_transactional(c, SETTLEMENTS, records)  # the same records read again
        assert sorted((i.begin, i.end) for i in c._gap[SETTLEMENTS]) == [(2, 3), (5, 6)]
        c._acked[SETTLEMENTS].extend(records)
        assert c._new_offset(SETTLEMENTS) == 8
    asyncio.run(scenario())


def test_the_views_consumer_reads_committed_and_waits_briefly_at_the_broker():
    # Faust builds it read_uncommitted with a 1.5 s fetch wait; the view's thread changes both
    # before aiokafka's start() reads them (no connection is made here).
    async def scenario():
        kafka = floor_app.app.consumer._thread._create_worker_consumer(floor_app.app.transport)
        try:
            assert kafka._isolation_level == "read_committed"
            assert kafka._fetch_max_wait_ms == floor_app.FETCH_WAIT_MS <= 100
        finally:
            await kafka.stop()
    asyncio.run(scenario())
