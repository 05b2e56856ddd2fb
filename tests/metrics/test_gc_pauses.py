"""The collector's pauses are timed into craps_gc_pause_seconds by generation, and the start-up's
objects are frozen out of later collections (craps_streams/metrics/gc_pauses.py)."""
from __future__ import annotations

import gc

import pytest

from craps_streams.metrics.exporter import FloorMetrics
from craps_streams.metrics.gc_pauses import GcPauses, freeze_start_up


def _count(metrics, generation: str) -> float:
    return metrics.registry.get_sample_value("craps_gc_pause_seconds_count", {"generation": generation}) or 0.0


def test_each_collection_is_timed_by_generation_while_installed():
    metrics = FloorMetrics()
    pauses = GcPauses(metrics.gc_pauses).install()
    try:
        gc.collect(2)
        gc.collect(0)
        assert _count(metrics, "2") >= 1 and _count(metrics, "0") >= 1
        assert metrics.registry.get_sample_value("craps_gc_pause_seconds_sum", {"generation": "2"}) > 0
        with pytest.raises(RuntimeError):
            GcPauses(metrics.gc_pauses).install()  # one pair of callbacks per process
    finally:
        pauses.uninstall()
    before = _count(metrics, "2")
    gc.collect(2)
    assert _count(metrics, "2") == before  # uninstalled: no longer timed


def test_start_up_objects_are_frozen_out_of_collections():
    class StartUp:  # an object of the start-up, in a reference cycle
        pass

    early = StartUp()
    early.me = early
    try:
        frozen = freeze_start_up()
        assert frozen > 1000 and gc.get_freeze_count() == frozen
        assert not any(o is early for o in gc.get_objects())  # no collection walks it any more
        late = StartUp()
        late.me = late
        assert any(o is late for o in gc.get_objects())  # what the floor makes later still is
    finally:
        gc.unfreeze()
    assert any(o is early for o in gc.get_objects())
