"""The controller's stamps never run backwards, whatever the host's clock does."""
from __future__ import annotations

from craps_streams.controller.clock import MonotoneClock


def test_stamps_follow_the_wall_clock_and_hold_when_it_steps_back():
    readings = iter([100, 105, 90, 95, 106, 200])
    clock = MonotoneClock(0, lambda: next(readings))
    assert [clock.stamp() for _ in range(6)] == [100, 105, 105, 105, 106, 200]
    assert clock.held == 2


def test_the_floor_holds_a_restarted_controller_at_its_journal():
    clock = MonotoneClock(5_000, lambda: 4_000)
    assert clock.stamp() == 5_000
    assert clock.held == 1
