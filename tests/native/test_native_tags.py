"""The native tag check (native/src/tags.rs, craps_streams/authenticity/native_tags.py) beyond its
lockstep with the reference, `TagCheck.problem_plain` (tests/native/test_lockstep.py: every
floor's honest and forged events, every kind of forgery, odd text and numbers, generated events):
the check takes the native keys only where the native code is chosen, and they serve any thread.
Attacks on the whole check (under CRAPS_CORE=native, `make test` runs tests/authenticity again)
are in tests/authenticity/test_tags.py and test_forged_events.py.

They run where the native accelerator is installed (CI: wherever cargo is present; tests/native/lockstep.py).
"""
from __future__ import annotations

import msgspec

from craps_streams.authenticity import TagCheck, signed
from craps_streams.rules.events import DiceThrown
from tests.authenticity.authenticity_keys import ring_for
from tests.native.lockstep import native_keys as native_of
from tests.native.lockstep import requires_accelerator

T0 = 1_767_225_600_000


pytestmark = requires_accelerator


def test_the_check_takes_the_native_path_only_where_chosen():
    """TagCheck uses the native keys when the native code is chosen (CRAPS_CORE=native) and
    gives the same answers either way; it still pickles (a parallel replay sends it to its jobs)."""
    import pickle

    from craps_streams.accelerator.rules import choose, chosen

    ring = ring_for(["A"])
    honest = signed(ring.get("k-A"), DiceThrown("A", 5, T0, 3, 4))
    was = chosen().name
    try:
        for core, native_used in (("python", False), ("native", True)):
            choose(core)
            check = TagCheck(ring)
            assert (check._native is not None) == native_used
            assert check.problem(honest) is None
            assert check.problem(msgspec.structs.replace(honest, die2=5))[0] == "bad_signature"
            again = pickle.loads(pickle.dumps(check))
            assert (again._native is not None) == native_used and again.problem(honest) is None
    finally:
        choose(was)


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


def test_a_tag_differing_in_any_one_character_is_not_authentic():
    """The native compare (six words at a time, the last one partly filled) meets every one of the
    tag's 43 characters: one changed anywhere, or one too few or too many, is not authentic."""
    ring = ring_for(["A"])
    keys = native_of(ring)
    honest = signed(ring.get("k-A"), DiceThrown("A", 5, T0, 3, 4))
    assert keys.authentic(honest) and len(honest.tag) == 43
    for k in range(43):
        other = "A" if honest.tag[k] != "A" else "B"
        assert not keys.authentic(msgspec.structs.replace(honest, tag=honest.tag[:k] + other + honest.tag[k + 1:])), k
    for tag in (honest.tag[:-1], honest.tag + "A", ""):
        assert not keys.authentic(msgspec.structs.replace(honest, tag=tag))
