"""The native tag check (native/src/tags.rs, streams/authenticity/native_tags.py) held to the
reference, `TagCheck.problem_plain`: it says authentic only where the reference does (never a
forged, altered, copied, misbound, expired or not-yet-valid event), says authentic for every
honest event it can write the canonical bytes of, and writes those bytes exactly as
streams/authenticity/canonical.py does. Attacks on the whole check (under CRAPS_CORE=native,
`make test` runs tests/authenticity again) are in tests/authenticity/test_tags.py and test_forged_events.py.

They run where the native accelerator is installed (CI: wherever cargo is present; tests/native/lockstep.py).
"""
from __future__ import annotations

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from streams.authenticity import KeyRing, TagCheck, signed
from streams.authenticity.canonical import canonical_bytes_general
from streams.authenticity.native_tags import formats
from streams.rules import native
from streams.rules.events import ComeBetsOnly, DiceThrown, ShooterChanged, TableClosed, TableOpened, WagerPlaced
from streams.sim.floor import floor_events
from streams.rules import ContractError, record_to_event
from tests.native.lockstep import requires_accelerator
from tests.authenticity.authenticity_events import ANY_TAGGED_EVENT
from tests.authenticity.authenticity_keys import key, ring_for
from tests.authenticity.test_canonical import _ODD, _with_odd_strings

T0 = 1_767_225_600_000


pytestmark = requires_accelerator


def native_of(ring: KeyRing):
    return native._native.TagKeys([(k.key_id, k.secret, tuple(k.tables), k.not_before, k.not_after)
                                   for k in ring.keys], formats())


def agree(check: TagCheck, keys, event) -> bool:
    """The native answer, asserted never to be yes where the reference says no."""
    says = keys.authentic(event)
    reference = check.problem_plain(event) is None
    assert not says or reference, event
    return says


def test_every_honest_event_of_a_floor_is_authentic_natively():
    events = []
    for r in floor_events(6, 2, 3, bad_rate=0.0):
        try:
            events.append(record_to_event(r))
        except ContractError:
            continue
    ring = ring_for(sorted({e.table_id for e in events}))
    check, keys = TagCheck(ring), native_of(ring)
    n = 0
    for e in events:
        honest = signed(ring.get(f"k-{e.table_id}"), e)
        if type(e) is TableOpened:
            assert not keys.authentic(honest)  # its rules object: the Python path's
            continue
        assert agree(check, keys, honest), honest
        assert keys.canonical_bytes(honest) == canonical_bytes_general(honest)
        n += 1
    assert n > 5000


def test_forgeries_are_never_authentic():
    ring = KeyRing((key("k-A", {"A"}, T0, T0 + 1000), key("k-B", {"B"})))
    check, keys = TagCheck(ring), native_of(ring)
    a = ring.get("k-A")
    honest = signed(a, DiceThrown("A", 5, T0 + 10, 3, 4))
    assert agree(check, keys, honest)
    replace = msgspec.structs.replace
    forged = [
        replace(honest, die1=4),  # altered dice
        replace(honest, seq=6), replace(honest, ts=T0 + 11), replace(honest, valid=False),
        replace(honest, table_id="B"),  # moved to another table
        replace(honest, key_id="k-B"),  # presented under another key
        replace(honest, key_id="k-C"),  # an unknown key
        replace(honest, tag=honest.tag[:-1] + ("A" if honest.tag[-1] != "A" else "B")),
        replace(honest, tag=honest.tag + "="), replace(honest, tag=honest.tag[:42]),
        replace(honest, tag=None), replace(honest, key_id=None), replace(honest, key_id=None, tag=None),
        replace(honest, tag=honest.tag.lower() if honest.tag != honest.tag.lower() else honest.tag.upper()),
        signed(a, DiceThrown("A", 5, T0 + 1000, 3, 4)),  # signed after the key's retirement
        signed(a, DiceThrown("A", 5, T0 - 1, 3, 4)),  # before it is valid
        signed(a, DiceThrown("B", 5, T0 + 10, 3, 4)),  # a key signing for a table not its own
        # the tag of one kind presented on another with the same fields' text
        replace(signed(a, ComeBetsOnly("A", 5, T0 + 10, True)), key_id="k-A", tag=honest.tag),
        DiceThrown("A", 5, T0 + 10, 3, 4, True, key_id="k-A", tag="A" * 43),
    ]
    for f in forged:
        assert not agree(check, keys, f), f
        assert check.problem(f) is not None


def test_odd_text_and_numbers_are_left_to_the_reference():
    """Every ASCII character and some beyond, in every string field of every kind; numbers at
    and beyond 64 bits; bools for ints. The native code writes the canonical bytes of printable
    ASCII (json's own text there) and leaves the rest to Python: never different bytes."""
    written = left = 0
    for event in _with_odd_strings():
        mine = native_of(ring_for(["T1"])).canonical_bytes(event)
        if mine is None:
            left += 1
        else:
            assert mine == canonical_bytes_general(event), event
            written += 1
    printable = sum(1 for c in _ODD if len(c) == 1 and 0x20 <= ord(c) <= 0x7e)
    assert written == (6 * 2 + 5) * printable and left == (6 * 2 + 5) * (len(_ODD) - printable)
    keys = native_of(ring_for(["T1"]))
    for v in (0, -1, 2**63 - 1, -(2**63), 2**64, -(2**70), True, False):
        for event in (DiceThrown("T1", 2, 3, v, 5, key_id="k"), WagerPlaced("T1", 2, 3, "w", 1, "fire", v, key_id="k"),
                      ShooterChanged("T1", 2, v, "s", 1, "voluntary", key_id="k"), TableClosed("T1", v, 3, key_id="k")):
            mine = keys.canonical_bytes(event)
            fits = type(v) is int and -(2**63) <= v < 2**63
            assert (mine is not None) == fits, (v, event)
            if fits:
                assert mine == canonical_bytes_general(event)


@settings(max_examples=300, deadline=None)
@given(ANY_TAGGED_EVENT, st.booleans())
@example(DiceThrown("A", 5, T0, 3, 4, key_id="k-A", tag="x" * 43), True)
def test_the_native_answer_is_the_reference_s(event, sign):
    """On any contract-valid event, signed honestly or carrying a random tag: the native check
    says authentic exactly when the reference does, but for the kinds and text it leaves to the
    reference (then it says no, and TagCheck asks the reference)."""
    k = key(f"k-{event.table_id}", {event.table_id})
    ring = KeyRing((k,))
    if sign:
        event = signed(k, event)
    check, keys = TagCheck(ring), native_of(ring)
    says = agree(check, keys, event)
    if keys.canonical_bytes(event) is not None and event.key_id == k.key_id:
        assert says == (check.problem_plain(event) is None)
        assert keys.canonical_bytes(event) == canonical_bytes_general(event)


def test_the_check_takes_the_native_path_only_where_chosen(monkeypatch):
    """TagCheck uses the native keys when the native code is chosen (CRAPS_CORE=native) and
    gives the same answers either way; it still pickles (a parallel replay sends it to its jobs)."""
    import pickle

    import streams.rules

    ring = ring_for(["A"])
    honest = signed(ring.get("k-A"), DiceThrown("A", 5, T0, 3, 4))
    for core, native_used in (("python", False), ("native", True)):
        monkeypatch.setattr(streams.rules, "CORE", core)
        check = TagCheck(ring)
        assert (check._native is not None) == native_used
        assert check.problem(honest) is None
        assert check.problem(msgspec.structs.replace(honest, die2=5))[0] == "bad_signature"
        again = pickle.loads(pickle.dumps(check))
        assert (again._native is not None) == native_used and again.problem(honest) is None


def test_the_native_keys_serve_any_thread():
    """A check built in one thread answers in another (the worker builds it at start; a thread of
    a server or a test may use it): the native keys are not bound to their thread."""
    import threading

    ring = ring_for(["A"])
    keys = native_of(ring)
    honest = signed(ring.get("k-A"), DiceThrown("A", 5, T0, 3, 4))
    answers = []
    thread = threading.Thread(target=lambda: answers.append(keys.authentic(honest)))
    thread.start()
    thread.join()
    assert answers == [True]
