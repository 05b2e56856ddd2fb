"""The accelerator's context (native/src/slots.rs): `init` replaces it, and the one it replaces is
dropped, with every Python reference it held, once no running call holds it; a call that
re-initialises it meanwhile (Python code called back from the native core) finishes on its own."""
from __future__ import annotations

import gc
import sys
import weakref

from craps_streams.accelerator import rules as native
from craps_streams.rules.table import apply as python_apply
from craps_streams.sim.floor import floor_events
from tests.native.lockstep import events_of, requires_accelerator

pytestmark = requires_accelerator


class Fallback:
    """The Python core's fallback, as an object a weak reference can follow."""

    def __init__(self, reinit: bool = False):
        self.reinit = reinit
        self.calls = 0

    def __call__(self, state, event):
        self.calls += 1
        if self.reinit:
            native.configure()  # replaces the context this very call runs on
        return native._fallback(state, event)


def _init(fallback) -> None:
    native._native.init(native._events, native.APPLIED, fallback, native._view, native.rules_from_record,
                        native.facts())


def test_a_replaced_context_releases_what_it_held():
    fallback = Fallback()
    _init(fallback)
    gone = weakref.ref(fallback)
    del fallback
    native.configure()
    gc.collect()
    assert gone() is None, "the replaced context still holds its fallback"


def _collect() -> None:
    """Collect until nothing is left: an earlier test's garbage whose finalizers free more of it
    takes more than one pass, and must not be counted on one side of a count and not the other."""
    while gc.collect():
        pass


def test_re_initialising_many_times_keeps_no_reference():
    # Every context holds a reference to each object handed to `init`: a context never freed
    # would add one per `init`.
    held = [native._view, native.rules_from_record, native.APPLIED]
    native.configure()  # the context an earlier test installed (its own arguments) replaced first
    _collect()  # what earlier tests left for the collector is not counted on either side
    before = [sys.getrefcount(o) for o in held]
    for _ in range(200):
        native.configure()
    _collect()
    assert [sys.getrefcount(o) for o in held] == before


def test_a_call_outlives_the_context_replaced_during_it():
    fallback = Fallback(reinit=True)
    _init(fallback)
    gone = weakref.ref(fallback)
    del fallback
    try:
        events = list(events_of(floor_events(2, 2, 7, bad_rate=0.05)))[:400]
        native_tables: dict = {}
        python_tables: dict = {}
        for e in events:
            state, out, verdict = native.apply(native_tables.get(e.table_id), e)
            expected = python_apply(python_tables.get(e.table_id), e)
            assert (out, verdict) == expected[1:], e
            if state is not None:
                native_tables[e.table_id] = state
            if expected[0] is not None:
                python_tables[e.table_id] = expected[0]
            assert state is None or state.to_record() == expected[0].to_record(), e
    finally:
        native.configure()
    gc.collect()
    # The first fallback re-initialised the context from inside its call; the replaced context
    # (and its fallback object) lived to the call's end, was dropped then, and every later event
    # settled as the Python core settles it.
    assert gone() is None
