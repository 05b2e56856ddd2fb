"""Tagged histories for the replay benchmarks, from a fresh clone.

`craps-streams replay` checks every event's authentication tag before the rules and
refuses to start without a key ring (`.secrets/table-keys.json`, which a fresh clone does not
have). A benchmark of the real command therefore signs its history with a key ring of its own,
written to a temporary directory (mode 0600, as `keyfile.save` writes every ring) and handed to
the command with `--keys PATH`: the figures then include the tag check, as a casino runs it.

The keys are derived from the table ids (SHA-256 of a fixed label and the id), not drawn at random:
only so that a signed history cached in /tmp between runs of a benchmark still verifies under the
ring the next run writes. They protect nothing; never use such a ring for a real floor
(`craps-streams keys init` draws real keys from the operating system).
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable, Iterator

from craps_streams.authenticity import KeyRing, TableKey, TableSigner, sign_record
from craps_streams.authenticity import keyfile


def bench_ring(tables: Iterable[str]) -> KeyRing:
    """One key per table, derived from its id (reproducible; a benchmark's only)."""
    return KeyRing(tuple(TableKey(f"bench.{t}", hashlib.sha256(b"craps-streams benchmark key:" + t.encode()).digest(),
                                  frozenset({t})) for t in sorted(set(tables))))


def write_ring(ring: KeyRing, directory: str | Path) -> Path:
    """The ring written as `directory/table-keys.json` (0600), for `replay --keys`."""
    return keyfile.save(ring, Path(directory) / "table-keys.json")


def signed(records: Iterable, ring: KeyRing) -> Iterator:
    """The records tagged as their table controllers send them (`sign_record`: anything that is
    no valid event passes unchanged, to be rejected downstream as it would be)."""
    signer = TableSigner(ring)
    for r in records:
        yield sign_record(signer, r)
