"""The audit's first pass: whether a recording of settlements (a JSON Lines file) holds, line for
line and in any order, the very lines the replay writes for its own settlements.

When it does, the audit's comparison (craps_streams/replay/audit.py `compare`) can find nothing,
so the audit is clean without a record built, spilled or compared for each settlement:

* every recorded line is the text of one replayed settlement, `dumps(output_to_record(o))` (what
  `replay --only settlements` writes: craps_streams/replay/run.py `output_lines`), so it reads back
  as a settlement record (its `type` WagerSettled, its `id` a string) whose every compared field
  is the replayed value with its type (a settlement's fields are strings and integers, which JSON
  gives back as they were);
* the lines meet one to one, so there are as many recorded as replayed, none unmatched either
  way (no missing, no extra), and no recorded id twice (no duplicated), provided the replay itself
  gave no id twice, which is checked here (`DistinctIds`) since the comparison keeps one record
  per replayed id.

The recording's lines are read as the comparison reads them (stripped, blank ones left out), so
another layout of the same lines still agrees. Anything else (a line that differs in a byte, a
line of another output kind, a line twice or missing) leaves a line unmatched, and the audit then
compares record by record as before: this pass only ever says yes sooner, never a different yes.
The lines are matched as the replay goes, a batch of settlements against as many recorded bytes;
while the recording follows the replay's order that is one comparison of bytes per batch. Lines
that have not met their match yet are held, at most PENDING of them, so a recording in another
order is matched in bounded memory or given up on (the record-by-record comparison has its own
bound).

A stricter form of the same pass rides on a report's pass over an archive (`PassAudit`,
`report --audit`): its jobs keep each partition's lines as their length and digest (`LineDigest`,
BLAKE3: `line_hash`) instead of writing them out, and the recording must hold those very bytes in partition order, the
order `replay --only settlements` writes. Any other recording is left to the audit's own pass,
this one first, then the comparison: again it only ever says yes sooner.
"""
from __future__ import annotations

import itertools
from typing import Iterable

from blake3 import blake3

from craps_streams.replay.run import output_lines
from craps_streams.rules import WagerSettled

PENDING = 200_000  # lines waiting for their match, both sides together, before the pass gives up


def add_distinct(latest: dict, settled: list) -> bool:
    """The rule of `DistinctIds`: `settled` checked against `latest` (table id -> [its latest seq,
    {the ids settled at it}]) and added to it, in order; False at the first settlement that repeats
    an id or comes before its table's latest seq (the pass cannot vouch for the ids then)."""
    for o in settled:
        at = latest.get(o.table_id)
        if at is None or o.seq > at[0]:
            latest[o.table_id] = [o.seq, {o.id}]
        elif o.seq == at[0] and o.id not in at[1]:
            at[1].add(o.id)
        else:
            return False
    return True


class DistinctIds:
    """Whether the settlements seen so far carry distinct ids, in memory bounded by the tables:
    a settlement id names its table, deciding seq and wager (`settlement_id`; an id holds no '/'),
    and a table's settlements come in the order of their deciding seq, so only the ids of each
    table's latest seq are kept (`add_distinct`, the rule). A seq lower than its table's latest is
    not that order: the pass cannot vouch for the ids and says so. Where the accelerator is in use,
    runs of settlements are checked natively (native/src/distinct.rs), on the same dict; an item
    the run leaves is checked by the rule."""

    def __init__(self, native: bool = True):
        from craps_streams.accelerator.distinct import distinct_ids

        self.latest: dict = {}  # table id -> [seq, {settlement id}]
        self.run = distinct_ids() if native else None

    def add(self, settled: list) -> bool:
        run, latest = self.run, self.latest
        if run is None or type(settled) is not list:
            return add_distinct(latest, settled)
        i, n = 0, len(settled)
        while i < n:
            i, distinct = run(settled, i, latest)
            if not distinct:
                return False
            if i < n:  # an item the run leaves to the rule
                if not add_distinct(latest, settled[i:i + 1]):
                    return False
                i += 1
        return True


class LineMatch:
    """The two sides' lines as multisets, each line cancelled by its equal on the other side."""

    def __init__(self):
        self.waiting: tuple[dict, dict] = ({}, {})  # replayed, recorded: line -> how many
        self.held = 0

    def add(self, side: int, lines: Iterable[str]) -> None:
        mine, theirs = self.waiting[side], self.waiting[1 - side]
        held = self.held
        for line in lines:
            n = theirs.get(line)
            if n is None:
                mine[line] = mine.get(line, 0) + 1
                held += 1
            else:
                held -= 1
                if n == 1:
                    del theirs[line]
                else:
                    theirs[line] = n - 1
        self.held = held


REPLAYED, RECORDED = 0, 1


def _recorded_lines(raw: bytes) -> list[str]:
    """A recording's lines as the audit reads them (`recorded_from_jsonl`: UTF-8 with undecodable
    bytes replaced, universal newlines), from raw bytes that end at a newline or at the file's end
    (so no character or CR LF is cut): split at newlines only (`str.splitlines` would also split at
    characters the audit leaves inside a line), stripped, blank ones left out."""
    text = raw.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    return [s for s in (line.strip() for line in text.split("\n")) if s]


def line_hash():
    """The digest a job's settlement lines and the recording's bytes are compared by: BLAKE3, a
    cryptographic hash (a recording made to match lines it does not hold would take a collision),
    about three times as fast as SHA-256 here even with this CPU's SHA extensions. The lines of a
    gaming day of 300 tables are half a gigabyte: SHA-256 of both sides took over a second of CPU a day."""
    return blake3()


class Recording:
    """The recording's lines matched against the replay's as they come (`replayed`), then the rest
    of the recording (`finish`); `close` it after. A match is over (`replayed` and `finish` answer
    False) once more than `pending` lines wait for theirs.

    The recording is read as bytes: the replay's lines are ASCII, ended by LF, so where the
    recording's next bytes are theirs, its text is theirs too, and the comparison is one of bytes
    (no decoding). Anywhere else its lines are decoded as the audit decodes them."""

    def __init__(self, recorded: str, pending: int | None = None):
        self.pending = PENDING if pending is None else pending
        self.file = open(recorded, "rb")
        self.match = LineMatch()

    def replayed(self, data: bytes) -> bool:
        """Replayed lines, `data` (ASCII, each ended by LF), against as much of the recording: its
        next bytes while the two have kept in step (one comparison), else line by line."""
        f, match = self.file, self.match
        if match.held == 0:
            got = f.read(len(data))
            if got == data:
                return True
            if got and not got.endswith(b"\n"):
                got += f.readline()
        else:
            got = b"".join(f.readline() for _ in range(data.count(b"\n")))
        match.add(REPLAYED, data.decode("ascii").split("\n")[:-1])
        match.add(RECORDED, _recorded_lines(got))
        return match.held <= self.pending

    def digested(self, size: int, digest: bytes) -> bool:
        """Replayed lines known by their length and digest (`LineDigest`) against the recording's
        next `size` bytes, which must be those very bytes: no line waiting for its match, no other
        layout or order (the audit's own pass judges any other recording)."""
        if self.match.held:
            return False
        h, left, f = line_hash(), size, self.file
        while left:
            chunk = f.read(min(left, 1 << 20))
            if not chunk:
                return False
            h.update(chunk)
            left -= len(chunk)
        return h.digest() == digest

    def finish(self) -> bool:
        """The rest of the recording matched: whether every line met its equal."""
        f, match = self.file, self.match
        while True:
            rest = f.read(1 << 20)
            if not rest:
                break
            if not rest.endswith(b"\n"):
                rest += f.readline()
            match.add(RECORDED, _recorded_lines(rest))
            if match.held > self.pending:
                return False
        return match.held == 0

    def close(self) -> None:
        self.file.close()


class SettlementLines:
    """Where a pass that settles hands each batch's settlements (`__call__`): their ids checked
    (`DistinctIds`) and their lines, as `replay --only settlements` writes them, given to `write`
    (ASCII bytes), until they repeat an id (`distinct` False: the comparison decides)."""

    def __init__(self, write):
        self.write = write
        self.ids = DistinctIds()
        self.count = 0
        self.distinct = True

    def __call__(self, settled: list) -> None:
        if not self.distinct:
            return
        if not self.ids.add(settled):
            self.distinct = False
            return
        self.count += len(settled)
        self.write(output_lines(settled).encode("ascii"))


class LineDigest:
    """A job's settlement lines of one segment of the history (`write`, a `SettlementLines`
    writer), kept as their length and digest (`line_hash`) rather than written out: `sealed()` is what the
    parent checks the recording's bytes against (`Matching.digested`), and all that crosses from
    the job."""

    __slots__ = ("size", "hash")

    def __init__(self):
        self.size = 0
        self.hash = line_hash()

    def write(self, data: bytes) -> None:
        self.size += len(data)
        self.hash.update(data)

    def sealed(self) -> tuple[int, bytes]:
        return self.size, self.hash.digest()


class Matching:
    """A recording matched against replayed lines as they are written (`write`, a
    `SettlementLines`' writer), then its rest (`finish`); `agreed` False as soon as it cannot agree."""

    def __init__(self, recorded: str, pending: int | None = None):
        self.recording = Recording(recorded, pending)
        self.agreed = True

    def write(self, data: bytes) -> None:
        if self.agreed:
            self.agreed = self.recording.replayed(data)

    def segments(self, paths) -> None:
        """Replayed lines written to files (a job's, `SettlementLines` into a file), in order."""
        for path in paths:
            with open(path, "rb") as f:
                while self.agreed:
                    data = f.read(1 << 20)
                    if not data:
                        break
                    if not data.endswith(b"\n"):
                        data += f.readline()
                    self.write(data)

    def digested(self, segments) -> None:
        """Replayed lines known by their `(length, digest)` (a job's `LineDigest`s), in order."""
        for size, digest in segments:
            if not self.agreed:
                return
            self.agreed = self.recording.digested(size, digest)

    def finish(self) -> bool:
        """Whether the recording is the replayed lines, every one: the rest of it matched too."""
        if self.agreed:
            self.agreed = self.recording.finish()
        return self.agreed

    def close(self) -> None:
        self.recording.close()


class PassAudit:
    """The quick pass riding on a report's pass over an archive (`report --audit FILE`): the report
    makes its settlements' lines, those of the whole history, and keeps each partition's as their
    length and digest; `match` checks the recording holds those very bytes, in partition order, as
    each run of partitions is done (a recording in another order or layout is the audit's own
    pass's to match, line by line), and `settle` takes the pass's verdict. `settlements` is then their number when the recording is
    exactly those lines, else None (and None when the report's pass could not carry it): the audit
    must then run on its own (`craps_streams.replay.audit.audit_after_pass`). `tally`: the
    replay's, over the whole history."""

    def __init__(self, recorded: str, pending: int | None = None):
        self.matching = Matching(recorded, pending)
        self.settlements: int | None = None
        self.tally = None

    def match(self, segments) -> None:
        """The lines of a run of partitions as the pass's job kept them, each partition's then its
        tail's, `(length, digest)` (`LineDigest`), matched; call in partition order."""
        self.matching.digested(segments)

    def settle(self, riding: tuple | None) -> None:
        """`riding`: the pass's `(settlements or None, tally)`, every partition matched."""
        if riding is not None and riding[0] is not None and self.matching.finish():
            self.settlements, self.tally = riding

    def close(self) -> None:
        self.matching.close()


def settled_of(outputs: list) -> list:
    """The settlements among outputs."""
    return [o for o in outputs if type(o) is WagerSettled]


def recording_agrees(replay, batches: Iterable, recorded: str, pending: int | None = None) -> int | None:
    """Settle `batches` with `replay` (a `craps_streams.replay.engine.Replay`) and match its
    settlements' lines against the JSON Lines file `recorded`, read as the audit reads it (UTF-8,
    undecodable bytes replaced). The number of settlements when the recording is exactly their
    lines, in any order; None as soon as it cannot be (more than `pending` lines unmatched, or a
    settlement id twice in the replay) or when it is not at the end. The replay has then settled
    all of `batches`, or the part before the pass gave up. `pending` None: PENDING. The history is
    opened first, as the comparison opens it: a history that cannot be read is the error."""
    batches = iter(batches)
    first = next(batches, None)
    matching = Matching(recorded, pending)
    lines = SettlementLines(matching.write)
    feed = replay.feed_batch
    try:
        for batch in itertools.chain(() if first is None else (first,), batches):
            settled = settled_of(feed(batch))
            if settled:
                lines(settled)
                if not (matching.agreed and lines.distinct):
                    return None
        return lines.count if matching.finish() else None
    finally:
        matching.close()


def segment_path(spill: str, partition: int) -> str:
    """The file an audit's job writes a partition's settlement lines to (`SettlementLines`)."""
    import os

    return os.path.join(spill, f"p{partition:06d}.jsonl")


def recording_agrees_in_processes(archive: str, groups: list[tuple], jobs: int, recorded: str, *, tags=None,
                                  thresholds=None, pending: int | None = None) -> tuple[int | None, object]:
    """`recording_agrees` of an archive whose partition `groups` (`partition_groups`: no table in two)
    are settled in `jobs` forked processes, each writing its settlements' lines per partition into a
    file of its own, matched here against the recording in partition order (the one process's
    order) as each group is done. `(settlements or None, the merged tally)`."""
    import shutil
    import tempfile

    from craps_streams.replay.engine import merge_tallies
    from craps_streams.replay.parallel import in_group_jobs

    spill = tempfile.mkdtemp(prefix="craps-audit-lines-")
    matching = Matching(recorded, pending)
    count = 0

    def each(i: int, result) -> bool:  # matched in partition order, each group as it is done
        nonlocal count
        found, _ = result
        if found is None:
            matching.agreed = False
        else:
            count += found
            matching.segments(segment_path(spill, p) for p in groups[i][0])
        return matching.agreed  # the comparison decides: no use settling more once it disagrees

    try:
        results = in_group_jobs(_settle_group, groups, jobs, args=(archive, spill, tags, thresholds), each=each)
        tally = merge_tallies(t for _, t in results) if results is not None else None
        return (count if matching.finish() else None), tally
    finally:
        matching.close()
        shutil.rmtree(spill, ignore_errors=True)


def _settle_group(partitions: tuple, archive: str, spill: str, tags, thresholds) -> tuple[int | None, object]:
    """One group's settlements (in a job): their lines per partition into `spill`; `(settlements, or
    None when they repeat an id; the group's tally)`. The tag check copied, so its count of
    untagged events is this group's."""
    import copy

    from craps_streams.archive import iter_archive_batches
    from craps_streams.replay.audit import audit_replay
    from craps_streams.replay.run import batch_gc

    if tags is not None:
        tags = copy.copy(tags)
        tags.untagged = 0
    replay = audit_replay(tags, thresholds)
    lines = SettlementLines(None)
    feed = replay.feed_batch
    with batch_gc():
        for p in partitions:
            with open(segment_path(spill, p), "wb") as out:
                lines.write = out.write
                for batch in iter_archive_batches(archive, partitions=(p,)):
                    settled = settled_of(feed(batch))
                    if settled:
                        lines(settled)
            if not lines.distinct:
                return None, replay.tally
    return lines.count, replay.tally
