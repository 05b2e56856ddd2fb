"""The native surveillance watch (native/src/watch.rs, craps_streams/surveillance/native_watch.py)
beyond its lockstep with the Python `TableWatch` (tests/native/test_lockstep.py: the same outputs
and state after every throw of every floor, under the casino's thresholds and touchy ones): its
state read back both ways, its decline (nothing changed) and the hand-over to the Python watch."""
from __future__ import annotations

import json

import pytest

from craps_streams.accelerator.rules import chosen
from craps_streams.rules import ContractError, DiceThrown, WagerSettled, record_to_event
from craps_streams.settle.step import settle_event
from craps_streams.sim.floor import floor_events
from craps_streams.surveillance import HoldWatch
from craps_streams.surveillance.native_watch import dump_of, table_watch_of, watch_factory, watch_record
from craps_streams.surveillance.table_watch import TableWatch, Thresholds
from tests.native.lockstep import FAULTS, TOUCHY, normal

pytestmark = pytest.mark.skipif(not chosen().native, reason="the native code is not in use (CRAPS_CORE=python)")


def events(tables: int, hours: float, seed: int, bad_rate: float):
    for r in floor_events(tables, hours, seed, bad_rate=bad_rate, faults=FAULTS):
        if type(r) is dict:
            try:
                yield record_to_event(r)
            except ContractError:
                pass


def test_table_watch_of_and_load_round_trip():
    thresholds = TOUCHY
    native = HoldWatch(thresholds, table_watch=watch_factory(thresholds))
    tables, books = {}, {}
    for event in events(2, 2.0, 3, 0.0):
        settle_event(tables, books, native, event, apply=chosen().apply)
    for book in books.values():
        python = table_watch_of(book.watch)
        assert TableWatch.from_record(python.to_record()).to_record() == python.to_record()
        fresh = watch_factory(thresholds)()
        fresh.load(dump_of(python))
        assert normal(fresh.dump()) == normal(book.watch.dump())


def test_a_native_watch_s_record_is_its_table_watch_s():
    # What the worker stores of a natively kept watch in each transaction (`watch_record`), after
    # every throw of a busy floor under touchy thresholds (alerts raised, positions tested).
    native = HoldWatch(TOUCHY, table_watch=watch_factory(TOUCHY))
    tables, books, compared = {}, {}, 0
    for event in events(3, 3.0, 5, 0.02):
        settle_event(tables, books, native, event, apply=chosen().apply)
        book = books.get(event.table_id)
        if type(event) is DiceThrown and book is not None:
            record = watch_record(book.watch)
            assert record == table_watch_of(book.watch).to_record()
            assert json.dumps(record, sort_keys=True) == json.dumps(table_watch_of(book.watch).to_record(), sort_keys=True)
            compared += 1
    assert compared > 500 and any(table_watch_of(b.watch).raised for b in books.values())


def _settlement(**changes) -> WagerSettled:
    fields = dict(wager_id="w1", table_id="T1", position=3, wager="fire", outcome="win", stake_cents=500,
                  won_cents=1000, paytable="fire-623a.5", detail="points=4", seq=5, ts=1, placed_seq=2,
                  id="T1/5/w1")
    fields.update(changes)
    return WagerSettled(**fields)


@pytest.mark.parametrize("odd", [dict(stake_cents=0), dict(stake_cents=2 ** 70), dict(position="3"),
                                 dict(won_cents=None), dict(seq=True)])
def test_an_odd_settlement_is_declined_with_nothing_changed(odd):
    watch = watch_factory(Thresholds())()
    before = watch.dump()
    throw = record_to_event({"type": "DiceThrown", "table_id": "T1", "seq": 5, "ts": 1, "die1": 3, "die2": 4})
    assert watch.observe(None, [throw], [_settlement(**odd)]) is None
    assert watch.dump() == before


def test_a_declined_table_goes_on_with_the_python_watch():
    """The step (`settled`) hands a table whose native watch declined to the Python watch, for
    good: the same alerts and state as the Python watch had all along."""
    from craps_streams.rules.verdict import APPLIED
    from craps_streams.settle.step import settled

    thresholds = TOUCHY
    paths = [HoldWatch(thresholds), HoldWatch(thresholds, table_watch=watch_factory(thresholds))]
    stream = [e for e in events(1, 2.0, 5, 0.0)]
    throws = [i for i, e in enumerate(stream) if type(e) is DiceThrown and e.valid and i > 300]
    cut = throws[0]
    runs = []
    apply = chosen().apply
    for watch in paths:
        tables, books = {}, {}
        for event in stream[:cut]:
            settle_event(tables, books, watch, event, apply=apply)
        throw = stream[cut]
        state, outputs, verdict = apply(tables[throw.table_id], throw)
        assert verdict == APPLIED
        # A win beyond 64 bits: never the core's, so the native watch declines it.
        odd = _settlement(table_id=throw.table_id, seq=throw.seq, won_cents=2 ** 64, placed_seq=throw.seq - 1)
        _, _, out = settled(tables, books, watch, throw, state, outputs + [odd], verdict)
        for event in stream[cut + 1:]:
            out = out + settle_event(tables, books, watch, event, apply=apply)[2]
        runs.append((out, books[throw.table_id].watch))
    (expected, python), (got, handed) = runs
    assert type(handed) is TableWatch
    assert got == expected and handed.to_record() == python.to_record()
