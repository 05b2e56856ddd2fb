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

Anything else (a line that differs in a byte, a blank line, another output kind, a line twice)
leaves a line unmatched, and the audit then compares record by record as before: this pass only
ever says yes sooner, never a different yes. The lines are matched as the replay goes, a batch
of settlements against as many recorded characters; while the recording follows the replay's
order that is one string comparison per batch. Lines that have not met their match yet are held,
at most PENDING of them, so a recording in another order is matched in bounded memory or given
up on (the record-by-record comparison has its own bound).
"""
from __future__ import annotations

import itertools
from typing import Iterable

from craps_streams.replay.run import output_lines
from craps_streams.rules import WagerSettled

PENDING = 200_000  # lines waiting for their match, both sides together, before the pass gives up


class DistinctIds:
    """Whether the settlements seen so far carry distinct ids, in memory bounded by the tables:
    a settlement id names its table, deciding seq and wager (`settlement_id`; an id holds no '/'),
    and a table's settlements come in the order of their deciding seq, so only the ids of each
    table's latest seq are kept. A seq lower than its table's latest is not that order: the pass
    cannot vouch for the ids and says so."""

    def __init__(self):
        self.latest: dict = {}  # table id -> [seq, {settlement id}]

    def add(self, settled: list) -> bool:
        latest = self.latest
        for o in settled:
            at = latest.get(o.table_id)
            if at is None or o.seq > at[0]:
                latest[o.table_id] = [o.seq, {o.id}]
            elif o.seq == at[0] and o.id not in at[1]:
                at[1].add(o.id)
            else:
                return False
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


def settled_lines(replay, batches: Iterable, ids: DistinctIds) -> Iterable[tuple[str, int]]:
    """`(text, count)` of the settlements of each batch settled by `replay` (their JSON lines as
    `replay --only settlements` writes them); `ids` told of them, IdsNotDistinct raised when they
    repeat an id."""
    feed = replay.feed_batch
    for batch in batches:
        settled = [o for o in feed(batch) if type(o) is WagerSettled]
        if settled:
            if not ids.add(settled):
                raise IdsNotDistinct
            yield output_lines(settled), len(settled)


class IdsNotDistinct(Exception):
    """The replay gave a settlement id twice (`DistinctIds`): the comparison decides."""


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
    recording = Recording(recorded, pending)
    count = 0
    try:
        for text, n in settled_lines(replay, itertools.chain(() if first is None else (first,), batches),
                                     DistinctIds()):
            count += n
            if not recording.replayed(text.encode("ascii")):
                return None
        return count if recording.finish() else None
    except IdsNotDistinct:
        return None
    finally:
        recording.close()


def recording_agrees_in_processes(archive: str, groups: list[tuple], jobs: int, recorded: str, *, tags=None,
                                  thresholds=None, pending: int | None = None) -> tuple[int | None, object]:
    """`recording_agrees` of an archive whose partition `groups` (`partition_groups`: no table in two)
    are settled in `jobs` forked processes, each writing its settlements' lines per partition into a
    file of its own, matched here against the recording in partition order (the one process's
    order) as each group is done. `(settlements or None, the merged tally)`."""
    import multiprocessing
    import os
    import shutil
    import tempfile
    from concurrent.futures import ProcessPoolExecutor

    from craps_streams.accelerator.rules import chosen
    from craps_streams.replay.engine import merge_tallies
    from craps_streams.replay.parallel import init_job

    ctx = multiprocessing.get_context("fork")
    spill = tempfile.mkdtemp(prefix="craps-audit-lines-")
    recording = Recording(recorded, pending)
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, len(groups)), mp_context=ctx, initializer=init_job,
                                 initargs=(ctx.Value("q", 0), chosen().name)) as pool:
            order = sorted(range(len(groups)), key=lambda i: -groups[i][1])  # largest first
            futures = {i: pool.submit(_settle_group, archive, groups[i][0], spill, tags, thresholds) for i in order}
            count, agreed, tallies = 0, True, []
            for i in range(len(groups)):  # matched in partition order, each group as it is done
                found = futures[i].result()
                tallies.append(found[1])
                agreed = found[0] is not None
                for p in groups[i][0] if agreed else ():  # (else the spill is removed with its directory)
                    path = os.path.join(spill, f"p{p:06d}.jsonl")
                    if agreed:
                        with open(path, "rb") as f:
                            while agreed:
                                data = f.read(1 << 20)
                                if not data:
                                    break
                                if not data.endswith(b"\n"):
                                    data += f.readline()
                                agreed = recording.replayed(data)
                    os.unlink(path)
                count += found[0] or 0
                if not agreed:
                    pool.shutdown(cancel_futures=True)  # the comparison decides: no use settling more
                    break
        tally = merge_tallies(tallies) if len(tallies) == len(groups) else None
        return (count if agreed and recording.finish() else None), tally
    finally:
        recording.close()
        shutil.rmtree(spill, ignore_errors=True)


def _settle_group(archive: str, partitions: tuple, spill: str, tags, thresholds) -> tuple[int | None, object]:
    """One group's settlements (in a job): their lines per partition into `spill`; `(settlements, or
    None when they repeat an id; the group's tally)`. The tag check copied, so its count of
    untagged events is this group's."""
    import copy
    import os

    from craps_streams.archive import iter_archive_batches
    from craps_streams.replay.audit import audit_replay
    from craps_streams.replay.run import batch_gc

    if tags is not None:
        tags = copy.copy(tags)
        tags.untagged = 0
    replay = audit_replay(tags, thresholds)
    ids = DistinctIds()
    count = 0
    with batch_gc():
        for p in partitions:
            with open(os.path.join(spill, f"p{p:06d}.jsonl"), "w", encoding="utf-8") as out:
                try:
                    for text, n in settled_lines(replay, iter_archive_batches(archive, partitions=(p,)), ids):
                        out.write(text)
                        count += n
                except IdsNotDistinct:
                    return None, replay.tally
    return count, replay.tally
