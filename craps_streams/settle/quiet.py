"""A run of quiet events in one native call: the fast path of the replay's batches, for
events (`quiet_run`) and for the raw lines of a JSON Lines history (`lane_run`).

Most of a history is wagers placed and shooters changed. The settling step (step.py
`settle_event`) only checks, applies and files them: their tag checked, the core's verdict
applied, no outputs, nothing for the hold book or the table's surveillance. A throw's step goes on
to `settled`: its settlements booked and its table watched, which the native watch does in the
same run where the replay's watch is the plain `HoldWatch`. With the native code
in use, `Replay.feed_batch` settles each run of such events in one call
(native/src/quiet.rs `settle_quiet`): the same questions in the same order (the tag by the native
check, or untagged where the replay accepts it; the native core's judgement, taken before anything
changes), and the run stops, with nothing changed, at the first event that is not quiet, which
`settle_event` then settles and words. So there is one step, and this is only its faster way
through events with nothing to say.

Why: each such event cost a Python call of `settle_event` (tag check, apply, filing, the verdict's
count) at about a microsecond; in one native call the run costs what the tag check and the core
cost. Checked against the plain path in lockstep: tests/native/test_lockstep.py, the `quiet-run`
and `json-lane` paths (outputs, tallies, the tables' records after every batch, on floors with bad
input, forged and untagged events, odd lines).
"""
from __future__ import annotations

from craps_streams.accelerator import lane, quiet
from craps_streams.accelerator.rules import in_use
from craps_streams.surveillance.hold_watch import HoldWatch


def _native_check(tags):
    """(native keys or None, accept untagged) for the native runs, or None where the native code
    is not in use: the Python core, or a tag check without native keys."""
    if not in_use():
        return None
    keys = None
    if tags is not None:
        keys = tags.native
        if keys is None:
            return None
    return keys, bool(tags is not None and tags.accept_untagged)


def quiet_run(tags, watch=None):
    """`run(tables, books, items, start, out=None) -> (stop, applied, untagged, thrown)` settling
    the quiet events of the list `items` from `start` (native/src/quiet.rs says what each part
    is), or None where the native code is not in use: the Python core, or a tag check without
    native keys. `tags`: the replay's `craps_streams.authenticity.TagCheck` (None: no tag check,
    tests of the rules).

    `watch` and `out` as `lane_run` takes them: where the step's watch is `HoldWatch` itself, a
    throw goes on in the run too, finished there when its table's surveillance is the native watch
    (its outputs and alerts appended to `out`), else handed back as `thrown`, its event and
    outputs, for the rest of its step (`craps_streams.settle.step.settled`). Without `out`, a
    throw ends the run, untouched (the worker's batches)."""
    check = _native_check(tags)
    if check is None:
        return None
    return quiet.settle_quiet(*check, new_line=_new_line(watch))


def _new_line(watch):
    """`HoldWatch.new_line` where the step's watch is that class itself (its booking is
    `HoldWatch.watch`, which the native watch does as it does), else None: throws stay Python's."""
    return watch.new_line if type(watch) is HoldWatch else None


def lane_run(tags, watch=None):
    """`run(tables, books, lines, start, out=None) -> (stop, applied, untagged, thrown)`: `quiet_run`
    for the raw JSON lines of a `craps_streams.replay.jsonread.LineBatch` (native/src/lane.rs: a
    quiet line is read, checked against the contract, authenticated and applied without becoming a
    Python event; a throw is read, authenticated and applied, and handed back as `thrown`, its event
    and outputs, for the rest of its step, `craps_streams.settle.step.settled`), or None where the
    native code is not in use.

    `watch`: the replay's `HoldWatch`. Where it is that class itself (its booking is
    `HoldWatch.watch`), the rest of a throw's step is done in the lane too, when its table's
    surveillance is the native watch: `settled`'s `book_observe`, natively, the throw's outputs and
    alerts appended to `out` (the batch's outputs), with no trip through Python."""
    check = _native_check(tags)
    if check is None:
        return None
    return lane.settle_lines(*check, new_line=_new_line(watch))
