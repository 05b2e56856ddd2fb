"""Runs of quiet events settled in one call (native/src/quiet.rs `settle_quiet`): the fast path
craps_streams/settle/quiet.py hands the replay and the worker."""
from __future__ import annotations

from collections.abc import Callable
from functools import partial

from craps_streams.accelerator.rules import in_use


def settle_quiet(keys, accept_untagged: bool, new_line: Callable | None = None) -> Callable | None:
    """`run(tables, books, items, start, out=None) -> (stop, applied, untagged, thrown)` under the
    tag check's native `keys` (None: no check), throws finished in the run with `out` and
    `new_line` (native/src/quiet.rs), or None where the accelerator is not in use."""
    if not in_use():
        return None
    from craps_streams.accelerator import _native

    return partial(_native.settle_quiet, keys, accept_untagged, new_line=new_line)
