"""The run of quiet events (craps_streams/settle/quiet.py, native/src/quiet.rs) beyond its lockstep with
the plain path (tests/native/test_lockstep.py: a replay's batches settled with it give exactly what
`settle_event` alone gives them, on every floor, forged, altered, misbound and untagged events
among them): a run stops, with nothing changed, at the first event that is not quiet, and there is
no run without native keys.

They run where the native accelerator is installed (CI: wherever cargo is present; tests/native/lockstep.py).
"""
from __future__ import annotations

import msgspec
import pytest

from craps_streams.authenticity import TagCheck, signed
from craps_streams.replay.engine import Replay
from craps_streams.accelerator.rules import chosen
from craps_streams.rules import ShooterChanged, TableState, WagerPlaced, record_to_event
from craps_streams.settle.quiet import quiet_run
from craps_streams.sim.floor import floor_events
from tests.authenticity.authenticity_keys import key, ring_for
from tests.native.lockstep import WATCH

pytestmark = pytest.mark.skipif(not chosen().native, reason="the quiet run is the accelerator's (not installed, or CRAPS_CORE=python)")


def _open_table(replay: Replay, ring, table_id: str = "T001") -> list:
    """A table opened and a shooter in, through the plain step; the next quiet events after them."""
    records = [r for r in floor_events(1, 1.0, 5) if isinstance(r, dict)]
    events = [signed(ring.keys[0], record_to_event(r)) for r in records]
    first_wager = next(n for n, e in enumerate(events) if type(e) is WagerPlaced)
    replay.feed_batch(events[:first_wager])
    return events[first_wager:]


def test_a_run_stops_at_a_forged_wager_with_nothing_changed():
    ring = ring_for(["T001"])
    replay = Replay(WATCH, tags=TagCheck(ring))
    rest = _open_table(replay, ring)
    k = next(n for n, e in enumerate(rest) if type(e) not in (WagerPlaced, ShooterChanged))
    assert k >= 4, "the floor begins with several wagers"
    forged = msgspec.structs.replace(rest[2], amount_cents=rest[2].amount_cents + 100) \
        if type(rest[2]) is WagerPlaced else msgspec.structs.replace(rest[2], position=rest[2].position % 16 + 1)
    items = [rest[0], rest[1], forged] + rest[2:k]  # the forged copy first, then the genuine event
    run = quiet_run(replay.tags)
    table = replay.tables["T001"]
    assert run(replay.tables, replay.books, items, 0) == (2, 2, 0, None)
    before = table.to_record()
    assert run(replay.tables, replay.books, items, 2) == (2, 0, 0, None)  # the forged one: not settled here
    assert table.to_record() == before
    outputs = replay.feed_batch(items[2:3])  # the plain step rejects it, with the forged_event alert
    assert [o.reason for o in outputs if type(o).__name__ == "EventRejected"] == ["bad_signature"]
    assert table.to_record() == before
    assert run(replay.tables, replay.books, items, 3) == (k + 1, k - 2, 0, None)  # and the run goes on after it


def test_a_run_stops_at_an_untagged_event_unless_untagged_history_is_accepted():
    ring = ring_for(["T001"])
    for accept in (False, True):
        replay = Replay(WATCH, tags=TagCheck(ring, accept_untagged=accept))
        rest = _open_table(replay, ring)
        bare = msgspec.structs.replace(rest[0], key_id=None, tag=None)
        assert quiet_run(replay.tags)(replay.tables, replay.books, [bare, rest[1]], 0) == \
            ((2, 2, 1, None) if accept else (0, 0, 0, None))


def test_a_run_leaves_a_table_without_its_book_or_not_native_to_the_step():
    ring = ring_for(["T001"])
    replay = Replay(WATCH, tags=TagCheck(ring))
    rest = _open_table(replay, ring)
    run = quiet_run(replay.tags)
    book = replay.books.pop("T001")
    assert run(replay.tables, replay.books, rest[:1], 0) == (0, 0, 0, None)  # the step makes the book
    replay.books["T001"] = book
    table = replay.tables["T001"]
    replay.tables["T001"] = TableState.from_record(table.to_record())
    assert run(replay.tables, replay.books, rest[:1], 0) == (0, 0, 0, None)  # a TableState: the Python core's


def test_no_run_without_native_keys():
    ring = ring_for(["T001"])
    check = TagCheck(ring)
    check._native = None  # a ring the native check cannot hold: the Python fast path checks it
    assert quiet_run(check) is None
    assert quiet_run(None) is not None  # no tag check at all (tests of the rules alone)
    # A validity beyond 64-bit event times is such a ring.
    far = TagCheck(type(ring)((key("k-far", {"T001"}, 0, 2 ** 70),)))
    assert far.native is None and quiet_run(far) is None
