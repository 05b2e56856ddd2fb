"""Table controllers' keys: which key may sign for which tables, and when (in event time).

A key is `key_id`, a 32-byte secret, the tables it is bound to, and its validity in event time:
it authenticates an event when the event's table is one of its tables and
`not_before <= event.ts < not_after` (`not_after` None: open-ended). Validity is judged on the
event's own `ts`, never on a clock, so a replay of old history judges exactly as the worker did.

Rotation without stopping the floor: `rotated` adds a new key for the tables from a time `at` and
ends the old keys' validity a grace period later, so an event stamped before the switch, or by a
controller still switching, keeps verifying; `retired` ends a key's validity at a time (a
compromised key: from the time it may have leaked). A key is never deleted: history signed with
it must stay verifiable. The key ring is pure data; `keyfile` reads and writes it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

KEY_ID_PATTERN = r"[A-Za-z0-9_.-]{1,64}"
_KEY_ID = re.compile(KEY_ID_PATTERN)
SECRET_BYTES = 32  # HMAC-SHA256's block-size-safe key length (RFC 2104: at least the output size)


class KeyRingError(ValueError):
    """A key ring that cannot be used as it is (bad key id, short secret, overlapping ids...)."""


@dataclass(frozen=True, slots=True)
class TableKey:
    key_id: str
    secret: bytes = field(repr=False)  # never printed
    tables: frozenset
    not_before: int = 0  # event time, epoch ms, inclusive
    not_after: int | None = None  # event time, epoch ms, exclusive; None: until retired
    created: str = ""  # when it was made (wall clock, ISO 8601), for the record only

    def valid_at(self, ts: int) -> bool:
        return self.not_before <= ts and (self.not_after is None or ts < self.not_after)

    def signs_for(self, table_id: str) -> bool:
        return table_id in self.tables


@dataclass(frozen=True, slots=True)
class KeyRing:
    keys: tuple = ()  # TableKey, in the order they were made

    def __post_init__(self):
        seen = set()
        for k in self.keys:
            if not _KEY_ID.fullmatch(k.key_id):
                raise KeyRingError(f"key id {k.key_id!r} is not {KEY_ID_PATTERN}")
            if k.key_id in seen:
                raise KeyRingError(f"key id {k.key_id!r} appears twice")
            if len(k.secret) < SECRET_BYTES:
                raise KeyRingError(f"key {k.key_id}: secret of {len(k.secret)} bytes, at least {SECRET_BYTES}")
            if k.not_after is not None and k.not_after < k.not_before:
                raise KeyRingError(f"key {k.key_id}: not_after before not_before")
            seen.add(k.key_id)

    def by_id(self) -> dict:
        return {k.key_id: k for k in self.keys}

    def get(self, key_id: str) -> TableKey | None:
        for k in self.keys:
            if k.key_id == key_id:
                return k
        return None

    def signing_key(self, table_id: str, ts: int) -> TableKey | None:
        """The key a controller signs this table's event at `ts` with: of the keys bound to the
        table and valid at `ts`, the newest (the latest `not_before`, then the latest made)."""
        best = None
        for k in self.keys:
            if table_id in k.tables and k.valid_at(ts) and (best is None or k.not_before >= best.not_before):
                best = k
        return best

    def tables(self) -> frozenset:
        return frozenset(t for k in self.keys for t in k.tables)

    def only(self, tables) -> "KeyRing":
        """The keys bound to none but `tables`: what a controller serving those tables holds (a
        key also bound to another table would let its host forge that table's events)."""
        tables = frozenset(tables)
        return KeyRing(tuple(k for k in self.keys if k.tables <= tables))

    # ---- changes: each returns a new ring

    def with_key(self, key: TableKey) -> "KeyRing":
        return KeyRing((*self.keys, key))

    def rotated(self, tables, at: int, new_key: TableKey, grace_ms: int = 60_000) -> "KeyRing":
        """`new_key` signs for `tables` from `at`; every other key bound to one of those tables
        stops being valid at `at + grace_ms` (unless it already ends before)."""
        tables = frozenset(tables)
        if new_key.tables != tables or new_key.not_before != at:
            raise KeyRingError("the new key must be bound to exactly the rotated tables, from `at`")
        end = at + grace_ms
        kept = tuple(replace(k, not_after=end) if k.tables & tables and (k.not_after is None or k.not_after > end)
                     else k for k in self.keys)
        return KeyRing((*kept, new_key))

    def retired(self, key_id: str, at: int) -> "KeyRing":
        """Key `key_id` authenticates no event stamped at or after `at` (kept for older history)."""
        if self.get(key_id) is None:
            raise KeyRingError(f"no key {key_id!r}")
        return KeyRing(tuple(replace(k, not_after=at if k.not_after is None else min(k.not_after, at))
                             if k.key_id == key_id else k for k in self.keys))
