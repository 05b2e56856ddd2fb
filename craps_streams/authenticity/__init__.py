"""Authentic events per table: table controllers' keys, the canonical bytes of an event, its
HMAC-SHA256 tag, and the check made before the rules core sees an event (docs/security.md).

Pure but for `keyfile` (the key ring file) and `keyfile.new_secret` (the operating system's
randomness)."""
from craps_streams.authenticity.canonical import canonical_bytes
from craps_streams.authenticity.keyring import KeyRing, KeyRingError, TableKey
from craps_streams.authenticity.rejection import FORGED_EVENT, forged_outputs
from craps_streams.authenticity.tags import BAD_SIGNATURE, UNKNOWN_KEY, TableSigner, TagCheck, sign_record, signed, tag_of

__all__ = ["BAD_SIGNATURE", "FORGED_EVENT", "UNKNOWN_KEY", "KeyRing", "KeyRingError", "TableKey", "TableSigner",
           "TagCheck", "canonical_bytes", "forged_outputs", "sign_record", "signed", "tag_of"]
