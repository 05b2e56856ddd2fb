"""Key rings for the tests: made in memory with fixed secrets (so a failing example reproduces)."""
from __future__ import annotations

import hashlib

from craps_streams.authenticity import KeyRing, TableKey


def key(key_id: str, tables, not_before: int = 0, not_after: int | None = None) -> TableKey:
    return TableKey(key_id, hashlib.sha256(key_id.encode()).digest(), frozenset(tables), not_before, not_after)


def ring_for(tables, start: int = 0) -> KeyRing:
    """One key per table, `k-<table>`, valid from `start`."""
    return KeyRing(tuple(key(f"k-{t}", {t}, start) for t in tables))
