"""The one exception the codec lets out."""
from __future__ import annotations


class CodecError(ValueError):
    """Bytes (or a record) that cannot be encoded or decoded with the wire contract.

    Everything the codec or fastavro can raise on bad input (truncated bytes, a wrong magic, an
    unknown schema fingerprint, a field of the wrong type, invalid UTF-8, bad JSON ...) surfaces as
    this, with the original exception chained as ``__cause__``.
    """
