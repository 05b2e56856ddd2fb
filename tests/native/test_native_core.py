"""The native rules core (streams/rules/native.py, native/) held to the Python core, the reference:
after EVERY event the same outputs (by value and as records), the same verdict (the same object)
and the same `to_record()` (by value and as JSON text: key order, bools against ints), on
simulated floors with bad input (rejections, duplicates, malformed lines skipped as the contract
refuses them), with events delayed (gaps, held events, releases), under other Rules Submissions,
on the crapssim play of benchmarks/crapssim_compare.py, on the golden floor and the contract
corpus (tests/golden), and on hand-made odd events. Records round-trip both ways, and pickle.

They run where the native accelerator is installed (CI: wherever cargo is present; tests/native/lockstep.py).
"""
from __future__ import annotations

import json
import pickle
import random
import sys
from pathlib import Path

import pytest

from streams.app.shell import state_from_text, state_to_text
from streams.rules import ContractError, output_to_record, record_to_event
from streams.rules import native
from streams.rules.events import DiceThrown, ShooterChanged, TableOpened, WagerPlaced
from streams.rules.submission import rules_from_record
from streams.rules.table import TableState
from streams.rules.table import apply as python_apply
from streams.sim.floor import floor_events
from tests.native.lockstep import delayed as _delayed
from tests.native.lockstep import events_of as _events
from tests.native.lockstep import lockstep, requires_accelerator, same_record as _same_record

ROOT = Path(__file__).resolve().parents[2]


pytestmark = requires_accelerator


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_floor_with_bad_input(seed):
    counts = lockstep(_events(floor_events(8, 3, seed, bad_rate=0.05)))
    assert counts.get("rejected", 0) > 20 and counts.get("duplicate", 0) > 0
    assert counts["native"] > 0.9 * counts["events"], counts


def test_floor_with_gaps_and_held_events():
    records = _delayed(list(floor_events(6, 3, 7, bad_rate=0.02)), seed=7)
    counts = lockstep(_events(records))
    assert counts.get("held", 0) > 10 and counts.get("released", 0) > 5, counts


@pytest.mark.parametrize("recover", [1.0, 0.3, 0.02])
def test_tables_recovered_from_the_changelog_mid_stream(recover):
    """A worker that takes a partition over (a rebalance, a fenced or failed batch, a restart)
    settles on tables read back from the changelog as TableStates: the native core must go on
    from them exactly as from its own tables, whether they come back before every event, now and
    then, or rarely (the first event after each goes to the Python core, the next are native)."""
    records = _delayed(list(floor_events(8, 3, 2, bad_rate=0.05)), seed=2, rate=0.005)
    counts = lockstep(_events(records), recover=recover)
    assert counts["recovered"] > 100 and counts.get("duplicate", 0) > 0, counts
    if recover < 1:
        assert counts["native"] > 0.5 * counts["events"], counts


RULES = [
    {"hot_roller_come_out_seven": "pay_by_table", "bonus_paytable": "alternate", "hot_roller_paytable": "B"},
    {"surrender": {"fire": "push", "hot_roller": "push", "all_small": "push"}, "large_win_alert_cents": 5000},
    {"limits": {"fire": [200, 400], "hot_roller": [500, 1000], "all_tall": [100, 2000]}},
    {"fire_custom": {"3": 5, "4": 30, "5": 300, "6": 2000}, "large_win_alert_cents": 0},
    {"large_win_alert_cents": 1},
]


@pytest.mark.parametrize("rules", RULES, ids=[",".join(r) for r in RULES])
def test_floor_under_other_rules(rules):
    counts = lockstep(_events(floor_events(6, 2, 5, bad_rate=0.03, rules=rules, voluntary_rate=0.05)))
    assert counts["outputs"] > 100, counts


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
    lockstep(_events(setup + placed))  # and the Python core agrees on every one


def test_crapssim_play():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from crapssim_compare import dice_of_hands, our_records

    records = our_records(dice_of_hands(3000, 15), 8)
    counts = lockstep(_events(records), check_every=7)
    assert counts["outputs"] == 113_260
    # Natively: everything but the opening and the closing.
    assert counts["native"] == counts["events"] - 2, counts


def test_golden_floor_and_contract_corpus():
    # tests/golden/test_replay_golden.py's floor (simulate --tables 6 --hours 1 --seed 11 --bad-rate 0.05)
    lockstep(_events(floor_events(6, 1, 11, bad_rate=0.05)))
    sys.path.insert(0, str(ROOT))
    from tests.golden.contract_corpus import corpus_lines

    records = []
    for line in corpus_lines():
        try:
            records.append(json.loads(line))
        except (ValueError, RecursionError):  # torn and 2,000-deep lines: never an event
            continue
    lockstep(_events(records))


def test_odd_events_go_to_the_python_core():
    """Events a decoder never makes (built by hand): non-ASCII ids, bools for ints, huge
    numbers, a non-bool validity; the native core passes them to the Python core or, for ids
    that are not ASCII, builds the same ids itself."""
    rules = rules_from_record({"large_win_alert_cents": 1000})
    t = "Tablé-ü"
    events = [TableOpened(t, 1, 0, "hybrid", rules, {"large_win_alert_cents": 1000}),
              ShooterChanged(t, 2, 5, "tireur-é", 3, "table_open")]
    seq = 2
    for wid, kind, amount, pos in [("wé1", "fire", 500, 1), ("w2", "all_small", 2500, True),
                                   ("w3", "hot_roller", 2**70, 2), ("w4", "all_tall", 500, 1.0),
                                   ("w5", "hot_shooter", 500, 4), ("w6", "all_or_nothing", 1000, 16),
                                   ("w7", "hot_roller", 500, 5), ("w8", "fire", 300, 6)]:
        seq += 1
        events.append(WagerPlaced(t, seq, 10 * seq, wid, pos, kind, amount))
    rng = random.Random(3)
    for _ in range(400):
        seq += 1
        valid = rng.choice([True, True, True, True, False, 1, None])
        events.append(DiceThrown(t, seq, 10 * seq, rng.randint(1, 6), rng.randint(0, 7), valid))
        if rng.random() < 0.05:
            seq += 1
            events.append(ShooterChanged(t, seq, 10 * seq, f"s{seq}", rng.randint(0, 17),
                                         rng.choice(["seven_out", "voluntary", "compulsory", "x"])))
        if rng.random() < 0.2:
            seq += 1
            events.append(WagerPlaced(t, seq, 10 * seq, f"wé{seq}", rng.randint(1, 16),
                                      rng.choice(["fire", "all_small", "all_tall", "all_or_nothing",
                                                  "hot_roller", "hot_shooter"]), 500))
    counts = lockstep(events)
    assert counts["outputs"] > 50, counts


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


def test_an_extension_of_other_sources_is_refused(tmp_path):
    """A rule edited in native/src/ without a rebuild: the digests differ and the extension is
    refused with the way out; a bare cargo build (no digest) is refused too; no sources to compare
    (an installation outside a checkout): nothing to say."""
    import shutil
    from types import SimpleNamespace

    sources = tmp_path / "native"
    shutil.copytree(native.SOURCES, sources, ignore=shutil.ignore_patterns("target"))
    built = SimpleNamespace(SOURCE_DIGEST=native._native.SOURCE_DIGEST)
    assert native.stale_build(built, sources) is None
    rule = sources / "src" / "fire_bet.rs"
    rule.write_text(rule.read_text() + "\n// an edited rule\n")
    problem = native.stale_build(built, sources)
    assert problem is not None and "pip install -e ." in problem
    assert native.stale_build(SimpleNamespace(), native.SOURCES) is not None
    assert native.stale_build(built, tmp_path / "elsewhere") is None
