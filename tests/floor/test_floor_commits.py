"""The floor view's commit position never passes a record whose fold still waits for its changelog
record (streams/floor/app.py, `ChangelogWrites` and `_ReadCommittedConsumer._new_offset`), where
Faust's own reckoning would: it lets a single unacked offset right after its last commit go (it
takes it for a transaction marker), and before its first commit it checks nothing. Computed on
Faust's own bookkeeping (acked offsets, gaps, committed offsets), without a broker; the kill -9 of
a view on the broker is tests/floor/test_floor_view_kafka.py."""
from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace

import pytest
from faust.transport.drivers import aiokafka as faust_aiokafka
from faust.types import TP
from intervaltree import IntervalTree

from streams.floor import app as floor_app

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
