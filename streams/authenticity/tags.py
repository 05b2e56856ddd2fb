"""Authentication tags: HMAC-SHA256 (RFC 2104, FIPS 198-1) of an event's canonical bytes with its
table controller's key, written base64url without padding (43 characters) beside the key id.

`TableSigner` tags events as a table controller does; `TagCheck` judges a tag before the rules
see the event. A tag is compared as the exact text a signer writes (in constant time), so no other
spelling of the same 32 bytes (base64's unused low bits, padding) passes: one event, one tag.
"""
from __future__ import annotations

import base64
import hmac
from msgspec.structs import replace  # events are msgspec Structs

from streams.authenticity.canonical import canonical_bytes
from streams.authenticity.keyring import KeyRing, TableKey

BAD_SIGNATURE, UNKNOWN_KEY = "bad_signature", "unknown_key"
REASONS = (BAD_SIGNATURE, UNKNOWN_KEY)
_b64 = base64.urlsafe_b64encode
_digest = hmac.digest
_same = hmac.compare_digest


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


class TagCheck:
    """Judges events' tags against a key ring. `accept_untagged` lets an event with neither key id
    nor tag through (history written before tags; counted in `untagged`), never a partial one."""

    def __init__(self, ring: KeyRing, accept_untagged: bool = False):
        self.ring = ring
        self.keys = ring.by_id()
        self.accept_untagged = accept_untagged
        self.untagged = 0  # events let through untagged

    def problem(self, event) -> tuple[str, str] | None:
        """None when the event is authentic (or an accepted untagged one), else (reason, message):
        reason `unknown_key` (a key id the ring does not have) or `bad_signature` (no tag, a key
        not bound to the table or not valid at the event's time, a tag that does not match)."""
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
        from streams.authenticity.rejection import forged_outputs

        return forged_outputs(event, reason, message)


def sign_record(signer: TableSigner, record):
    """A contract record tagged as its table controller sends it: the record with `key_id` and
    `tag` added (its other fields as they were). Anything that is no event (a torn line, a record
    the contract refuses) is returned unchanged, to be rejected downstream as it is."""
    from streams.rules.contract import ContractError, record_to_event

    if type(record) is not dict:
        return record
    try:
        event = record_to_event({k: v for k, v in record.items() if k not in ("key_id", "tag")})
    except ContractError:
        return record
    tagged = signer.sign(event)
    return {**record, "key_id": tagged.key_id, "tag": tagged.tag}
