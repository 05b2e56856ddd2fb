"""The JSON Lines lane of a replay (native/src/lane.rs `settle_lines`, lines.rs `LineWriter`): raw
lines settled without becoming Python events, and output lines written from the Structs' slots."""
from __future__ import annotations

from collections.abc import Callable
from functools import partial

from craps_streams.accelerator.rules import in_use


def settle_lines(keys, accept_untagged: bool, new_line: Callable | None = None) -> Callable | None:
    """`run(tables, books, lines, start, out=None) -> (stop, applied, untagged, thrown)` under the tag
    check's native `keys` (None: no check), or None where the accelerator is not in use. With
    `new_line` (`HoldWatch.new_line`) and a list `out`, the throws it can are finished in the lane
    and their outputs appended to `out` (native/src/lane.rs says when)."""
    if not in_use():
        return None
    from craps_streams.accelerator import _native

    return partial(_native.settle_lines, keys, accept_untagged, new_line=new_line)


def line_writer(formats: list):
    """A `LineWriter` of (class, field names) `formats` (`lines(outputs) -> str | None`, and
    `write(outputs, fd) -> int | None`, the same text written to a file descriptor), or None where
    the accelerator is not in use."""
    if not in_use():
        return None
    from craps_streams.accelerator import _native

    return _native.LineWriter(formats)
