"""The surveillance paths of the accelerator (native/src/watch.rs, tails.rs): a table's watch,
configured by craps_streams/surveillance/native_watch.py, and the Chernoff bound's minimum that
craps_streams/surveillance/tails.py computes."""
from __future__ import annotations

from collections.abc import Callable

from craps_streams.accelerator.rules import in_use


def watch_config(dice: tuple, dice_h: tuple, rearm, limits: tuple, callbacks: tuple, opened: type):
    """A `WatchConfig` (its `watch()` makes a table's native watch) of the surveillance's facts and
    the Python functions that word its alerts, or None where the accelerator is not in use."""
    if not in_use():
        return None
    from craps_streams.accelerator import _native

    return _native.WatchConfig(dice, dice_h, rearm, limits, callbacks, opened)


def chernoff_minimum() -> Callable | None:
    """The native `chernoff_minimum` (the same doubles as tails.py's), or None where the
    accelerator is not in use."""
    if not in_use():
        return None
    from craps_streams.accelerator import _native

    return _native.chernoff_minimum
