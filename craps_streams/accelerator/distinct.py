"""The audit's check that the settlements carry distinct ids, in one call per run of settlements
(native/src/distinct.rs `distinct_ids`; the rule is craps_streams/replay/agreement.py `add_distinct`)."""
from __future__ import annotations

from collections.abc import Callable

from craps_streams.accelerator.rules import in_use


def distinct_ids() -> Callable | None:
    """`run(settled, start, latest) -> (stop, distinct)`, or None where the accelerator is not in use."""
    if not in_use():
        return None
    from craps_streams.accelerator import _native

    return _native.distinct_ids
