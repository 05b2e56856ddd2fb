"""A report's books kept natively (native/src/report.rs `ReportBook`): the settlements of a report's
pass summed by gaming day, shift, table, wager kind and paytable without a Python call each
(craps_streams/report/build.py `ReportPass`, which hands it every fact it books by)."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from craps_streams.accelerator.rules import in_use


def report_book(bounds: tuple[int, int, int, int, int], facts: tuple, segment: Callable, kind: Callable,
                other: Callable, forward: Sequence[type]):
    """A `ReportBook` (its `book(outputs)`, `forget(table)` and `rows()`: native/src/report.rs) of
    the period's `bounds` (start, end, first instant booked, series bucket, an hour; epoch ms), the
    `facts` (WagerSettled, its outcomes' words "lose", "win", "push", the detail of a push at a
    table's close, the end of one at a surrender of the dice) and the report's `segment(ts)`,
    `kind(table, wager, paytable)` and `other(output)` (for the outputs of the classes `forward`),
    or None where the accelerator is not in use."""
    if not in_use():
        return None
    from craps_streams.accelerator import _native

    return _native.ReportBook(bounds, facts, segment, kind, other, list(forward))
