"""The controller's event time: epoch milliseconds that never run backwards.

The worker judges key validity and the hot-roller timers on `ts`, and a replay must judge the same,
so a table's stamps must not step back when the host's clock does (an NTP step, a bad RTC after a
power cut). `MonotoneClock` stamps max(wall clock, last stamp): a wall clock that jumps back holds
the stamps at the last one until it catches up, and each hold is counted (`held`) so the operator
sees a host whose clock misbehaves. The floor starts at the journal's latest stamp, so a restart
never stamps before what was already acknowledged.
"""
from __future__ import annotations

import time
from typing import Callable


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


class MonotoneClock:
    def __init__(self, floor_ms: int = 0, now_ms: Callable[[], int] = wall_ms):
        self.last = floor_ms
        self.held = 0  # stamps held at `last` because the wall clock was behind it
        self._now = now_ms

    def stamp(self) -> int:
        """The next stamp: the wall clock, or the last stamp when the wall clock is behind it."""
        now = self._now()
        if now < self.last:
            self.held += 1
            return self.last
        self.last = now
        return now
