"""The stalled-LSO watch (craps_streams/app/stability.py): pure, time comes with each measurement."""
from __future__ import annotations

from craps_streams.app.stability import StableOffsetWatch


def test_no_record_above_the_stable_offset_is_no_stall():
    w = StableOffsetWatch()
    assert w.observe("p0", 10, 10, 0.0) == 0.0
    assert w.observe("p0", 10, 10, 500.0) == 0.0


def test_an_offset_that_stands_still_under_waiting_records_ages():
    w = StableOffsetWatch()
    assert w.observe("p0", 12, 10, 100.0) == 0.0  # first seen there
    assert w.observe("p0", 15, 10, 105.0) == 5.0
    assert w.observe("p0", 30, 10, 190.0) == 90.0


def test_an_offset_that_moves_restarts_the_age_and_one_that_catches_up_ends_it():
    w = StableOffsetWatch()
    w.observe("p0", 12, 10, 0.0)
    assert w.observe("p0", 14, 11, 50.0) == 0.0  # moved: transactions are ending
    assert w.observe("p0", 16, 11, 80.0) == 30.0
    assert w.observe("p0", 16, 16, 85.0) == 0.0  # caught up
    assert w.observe("p0", 18, 16, 90.0) == 0.0  # a new transaction in flight: a new count
    assert w.observe("p0", 18, 16, 91.0) == 1.0


def test_partitions_are_watched_apart_and_forgotten_when_given_up():
    w = StableOffsetWatch()
    w.observe("p0", 5, 1, 0.0)
    w.observe("p1", 5, 5, 0.0)
    assert w.observe("p0", 5, 1, 10.0) == 10.0
    assert w.observe("p1", 9, 5, 10.0) == 0.0
    w.forget("p0")
    assert w.observe("p0", 5, 1, 20.0) == 0.0  # a new owner's count starts afresh
