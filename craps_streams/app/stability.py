"""The age of a stalled last stable offset, from periodic measurements (craps_streams/kafka/stability.py).

Pure: time comes with each measurement. A partition is stalled while records are written above
its LSO (high watermark > LSO) and the LSO has not moved; the stall's age counts from the first
measurement that saw the LSO where it still is. A transaction in flight looks like a stall of a
few milliseconds; the worker's transactions end within its transaction timeout (60 s by default,
after which the coordinator aborts them), so an age well past that is a transaction the broker
never ended, and every read_committed reader waits behind it (alert CrapsReadersStalled).
"""
from __future__ import annotations

from typing import Hashable


class StableOffsetWatch:
    def __init__(self) -> None:
        self._since: dict[Hashable, tuple[int, float]] = {}  # partition -> (LSO, when first seen there)

    def observe(self, partition: Hashable, high_watermark: int, stable: int, now_s: float) -> float:
        """Seconds the partition's LSO has stood still with records above it; 0 when none wait."""
        if stable >= high_watermark:
            self._since.pop(partition, None)
            return 0.0
        seen = self._since.get(partition)
        if seen is None or seen[0] != stable:
            self._since[partition] = (stable, now_s)
            return 0.0
        return now_s - seen[1]

    def forget(self, partition: Hashable) -> None:
        """The partition is no longer this worker's to watch."""
        self._since.pop(partition, None)
