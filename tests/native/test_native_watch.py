"""The native surveillance watch (native/src/watch.rs, streams/surveillance/native_watch.py)
against the Python `TableWatch`, its reference: the same outputs (every alert, word for word) and
the same state after every throw, on floors with loaded dice, a drifting shaker, a past-poster and
bad input, under the casino's thresholds and under thresholds low enough to alert all the time;
its decline (nothing changed) and the hand-over to the Python watch."""
from __future__ import annotations

import pytest

from streams.rules import CORE, DiceThrown, SurveillanceAlerted, TableOpened, WagerSettled, ContractError
from streams.rules import record_to_event
from streams.settle.step import settle_event
from streams.sim.floor import Fault, floor_events
from streams.surveillance import HoldWatch
from streams.surveillance.dice_watch import DiceWatch
from streams.surveillance.native_watch import dump_of, table_watch_of, watch_factory
from streams.surveillance.table_watch import TableWatch, Thresholds

pytestmark = pytest.mark.skipif(CORE != "native", reason="the native code is not in use (CRAPS_CORE=python)")

FAULTS = {"T001": Fault.parse("loaded-dice:4/36"), "T002": Fault.parse("shaker-drift:0.2"),
          "T003": Fault.parse("past-posting:16")}
# Low enough that every kind of alert fires many times (and re-arms) on a few hours of play.
TOUCHY = Thresholds(tail_alert=0.2, check_z=0.0, position_alert=1e-2, dice=DiceWatch(4.0, 5.0, 5.0))


def normal(dump) -> tuple:
    """A dump with its lines in a fixed order (the native positions are a hash map)."""
    dice, holds, positions, prev, last, raised = dump
    return (tuple(map(lambda v: tuple(v) if isinstance(v, list) else v, dice)),
            sorted((h[0], h[1], h[2:5], tuple(h[5]), h[6:]) for h in holds),
            sorted((p[:5], tuple(p[5]), p[6:]) for p in positions), prev, last, sorted(raised))


def events(tables: int, hours: float, seed: int, bad_rate: float):
    for r in floor_events(tables, hours, seed, bad_rate=bad_rate, faults=FAULTS):
        if type(r) is dict:
            try:
                yield record_to_event(r)
            except ContractError:
                pass


def side_by_side(thresholds: Thresholds, tables=4, hours=3.0, seed=7, bad_rate=0.02) -> dict:
    python = HoldWatch(thresholds)
    native = HoldWatch(thresholds, table_watch=watch_factory(thresholds))
    py_tables, py_books, nat_tables, nat_books = {}, {}, {}, {}
    alerts: dict = {}
    for event in events(tables, hours, seed, bad_rate):
        _, _, expected = settle_event(py_tables, py_books, python, event)
        _, _, got = settle_event(nat_tables, nat_books, native, event)
        assert got == expected, event
        for o in got:
            if type(o) is SurveillanceAlerted:
                alerts[o.alert] = alerts.get(o.alert, 0) + 1
        if type(event) in (DiceThrown, TableOpened) and event.table_id in nat_books:
            theirs = nat_books[event.table_id].watch
            assert type(theirs) is not TableWatch  # it never declined: the core's outputs only
            assert normal(theirs.dump()) == normal(dump_of(py_books[event.table_id].watch)), event
    return alerts


def test_the_casino_thresholds_give_the_same_alerts_and_state_after_every_throw():
    alerts = side_by_side(Thresholds.from_settings({}), tables=4, hours=6.0)
    assert alerts.get("dice_bias", 0) >= 1 and alerts.get("position_anomaly", 0) >= 1


def test_touchy_thresholds_alert_and_rearm_alike_on_every_kind():
    alerts = side_by_side(TOUCHY, tables=5, hours=3.0, seed=11)
    assert min(alerts.get(k, 0) for k in ("dice_bias", "hold_anomaly", "position_anomaly")) >= 5, alerts


def test_table_watch_of_and_load_round_trip():
    thresholds = TOUCHY
    native = HoldWatch(thresholds, table_watch=watch_factory(thresholds))
    tables, books = {}, {}
    for event in events(2, 2.0, 3, 0.0):
        settle_event(tables, books, native, event)
    for book in books.values():
        python = table_watch_of(book.watch)
        assert TableWatch.from_record(python.to_record()).to_record() == python.to_record()
        fresh = watch_factory(thresholds)()
        fresh.load(dump_of(python))
        assert normal(fresh.dump()) == normal(book.watch.dump())


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
    from streams.rules import apply
    from streams.rules.verdict import APPLIED
    from streams.settle.step import settled

    thresholds = TOUCHY
    paths = [HoldWatch(thresholds), HoldWatch(thresholds, table_watch=watch_factory(thresholds))]
    stream = [e for e in events(1, 2.0, 5, 0.0)]
    throws = [i for i, e in enumerate(stream) if type(e) is DiceThrown and e.valid and i > 300]
    cut = throws[0]
    runs = []
    for watch in paths:
        tables, books = {}, {}
        for event in stream[:cut]:
            settle_event(tables, books, watch, event)
        throw = stream[cut]
        state, outputs, verdict = apply(tables[throw.table_id], throw)
        assert verdict == APPLIED
        # A win beyond 64 bits: never the core's, so the native watch declines it.
        odd = _settlement(table_id=throw.table_id, seq=throw.seq, won_cents=2 ** 64, placed_seq=throw.seq - 1)
        _, _, out = settled(tables, books, watch, throw, state, outputs + [odd], verdict)
        for event in stream[cut + 1:]:
            out = out + settle_event(tables, books, watch, event)[2]
        runs.append((out, books[throw.table_id].watch))
    (expected, python), (got, handed) = runs
    assert type(handed) is TableWatch
    assert got == expected and handed.to_record() == python.to_record()
