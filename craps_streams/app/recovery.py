"""Rebuild the table states of one partition from the compacted state changelog, read_committed.

Why not Faust's own Table recovery: under exactly_once it stops reading a changelog partition at
the first stall it takes for an aborted transaction ("Aborted tx until highwater") and can start
settling from a state older than the committed offsets: wrong settlements after a crash (seen in
tests/pipeline). Here the read goes to the last stable offset, so the state is exactly the one
committed with the offsets it goes with.
"""
from __future__ import annotations

import time

from craps_streams.kafka.reader import read_committed


def recover_partition(partition: int, topic: str, bootstrap: str | None = None,
                      timeout_s: float = 120.0) -> tuple[dict[str, str], float]:
    """(table id -> latest committed state as JSON text, seconds taken) for one partition of the
    changelog `topic` (a floor's table-state).

    `timeout_s` is for stalls (no progress for that long), not for the whole read."""
    start = time.monotonic()
    states: dict[str, str] = {}
    for m in read_committed(topic, "worker", bootstrap=bootstrap, partitions=[partition], stall_timeout_s=timeout_s):
        if m.key is not None:
            if m.value is None:
                states.pop(m.key.decode(), None)
            else:
                states[m.key.decode()] = m.value.decode()
    return states, time.monotonic() - start
