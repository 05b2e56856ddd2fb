"""The one exception the codec lets out, and what is kept of a message it cannot decode."""
from __future__ import annotations

from dataclasses import dataclass


class CodecError(ValueError):
    """Bytes (or a record) that cannot be encoded or decoded with the wire contract.

    Everything the codec or fastavro can raise on bad input (truncated bytes, a wrong magic, an
    unknown schema fingerprint, a field of the wrong type, invalid UTF-8, bad JSON ...) surfaces as
    this, with the original exception chained as ``__cause__``.
    """


@dataclass(slots=True)
class RawMessage:
    """A message of the table-events topic that is not a decodable event, as the worker saw it:
    kept whole (raw bytes, Kafka coordinates, the decoder's error) so nothing is lost. The topic
    replay and the archive yield it; replay turns it into the worker's rejection."""

    value: bytes
    key: bytes | None
    topic: str
    partition: int
    offset: int
    error: str = ""
