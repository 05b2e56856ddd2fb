"""Runs of quiet events settled in one call (native/src/quiet.rs `settle_quiet`): the fast path
craps_streams/settle/quiet.py hands the replay and the worker."""
from __future__ import annotations

from collections.abc import Callable
from functools import partial

from craps_streams.accelerator.rules import in_use


def settle_quiet(keys, accept_untagged: bool) -> Callable | None:
    """`run(tables, books, items, start) -> (stop, applied, untagged, None)` under the tag check's
    native `keys` (None: no check), or None where the accelerator is not in use."""
    if not in_use():
        return None
    from craps_streams.accelerator import _native

    return partial(_native.settle_quiet, keys, accept_untagged)
