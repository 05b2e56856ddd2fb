"""Authentication tags: HMAC-SHA256 (RFC 2104, FIPS 198-1) of an event's canonical bytes with its
table controller's key, written base64url without padding (43 characters) beside the key id.

`TableSigner` tags events as a table controller does; `TagCheck` judges a tag before the rules
see the event. A tag is compared as the exact text a signer writes (in constant time), so no other
spelling of the same 32 bytes (base64's unused low bits, padding) passes: one event, one tag.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
from binascii import b2a_base64 as _b2a
from msgspec.structs import replace  # events are msgspec Structs

from craps_streams.authenticity.canonical import FORMAT_OF, canonical_bytes
from craps_streams.authenticity.keyring import KeyRing, TableKey
from craps_streams.authenticity.native_tags import native_keys

BAD_SIGNATURE, UNKNOWN_KEY = "bad_signature", "unknown_key"
REASONS = (BAD_SIGNATURE, UNKNOWN_KEY)
_b64 = base64.urlsafe_b64encode
_digest = hmac.digest
_same = hmac.compare_digest
_URLSAFE = bytes.maketrans(b"+/", b"-_")
_BLOCK = 64  # SHA-256's block size (RFC 2104's B)


def hmac_pads(secret: bytes) -> tuple:
    """SHA-256 states that have already hashed the key's inner and outer pads (RFC 2104: K xor
    ipad, K xor opad, K first hashed when longer than a block). HMAC(K, m) is then
    H(opad-state + H(ipad-state + m)): two state copies per message instead of hashing both pads
    again. `hmac.digest` redoes the pads (and, under OpenSSL 3, looks the digest up by name) for
    every call: about 2.3 µs a tag, against 1.0 µs from the kept states. Same bytes; the tests
    compare it with `hmac.digest`."""
    if len(secret) > _BLOCK:
        secret = hashlib.sha256(secret).digest()
    secret = secret.ljust(_BLOCK, b"\0")
    return (hashlib.sha256(bytes(b ^ 0x36 for b in secret)), hashlib.sha256(bytes(b ^ 0x5C for b in secret)))


def tag_text(pads: tuple, message: bytes) -> bytes:
    """The tag's text (ASCII bytes: base64url of HMAC-SHA256, no padding) from `hmac_pads`:
    the text `tag_of` writes."""
    inner = pads[0].copy()
    inner.update(message)
    outer = pads[1].copy()
    outer.update(inner.digest())
    # base64 of 32 bytes is 43 characters and one "=": cut, then the URL-safe alphabet.
    return _b2a(outer.digest(), newline=False)[:43].translate(_URLSAFE)


def tag_of(key: TableKey, event) -> str:
    """The tag `key` makes over `event` (whose key_id must already be key's id)."""
    return _b64(_digest(key.secret, canonical_bytes(event), "sha256")).rstrip(b"=").decode("ascii")


def signed(key: TableKey, event):
    """The event with key's id and its tag (any tag it carried is replaced)."""
    event = replace(event, key_id=key.key_id, tag=None)
    return replace(event, tag=tag_of(key, event))


class TableSigner:
    """Tags events with the key each table signs with at the event's time (`KeyRing.signing_key`)."""

    def __init__(self, ring: KeyRing):
        self.ring = ring
        self._rings: dict = {}  # table id -> a ring of the keys bound to it (a floor has many tables)
        for k in ring.keys:
            for t in k.tables:
                self._rings.setdefault(t, []).append(k)
        self._rings = {t: KeyRing(tuple(ks)) for t, ks in self._rings.items()}

    def key_for(self, table_id: str, ts: int) -> TableKey | None:
        """`KeyRing.signing_key`, among the table's own keys."""
        ring = self._rings.get(table_id)
        return None if ring is None else ring.signing_key(table_id, ts)

    def sign(self, event):
        """The event tagged; LookupError when no key may sign for its table at its time."""
        key = self.key_for(event.table_id, event.ts)
        if key is None:
            raise LookupError(f"no key signs for table {event.table_id!r} at ts {event.ts}")
        return signed(key, event)


def _fast_keys(ring: KeyRing) -> dict:
    """key id -> (tables, not_before, not_after, hmac_pads): what `TagCheck.problem`'s fast path
    needs of each key."""
    return {k.key_id: (k.tables, k.not_before, k.not_after, hmac_pads(k.secret)) for k in ring.keys}


class TagCheck:
    """Judges events' tags against a key ring. `accept_untagged` lets an event with neither key id
    nor tag through (history written before tags; counted in `untagged`), never a partial one."""

    def __init__(self, ring: KeyRing, accept_untagged: bool = False):
        self.ring = ring
        self.keys = ring.by_id()
        self.accept_untagged = accept_untagged
        self.untagged = 0  # events let through untagged
        self._fast = _fast_keys(ring)
        self._native = native_keys(ring)  # None unless the native code is chosen (native_tags.py)

    # The pads are hash states and the native keys a native object, neither of which pickles (a
    # parallel replay sends the check to its jobs): they are left out and made again from the ring.
    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_fast", "_native")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._fast = _fast_keys(self.ring)
        self._native = native_keys(self.ring)

    @property
    def native(self):
        """The ring's native keys (craps_streams/authenticity/native_tags.py), or None when the Python
        fast path checks: what a run of quiet events checks tags with (craps_streams/settle/quiet.py)."""
        return self._native

    def problem(self, event) -> tuple[str, str] | None:
        """None when the event is authentic (or an accepted untagged one), else (reason, message):
        reason `unknown_key` (a key id the ring does not have) or `bad_signature` (no tag, a key
        not bound to the table or not valid at the event's time, a tag that does not match).

        The hot path (every event the worker and replay read): an authentic event is recognised
        with the key's pads kept (`hmac_pads`) and its table and validity tested inline; anything
        else, and every answer but None, comes from `problem_plain`, which words the problems.
        The tests hold both to the same answer on honest, forged and odd events. With the native
        code chosen, its check is the fast path instead (craps_streams/authenticity/native_tags.py)."""
        native = self._native
        if native is not None:
            return None if native.authentic(event) else self.problem_plain(event)
        tag = event.tag
        fast = self._fast.get(event.key_id)
        if fast is not None and type(tag) is str:
            tables, not_before, not_after, pads = fast
            ts = event.ts
            if event.table_id in tables and not_before <= ts and (not_after is None or ts < not_after):
                inner = pads[0].copy()  # `tag_text`, inline (a call less per event)
                inner.update(FORMAT_OF[type(event)](event))  # canonical_bytes(event), inline
                outer = pads[1].copy()
                outer.update(inner.digest())
                expected = _b2a(outer.digest(), newline=False)[:43].translate(_URLSAFE)
                if _same(expected, tag.encode("utf-8", "replace")):
                    return None
        return self.problem_plain(event)

    def problem_plain(self, event) -> tuple[str, str] | None:
        """`problem` by its definition, step by step (the reference of the fast path)."""
        key_id, tag = event.key_id, event.tag
        if key_id is None or tag is None:
            if key_id is None and tag is None:
                if self.accept_untagged:
                    self.untagged += 1
                    return None
                return BAD_SIGNATURE, "the event carries no authentication tag (key_id and tag missing)"
            return BAD_SIGNATURE, f"the event carries {'a key id but no tag' if tag is None else 'a tag but no key id'}"
        key = self.keys.get(key_id)
        if key is None:
            return UNKNOWN_KEY, f"key {key_id[:64]!r} is not in the key ring"
        if event.table_id not in key.tables:
            return BAD_SIGNATURE, f"key {key_id} is not bound to table {event.table_id} (it signs for " \
                                  f"{', '.join(sorted(key.tables)[:5])}{' ...' if len(key.tables) > 5 else ''})"
        if not key.valid_at(event.ts):
            if key.not_after is not None and event.ts >= key.not_after:
                return BAD_SIGNATURE, f"key {key_id} was retired at ts {key.not_after}; the event is stamped {event.ts}"
            return BAD_SIGNATURE, f"key {key_id} is valid only from ts {key.not_before}; the event is stamped {event.ts}"
        expected = _b64(_digest(key.secret, canonical_bytes(event), "sha256")).rstrip(b"=")
        if not _same(expected, tag.encode("utf-8", "replace")):
            return BAD_SIGNATURE, f"the tag does not match the event under key {key_id} (altered, forged or " \
                                  f"copied from another event)"
        return None

    @staticmethod
    def rejection(event, reason: str, message: str) -> list:
        """The outputs of an event that failed: its EventRejected and a forged_event alert."""
        from craps_streams.authenticity.rejection import forged_outputs

        return forged_outputs(event, reason, message)


def sign_record(signer: TableSigner, record):
    """A contract record tagged as its table controller sends it: the record with `key_id` and
    `tag` added (its other fields as they were). Anything that is no event (a torn line, a record
    the contract refuses) is returned unchanged, to be rejected downstream as it is."""
    from craps_streams.rules.contract import ContractError, record_to_event

    if type(record) is not dict:
        return record
    try:
        event = record_to_event({k: v for k, v in record.items() if k not in ("key_id", "tag")})
    except ContractError:
        return record
    tagged = signer.sign(event)
    return {**record, "key_id": tagged.key_id, "tag": tagged.tag}
