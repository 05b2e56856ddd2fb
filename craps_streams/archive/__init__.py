"""The archive: the table-events topic kept in Avro Object Container Files, resumably, and verified.

One module per job: index (the index file and its offset ranges), writer (ArchiveWriter and the
`archive` run from Kafka), reader (iterating an archive for replay, partition groups for parallel
replay), verify (offsets contiguous, seq walk).

Layout of an archive directory:

    DIR/index.json                               what is archived (the only source of truth)
    DIR/2026-01-01/p3-000000000123.avro          events of partition 3, UTC day of the event `ts`,
                                                 first offset 123 in the name
    DIR/undecodable/p3-000000000456.jsonl        messages that are not decodable Avro: base64 key
                                                 and value with partition and offset, nothing lost

`index.json` lists per file its partition, first and last offset, the offset ranges it holds (a
partition's messages spread over several files when they cross a day, so one file's offsets are not
always contiguous), min and max `ts`, count and tables; and per partition the next offset to
archive. A run reads from those offsets up to the end offsets as of its start (read_committed),
writes each file to a temporary name, renames it, and only then rewrites the index (also atomically):
a crash at any point leaves an archive whose index is right, and the next run continues after the
last archived offset without duplicating anything. Files not named by the index (left over by a
crash between the rename and the index update) are removed at the start of a run.

`verify` checks that per partition the archived offsets cover a contiguous range with one record
per offset (no hole, no overlap), and walks every table's `seq` in offset order reporting gaps and
duplicates: the floor may send those (they are findings about the floor, not about the archive).
"""
from __future__ import annotations

from craps_streams.archive.index import INDEX, UNDECODABLE_DIR, day_of, load_index
from craps_streams.archive.reader import (
    after_slice,
    archive_topic,
    iter_archive,
    iter_archive_after,
    iter_archive_batches,
    iter_archive_fast,
    partition_groups,
)
from craps_streams.archive.verify import Verification, verify
from craps_streams.archive.writer import ArchiveResult, ArchiveWriter, archive

__all__ = ["INDEX", "UNDECODABLE_DIR", "ArchiveResult", "ArchiveWriter", "Verification", "archive",
           "after_slice", "archive_topic", "day_of", "iter_archive", "iter_archive_after", "iter_archive_batches", "iter_archive_fast",
           "load_index", "partition_groups", "verify"]
