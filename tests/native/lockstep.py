"""The lockstep harness: the native accelerator held to the Python core, the same inputs through
both, compared after every step (tests/native/, one module per native path).

Here: the mark every such test carries, the hostile floors' events (records to events as the
contract reads them, events held back to make gaps), and the core's lockstep itself (`lockstep`:
outputs, verdict and the table's record after every event), which the other paths' tests build on.

The tests need the accelerator installed (the package's build compiles it where cargo is on PATH). Where
it is not, they are skipped, saying why: the Python core, which every other test runs, is then the
only core. CI (infra/test.sh) sets CRAPS_CORE=native wherever cargo is present, and with that an
accelerator that is missing, stale or refused is an error at import (streams/rules/__init__.py), so
there these tests can never be skipped."""
from __future__ import annotations

import json
import random

import pytest

from streams.app.shell import state_from_text, state_to_text
from streams.rules import ContractError, output_to_record, record_to_event
from streams.rules import native
from streams.rules.table import apply as python_apply

requires_accelerator = pytest.mark.skipif(
    native.PROBLEM is not None, reason=f"no native accelerator to compare: {native.PROBLEM}")


def events_of(records):
    """Contract records (and torn lines) to events, skipping what the contract refuses."""
    for r in records:
        if type(r) is not dict:
            continue
        try:
            yield record_to_event(r)
        except ContractError:
            continue


def same_record(a: dict, b: dict) -> None:
    assert a == b
    assert json.dumps(a) == json.dumps(b)  # the same keys in the same order, True never 1


def lockstep(events, *, check_every: int = 1, recover: float = 0.0) -> dict:
    """Both cores over the same events (each table's own state, as the worker keeps them);
    returns counts: events, outputs, by verdict, and which the native core judged itself.
    `recover`: the share of events before which the native side's table is replaced by what a
    worker taking the partition over reads back from the changelog (state_to_text, then
    state_from_text: a TableState), on a fixed draw."""
    py_tables: dict = {}
    nat_tables: dict = {}
    counts = {"events": 0, "outputs": 0, "native": 0, "recovered": 0}
    draw = random.Random(15).random
    before = sum(native.FALLBACKS.values())
    for i, e in enumerate(events):
        n_before = nat_tables.get(e.table_id)
        if recover and n_before is not None and draw() < recover:
            n_before = state_from_text(state_to_text(n_before))[0]
            counts["recovered"] += 1
        p_state, p_out, p_verdict = python_apply(py_tables.get(e.table_id), e)
        n_state, n_out, n_verdict = native.apply(n_before, e)
        assert n_verdict is p_verdict, (i, e, n_verdict, p_verdict)
        assert n_out == p_out, (i, e)
        assert [output_to_record(o) for o in n_out] == [output_to_record(o) for o in p_out], (i, e)
        assert [type(o) for o in n_out] == [type(o) for o in p_out]
        assert (n_state is None) == (p_state is None)
        if p_state is not None:
            py_tables[e.table_id] = p_state
            nat_tables[e.table_id] = n_state
            if i % check_every == 0:
                same_record(n_state.to_record(), p_state.to_record())
        counts["events"] += 1
        counts["outputs"] += len(p_out)
        counts[p_verdict] = counts.get(p_verdict, 0) + 1
    for table_id, p_state in py_tables.items():
        same_record(nat_tables[table_id].to_record(), p_state.to_record())
    counts["native"] = counts["events"] - (sum(native.FALLBACKS.values()) - before)
    return counts


def delayed(records, seed: int, rate: float = 0.01, span: int = 6):
    """The floor's records with some held back a few places: gaps, held events, releases."""
    rng = random.Random(seed)
    out: list = []
    late: list = []  # (release index, record)
    for r in records:
        out.append(r)
        if type(r) is dict and rng.random() < rate:
            late.append((len(out) + rng.randint(1, span), out.pop()))
        while late and late[0][0] <= len(out):
            out.append(late.pop(0)[1])
    out.extend(r for _, r in late)
    return out
