"""The lines of the gaming days a report's pass has left behind, kept on disk until the figures
read them back one gaming day at a time.

A report's pass books a line per gaming day, shift, table, wager kind and paytable
(craps_streams/report/build.py). Held until the figures are made, a range of many days would keep
them all: some 30 MB a day for 300 tables, a year's range more than this machine's memory. So
once the pass holds more than `SPILL_LINES` lines, it writes those of the shifts it has left
behind (`LeftDays.write_days`) to a directory of its own (pickled, a file per gaming day and writing),
and the figures take each day's lines (`day_lines`) when they come to that day. A report then
holds about three gaming days of lines, whatever the range.

A line can be written in parts: its shift met again after it was written (a history out of time
order, an archive read partition after partition, a job of `--jobs` writing its own). The parts
are added back together (`Line.merge`: every figure of a line is a sum), so the figures are those
of the line booked whole; tests/report/test_report_days.py holds reports written in parts to the
report held whole, byte for byte.

The files are the pass's own: a directory made with `tempfile.mkdtemp` (mode 0700), read only by
the process that made it or the jobs it started, and removed with the report (`close`).
"""
from __future__ import annotations

import os
import pickle
import shutil
import tempfile
from datetime import date

SPILL_LINES = 4_000  # lines the pass holds before it writes those of the shifts left behind
KEPT_MS = 36 * 3_600_000  # the lines kept on each side of the latest shift booked


class TemporaryFilesError(OSError):
    """The report's temporary files (days.py, rows.py) could not be written: a full or unwritable
    temporary directory, said as such rather than as a history that cannot be read."""

    @classmethod
    def of(cls, e: OSError, where: str) -> "TemporaryFilesError":
        return cls(e.errno, f"cannot write the report's temporary files in {where} (TMPDIR): "
                            f"{e.strerror or e}")


class LeftDays:
    """The days' lines written out so far: `write_days` (in the pass), `day` (the figures).
    `directory`: one shared with jobs (each writes its own files there); None: made at the first
    `write_days`, removed by `close`."""

    def __init__(self, directory: str | None = None):
        self.directory = directory
        self.owned = directory is None
        self.written = 0  # lines written out by this process (a line written in parts: each part)

    def shared(self) -> str:
        """The directory (made now if it was not), for jobs to write theirs in (`LeftDays(it)`)."""
        if self.directory is None:
            try:
                self.directory = tempfile.mkdtemp(prefix="craps-report-days-")
            except OSError as e:
                raise TemporaryFilesError.of(e, tempfile.gettempdir()) from e
        return self.directory

    def write_days(self, by_day: dict) -> None:
        """Write `by_day` ({day: [(key, Line)]}), a file per day; TemporaryFilesError where it cannot."""
        if not by_day:
            return
        directory = self.shared()
        try:
            for day, pairs in by_day.items():
                # a name of its own (jobs write in the same directory, a job may book several groups)
                fd, _ = tempfile.mkstemp(prefix=f"{day.isoformat()}.", suffix=".lines", dir=directory)
                with open(fd, "wb") as fo:
                    pickle.dump(pairs, fo, protocol=pickle.HIGHEST_PROTOCOL)
                self.written += len(pairs)
        except OSError as e:
            raise TemporaryFilesError.of(e, directory) from e

    def day(self, day: date) -> dict:
        """The lines written out for `day` ({key: Line}, a line's parts added together)."""
        into: dict = {}
        if self.directory is None:
            return into
        prefix = day.isoformat() + "."
        for name in sorted(os.listdir(self.directory)):
            if name.startswith(prefix) and name.endswith(".lines"):
                with open(os.path.join(self.directory, name), "rb") as fo:
                    pairs = pickle.load(fo)
                for key, line in pairs:
                    known = into.get(key)
                    if known is None:
                        into[key] = line
                    else:
                        known.merge(line)
        return into

    def close(self) -> None:
        """Remove the directory, where this made it."""
        if self.owned and self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None


def by_day(pairs) -> dict:
    """{day: [(key, Line)]} of (key, Line) pairs keyed (day, shift, table, *lk)."""
    out: dict = {}
    for key, line in pairs:
        out.setdefault(key[0], []).append((key, line))
    return out


def day_lines(held: dict, left: LeftDays | None, day: date) -> dict:
    """A gaming day's lines ({(day, shift, table, *lk): Line}): those held, and those written out
    for it, added together (a held line with parts on disk is copied first: the held lines stay as
    they are, for the next pass over the figures)."""
    lines = {key: line for key, line in held.items() if key[0] == day}
    if left is not None:
        for key, part in left.day(day).items():
            line = lines.get(key)
            if line is None:
                lines[key] = part
            else:
                lines[key] = line = line.copy()
                line.merge(part)
    return lines


__all__ = ["KEPT_MS", "SPILL_LINES", "LeftDays", "TemporaryFilesError", "by_day", "day_lines"]
