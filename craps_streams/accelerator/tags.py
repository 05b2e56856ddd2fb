"""The tag check's native keys (native/src/tags.rs `TagKeys`): what
craps_streams/authenticity/native_tags.py checks tags with where the accelerator is in use."""
from __future__ import annotations

from craps_streams.accelerator.rules import in_use


def tag_keys(keys: list, formats: list):
    """`TagKeys` of a ring's `keys` ((key id, secret, tables, not before, not after) each) and the
    input classes' canonical `formats`, or None where the accelerator is not in use or cannot hold
    the ring (a validity beyond 64-bit event times: the Python path checks it)."""
    if not in_use():
        return None
    from craps_streams.accelerator import _native

    try:
        return _native.TagKeys(keys, formats)
    except (OverflowError, ValueError, TypeError):
        return None
