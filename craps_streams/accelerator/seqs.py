"""The floor's seq walk of `archive verify` in one call per run of events (native/src/seqs.rs
`walk_seqs`; the rule is craps_streams/archive/verify.py `walk_seqs`)."""
from __future__ import annotations

from collections.abc import Callable

from craps_streams.accelerator.rules import in_use


def walk_seqs() -> Callable | None:
    """`walk(items, start, last, found) -> stop`, or None where the accelerator is not in use."""
    if not in_use():
        return None
    from craps_streams.accelerator import _native

    return _native.walk_seqs
