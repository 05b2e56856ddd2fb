"""A grain's rows (report/figures.py), kept in memory up to `ROWS_HELD` and past it on disk.

A range's report has a row per gaming day, table, wager kind and paytable, per shift and table,
per table: some 3,000 rows a day for 300 tables, over a year a million rows and gigabytes as
dicts. `RowFile` takes them as the figures make them, a gaming day at a time; past `ROWS_HELD`
they are pickled to an unnamed temporary file (removed by the system when closed, or when the
process ends however it ends) in chunks, and read back chunk by chunk by each pass over them (the
CSV, the JSON, the page: report/files.py). A report whose rows fit stays plain lists
(`RowFile.rows`), as it always was.
"""
from __future__ import annotations

import itertools
import os
import pickle
import tempfile
from collections.abc import Iterator

from craps_streams.report.days import TemporaryFilesError

ROWS_HELD = 10_000  # rows a report keeps in memory, all grains together, before it writes them out
CHUNK = 2_000  # rows a chunk written out


class RowFile:
    """Rows appended in order (`append`), iterated in that order as often as needed; a sequence's
    `len`, indexing and equality (indexing reads the rows: for tests and small reports)."""

    def __init__(self, budget: list):
        """`budget`: [rows the report may still hold], shared by its grains."""
        self.budget = budget
        self.held: list = []
        self.file = None  # the chunks written out
        self.chunks_at: list = []  # (offset, length) of each chunk in the file
        self.written = 0

    def append(self, row: dict) -> None:
        self.held.append(row)
        if self.file is not None:
            if len(self.held) >= CHUNK:
                self._write()
            return
        self.budget[0] -= 1
        if self.budget[0] < 0:
            try:
                self.file = tempfile.TemporaryFile(prefix="craps-report-rows-")
            except OSError as e:
                raise TemporaryFilesError.of(e, tempfile.gettempdir()) from e
            self._write()

    def _write(self) -> None:
        try:
            for k in range(0, len(self.held), CHUNK):
                data = pickle.dumps(self.held[k:k + CHUNK], protocol=pickle.HIGHEST_PROTOCOL)
                self.chunks_at.append((self.file.tell(), len(data)))
                self.file.write(data)
            self.file.flush()
        except OSError as e:
            raise TemporaryFilesError.of(e, tempfile.gettempdir()) from e
        self.written += len(self.held)
        self.held = []

    def rows(self):
        """The rows as a plain list where none was written out, else this file."""
        return self.held if self.file is None else self

    def __len__(self) -> int:
        return self.written + len(self.held)

    def __iter__(self) -> Iterator[dict]:
        # Each chunk read at its offset: passes over the rows may overlap (a page's loops).
        if self.file is not None:
            fd = self.file.fileno()
            for offset, length in self.chunks_at:
                yield from pickle.loads(os.pread(fd, length, offset))
        yield from self.held

    def chunks(self) -> Iterator[list]:
        """The rows a list at a time (of at most about `CHUNK`)."""
        it = iter(self)
        while chunk := list(itertools.islice(it, CHUNK)):
            yield chunk

    def __getitem__(self, i):
        return list(self)[i]

    def __eq__(self, other) -> bool:
        if isinstance(other, (RowFile, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return f"RowFile({len(self)} rows, {self.written} written out)"


class Discarded:
    """Rows thrown away as they come (a pass over the figures for their tails alone)."""

    def append(self, row: dict) -> None:
        pass


def chunks_of(rows) -> Iterator[list]:
    """A grain's rows (a list or a `RowFile`) a list at a time."""
    if isinstance(rows, RowFile):
        yield from rows.chunks()
    else:
        for k in range(0, len(rows), CHUNK):
            yield rows[k:k + CHUNK]
