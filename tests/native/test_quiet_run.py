"""The run of quiet events (streams/settle/quiet.py, native/src/quiet.rs) held to the plain path:
a replay's batches settled with it give exactly what `settle_event` alone gives them (the outputs,
the tally, the count of untagged events, every table's record), on floors with bad input, events
out of order and lost, forged, altered, misbound and untagged events; and a run stops, with
nothing changed, at the first event that is not quiet.

They run where the native accelerator is installed (CI: wherever cargo is present; tests/native/lockstep.py).
"""
from __future__ import annotations

import dataclasses
import random

import msgspec
import pytest

from streams.authenticity import TagCheck, signed
from streams.replay.engine import Replay
from streams.rules import CORE, ContractError, ShooterChanged, TableState, WagerPlaced, output_to_record, record_to_event
from streams.rules import native
from streams.settle.quiet import quiet_run
from streams.sim.floor import floor_events
from streams.surveillance import HoldWatch
from streams.surveillance.dice_watch import DiceWatch
from streams.surveillance.table_watch import Thresholds
from tests.authenticity.authenticity_keys import key, ring_for

# Low thresholds, so that the surveillance alerts too (the run must not change what it sees).
WATCH = HoldWatch(Thresholds(tail_alert=0.05, check_z=0.5, position_alert=0.3, dice=DiceWatch(4.0, 6.0, 6.0)))


pytestmark = pytest.mark.skipif(CORE != "native", reason="the quiet run is the accelerator's (not installed, or CRAPS_CORE=python)")


def history(seed: int, accept_untagged: bool, tables: int = 5, hours: float = 2.0) -> tuple[list, object]:
    """A floor's items as `feed_batch` takes them, signed, with hostile copies mixed in before the
    genuine events (as an attacker would send them: the genuine event still comes): every 29th
    event's copy with its tag altered, every 53rd's signed by another table's key, every 67th's with
    another event's tag; every 41st event untagged (in place where the replay accepts untagged
    history, else as a copy before it); records the contract refuses and torn lines as
    `(record, where)`; a few events swapped with their successors (held, then released) and one
    lost (a gap that table waits on)."""
    rng = random.Random(seed)
    records = list(floor_events(tables, hours, seed, bad_rate=0.03))
    ring = ring_for([f"T{n:03d}" for n in range(1, tables + 1)])
    keys = {k.key_id: k for k in ring.keys}
    items: list = []
    previous = None
    for n, r in enumerate(records):
        try:
            if type(r) is not dict:
                raise ContractError("malformed", "not a JSON object")
            event = record_to_event(r)
        except ContractError:
            items.append((r, f"floor:{n}"))
            continue
        own = keys.get(f"k-{event.table_id}")
        if own is None:
            items.append(event)
            continue
        tagged = signed(own, event)
        if n % 29 == 0:
            items.append(msgspec.structs.replace(tagged, tag=("A" if tagged.tag[0] != "A" else "B") + tagged.tag[1:]))
        elif n % 53 == 0:
            items.append(signed(keys[f"k-T{(int(event.table_id[1:]) % tables) + 1:03d}"], event))
        elif n % 67 == 0 and previous is not None:
            items.append(msgspec.structs.replace(tagged, tag=previous.tag))
        elif n % 41 == 0:
            if accept_untagged:
                tagged = event  # neither key id nor tag, in its place
            else:
                items.append(event)
        previous = tagged
        items.append(tagged)
    for _ in range(12):
        k = rng.randrange(len(items) // 10, len(items) - 1)
        items[k], items[k + 1] = items[k + 1], items[k]
    del items[len(items) * 9 // 10]
    return items, ring


def settle_both(items: list, ring, accept_untagged: bool, batch: int = 97):
    """(with the run, without it): (outputs as records, tally, untagged, tables' records, events
    the run settled)."""
    results = []
    for quiet in (True, False):
        replay = Replay(WATCH, tags=TagCheck(ring, accept_untagged=accept_untagged))
        ran = [0, 0, 0]
        if quiet:
            assert replay._quiet is not None
            replay._quiet = counted(replay._quiet, ran)
        else:
            replay._quiet = None
        outputs = []
        for k in range(0, len(items), batch):
            outputs += replay.feed_batch(items[k:k + batch])
        tally = replay.tally
        results.append(([output_to_record(o) for o in outputs], dataclasses.asdict(tally), tally.untagged,
                         {t: s.to_record() for t, s in replay.tables.items()}, ran[0]))
    return results


def counted(run, ran: list):
    """`run` (a quiet run or the lane) counting into `ran`: [events or lines it settled, throws it
    applied natively, throws it left to the Python core]."""
    def counting(tables, books, chunk, start):
        stop, applied, untagged, thrown = run(tables, books, chunk, start)
        ran[0] += applied
        if thrown is not None:
            ran[1 if thrown[1] is not None else 2] += 1
        return stop, applied, untagged, thrown

    return counting


@pytest.mark.parametrize("seed,accept_untagged", [(3, False), (8, True), (21, True)])
def test_batches_settle_the_same_with_and_without_the_run(seed, accept_untagged):
    items, ring = history(seed, accept_untagged)
    (out, tally, untagged, tables, ran), (out0, tally0, untagged0, tables0, ran0) = settle_both(items, ring, accept_untagged)
    assert ran0 == 0
    quiet_kinds = sum(1 for i in items if type(i) in (WagerPlaced, ShooterChanged))
    assert ran > quiet_kinds // 2, (ran, quiet_kinds)  # the run did settle most of them
    assert out == out0
    assert tally == tally0
    assert untagged == untagged0
    assert tables == tables0
    reasons = tally["rejections_by_reason"]
    assert reasons.get("bad_signature", 0) > 10, reasons  # the hostile events were there, and rejected
    assert (untagged > 0) == accept_untagged, untagged
    alerts = {o["alert"] for o in out if o["type"] == "SurveillanceAlerted"}
    assert {"forged_event", "sequence_gap"} <= alerts, alerts


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
