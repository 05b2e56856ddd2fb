"""The worker's pauses for Python's cyclic garbage collector, timed and kept out of its way.

Why: a collection stops the whole process, the batch in flight with
it. A collection of the oldest generation walks every tracked object: the modules, classes and
functions of everything the worker imported (about 62,000 objects: aiokafka, aiohttp,
prometheus_client, msgspec, the rules) and every owned table's state. Those imported at start
live as long as the process, so `freeze_start_up` moves them into the permanent generation
(`gc.freeze`, the CPython documentation's own advice for long-running services), and a full
collection then walks only what the floor made since. `GcPauses` times every collection
(`gc.callbacks`) into the histogram `craps_gc_pause_seconds` by generation, so the effect is
measured where it acts, in the worker, and a tail from collections is seen on a dashboard rather
than guessed at. `raise_young_threshold` makes the young collections rarer, as the replay does.
"""
from __future__ import annotations

import gc
import time

from prometheus_client import Histogram

PAUSE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1)


def freeze_start_up() -> int:
    """Collect what start-up left as garbage, then freeze every object alive now (imports,
    settings, the web app) out of later collections; -> how many objects are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


# The first generation's threshold while the worker runs (the replay's, craps_streams/replay/run.py
# `batch_gc`): the core makes no reference cycles (events, outputs and messages are freed by
# reference counting), but at the default 700 allocations the collector walks each batch's young
# objects many times over, 6 to 8 % of the worker's loop. A cycle is still collected, later.
YOUNG_THRESHOLD = 50_000


def raise_young_threshold(threshold: int = YOUNG_THRESHOLD) -> int:
    """Collect the first generation only every `threshold` allocations (the older generations'
    thresholds as they were); -> the previous threshold."""
    old = gc.get_threshold()
    gc.set_threshold(threshold, old[1], old[2])
    return old[0]


class GcPauses:
    """Times each collection of this process into `histogram` (labelled by generation) while
    installed. One callback pair per process: installing twice is refused."""

    def __init__(self, histogram: Histogram):
        self._by_generation = [histogram.labels(str(g)) for g in range(3)]
        self._started = 0.0

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        self._by_generation[info["generation"]].observe(time.perf_counter() - self._started)

    def install(self) -> "GcPauses":
        if any(isinstance(getattr(cb, "__self__", None), GcPauses) for cb in gc.callbacks):
            raise RuntimeError("the collector's pauses are already timed in this process")
        gc.callbacks.append(self._callback)
        return self

    def uninstall(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)
