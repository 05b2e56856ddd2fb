"""The tag check's fast path in native code: `TagKeys` of the native extension
(native/src/tags.rs, in the accelerator: craps_streams/accelerator/tags.py).

Why: the tag check was the largest single cost of a tagged replay (42 % of `replay FILE.jsonl` on
the native core: canonical bytes, two SHA-256 state copies, base64 and the compare, about 3 us an
event in Python); natively it is one call.

What it may say: `authentic(event)` is True only when the event's tag is exactly the text of
HMAC-SHA256 over its canonical bytes under a key of the ring bound to its table and valid at its
time. Everything else is False, and `TagCheck.problem` then asks `problem_plain`, the reference,
which words every problem and accepts, by the definition, what the native code leaves to it
(TableOpened, text that is not printable ASCII, ints beyond 64 bits, odd types). So the native
code can only say yes where the definition does; tests/native/test_lockstep.py (the `tags` path)
holds it to `problem_plain` on honest, forged and odd events, and its canonical bytes to canonical.py's.

Used where the native code is in use (the chosen rules core is the native one:
craps_streams/accelerator/rules.py `rules_core`, one choice for the native rules core and this);
otherwise the Python fast path of `TagCheck.problem` runs.
"""
from __future__ import annotations

from craps_streams.authenticity.canonical import field_kinds
from craps_streams.authenticity.keyring import KeyRing
from craps_streams.rules.events import INPUT_TYPES


def formats() -> list:
    """(class, type name, own fields with their kinds) of each kind the native code writes."""
    out = []
    for cls in INPUT_TYPES.values():
        kinds = field_kinds(cls)
        if kinds is not None:
            out.append((cls, cls.__name__, kinds))
    return out


def native_keys(ring: KeyRing):
    """The ring's keys for the native check, or None when the native code is not in use (not
    chosen, not built, or stale: craps_streams/accelerator/rules.py says why) or cannot hold this ring (a
    validity beyond 64-bit event times: the Python path checks it)."""
    from craps_streams.accelerator.rules import in_use
    from craps_streams.accelerator.tags import tag_keys

    if not in_use():
        return None
    return tag_keys([(k.key_id, k.secret, tuple(k.tables), k.not_before, k.not_after) for k in ring.keys], formats())
