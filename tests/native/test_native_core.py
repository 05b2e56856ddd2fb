"""The native rules core (craps_streams/accelerator/rules.py, native/) beyond its lockstep with the Python
core (tests/native/test_lockstep.py, every floor): stakes inside table limits placed natively,
come-bets-only mode set and lifted natively, records round-tripping both ways and through pickle, a table reloaded in place, and the built
extension refused when it is not of the checkout's sources.

They run where the native accelerator is installed (CI: wherever cargo is present; tests/native/lockstep.py).
"""
from __future__ import annotations

import pickle
from pathlib import Path

from craps_streams.accelerator import rules as native
from craps_streams.rules.table import TableState
from craps_streams.rules.table import apply as python_apply
from craps_streams.sim.floor import floor_events
from tests.native.lockstep import CORE_PATH, lockstep, requires_accelerator
from tests.native.lockstep import events_of as _events


def _same_record(a: dict, b: dict) -> None:
    import json

    assert a == b
    assert json.dumps(a) == json.dumps(b)  # the same keys in the same order, True never 1


pytestmark = requires_accelerator


def test_stakes_inside_table_limits_are_placed_natively():
    """Under table limits the native core places a stake inside them itself; one outside them (or
    of a kind whose limits say nothing) is the Python core's to reject, in its words."""
    rules = {"limits": {"fire": [200, 400], "all_tall": [100, 2000]}}

    def record(seq, type_, **fields):
        return {"type": type_, "table_id": "T9", "seq": seq, "ts": 1_700_000_000_000 + seq, **fields}

    setup = [record(1, "TableOpened", table_kind="live", rules=rules),
             record(2, "ShooterChanged", shooter_id="p1", position=1, reason="table_open")]
    wagers = [("w1", "fire", 300), ("w2", "all_tall", 2000), ("w3", "hot_roller", 5),
              ("w4", "fire", 500), ("w5", "all_tall", 2001), ("w6", "fire", 100)]
    placed = [record(3 + i, "WagerPlaced", wager_id=w, position=2, wager=k, amount_cents=c)
              for i, (w, k, c) in enumerate(wagers)]
    table = None
    for e in _events(setup):
        table, _, _ = native.apply(table, e)
    outcomes = []
    for e in _events(placed):
        before = native.FALLBACKS["WagerPlaced"]
        table, out, verdict = native.apply(table, e)
        outcomes.append((e.wager_id, verdict, native.FALLBACKS["WagerPlaced"] > before,
                         [getattr(o, "reason", None) for o in out]))
    assert outcomes == [
        ("w1", "applied", False, []), ("w2", "applied", False, []), ("w3", "applied", False, []),
        ("w4", "rejected", True, ["stake_out_of_limits"]), ("w5", "rejected", True, ["stake_out_of_limits"]),
        ("w6", "rejected", True, ["stake_out_of_limits"]),
    ], outcomes
    lockstep(CORE_PATH, _events(setup + placed))  # and the Python core agrees on every one


def test_come_bets_only_is_set_and_lifted_natively():
    """§ 623a.10(b): the mode set after the come-out point was made, with the point off, and lifted
    while on, is judged natively (no call to the Python core); every other ComeBetsOnly (too early,
    twice, lifted while off, after a seven-out) is the Python core's to reject, in its words. The
    native table's state is the Python core's after each."""

    def record(seq, type_, **fields):
        return {"type": type_, "table_id": "T8", "seq": seq, "ts": 1_700_000_000_000 + seq, **fields}

    def throw(seq, d1, d2):
        return record(seq, "DiceThrown", die1=d1, die2=d2, valid=True)

    def come(seq, active):
        return record(seq, "ComeBetsOnly", active=active)

    history = [record(1, "TableOpened", table_kind="live", rules={}),
               record(2, "ShooterChanged", shooter_id="p1", position=1, reason="table_open"),
               come(3, True),                            # no throw yet: refused
               throw(4, 2, 2), throw(5, 1, 3),           # point 4 made: the point is off again
               come(6, True), come(7, True),             # set, then refused (already on)
               come(8, False), come(9, False),           # lifted, then refused (already off)
               come(10, True), throw(11, 3, 3),          # set; a point thrown in the mode stays off
               throw(12, 1, 6)]                          # a 7 with the point off
    table = None
    python = None
    outcomes = []
    for e in _events(history):
        before = native.FALLBACKS["ComeBetsOnly"]
        table, out, verdict = native.apply(table, e)
        python, py_out, py_verdict = python_apply(python, e)
        assert (verdict, [type(o).__name__ for o in out]) == (py_verdict, [type(o).__name__ for o in py_out])
        _same_record(table.to_record(), python.to_record())
        if type(e).__name__ == "ComeBetsOnly":
            outcomes.append((e.seq, e.active, verdict, native.FALLBACKS["ComeBetsOnly"] > before,
                             [getattr(o, "reason", None) for o in out]))
    refused = ["come_bets_only_not_allowed"]
    assert outcomes == [
        (3, True, "rejected", True, refused),
        (6, True, "applied", False, []), (7, True, "rejected", True, refused),
        (8, False, "applied", False, []), (9, False, "rejected", True, refused),
        (10, True, "applied", False, []),
    ], outcomes
    lockstep(CORE_PATH, _events(history))


def test_records_round_trip_and_pickle():
    py_tables: dict = {}
    n = 0
    for e in _events(floor_events(4, 2, 9, bad_rate=0.02)):
        state, _, _ = python_apply(py_tables.get(e.table_id), e)
        if state is None:
            continue
        py_tables[e.table_id] = state
        record = state.to_record()
        table = native.Table.from_record(record)
        if state.held:
            assert table is None  # events held beyond a gap stay with the Python core
            continue
        assert table is not None
        _same_record(table.to_record(), record)
        _same_record(TableState.from_record(table.to_record()).to_record(), record)
        n += 1
        if n % 50 == 0:
            again = pickle.loads(pickle.dumps(table))
            assert type(again) is native.Table
            _same_record(again.to_record(), record)
            # The rare attributes read through a TableState of the record.
            assert again.pending.keys() == state.pending.keys()
            assert again.shooter_id == state.shooter_id and again.rules == state.rules
    assert n > 1000


def test_load_in_place_keeps_the_table():
    events = list(_events(floor_events(1, 1, 4)))
    state, _, _ = native.apply(None, events[0])
    assert type(state) is native.Table
    for e in events[1:]:
        new, _, _ = native.apply(state, e)
        assert new is state  # rejections and other fallbacks reload the same table in place


def test_the_built_extension_is_of_the_checkout_s_sources():
    """The build (setup.py) wrote the digest of native/'s sources into the extension; an extension
    built from other sources is refused (this test fails on a stale build: `pip install -e .`)."""
    assert native.stale_build(native._native) is None
    assert len(native._native.SOURCE_DIGEST) == 64
    # Where it reads the sources: the directory compiled in at build time, this checkout's native/.
    assert Path(native._native.SOURCE_DIR) == Path(__file__).resolve().parents[2] / "native"


def test_an_extension_of_other_sources_is_refused(tmp_path):
    """A rule edited in native/src/ without a rebuild: the digests differ and the extension is
    refused with the way out; a bare cargo build (no digest) is refused too; no sources to compare
    (an installation outside a checkout): nothing to say."""
    import shutil
    from types import SimpleNamespace

    checkout = Path(native._native.SOURCE_DIR)
    sources = tmp_path / "native"
    shutil.copytree(checkout, sources, ignore=shutil.ignore_patterns("target"))
    built = SimpleNamespace(SOURCE_DIGEST=native._native.SOURCE_DIGEST, SOURCE_DIR=str(sources))
    assert native.stale_build(built) is None
    rule = sources / "src" / "fire_bet.rs"
    rule.write_text(rule.read_text() + "\n// an edited rule\n")
    problem = native.stale_build(built)  # the sources read where the build says it was made
    assert problem is not None and "pip install -e ." in problem
    assert native.stale_build(SimpleNamespace(), checkout) is not None
    assert native.stale_build(built, tmp_path / "elsewhere") is None
    # A wheel: built elsewhere (or by cargo alone), no sources where it says: nothing to compare.
    assert native.stale_build(SimpleNamespace(SOURCE_DIGEST="x", SOURCE_DIR=str(tmp_path / "gone"))) is None
    assert native.stale_build(SimpleNamespace(SOURCE_DIGEST="x", SOURCE_DIR="")) is None
