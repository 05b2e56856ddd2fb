"""Parallel replay of an archive: its partitions in several processes, the result of one.

A table's state is the fold of its own events only, and an archive keeps a partition's events in
offset order: so partitions that share no table replay independently. `partition_groups` joins
partitions that do share a table (a table moved between partitions) into one group, replayed in
one process in partition order, exactly as the single process meets them. Each job writes its
outputs per partition into a file of its own; the parent concatenates them in partition order,
which is the single-process order (it replays partition after partition), and sums the tallies
(counts, rejections by reason, hold lines: sums, so the summary is the same too). The outputs go
through the same `ReplayRun` as the single-process command, so the bytes are the same.

Scaling: each group is one task of a process pool, largest first; the pool has `jobs` processes.
The speed-up is bounded by the cores, by the number of groups (the partitions: 8 in the benchmark)
and by the largest group's share of the events; the parent only copies output files.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field

from craps_streams.accelerator.rules import choose, chosen
from craps_streams.archive import iter_archive_batches, partition_groups
from craps_streams.jobs import by_group
from craps_streams.replay.engine import ReplayTally, merge_tallies
from craps_streams.replay.run import ReplayRun, batch_gc

_counter = None  # in a job: the shared count of items read, for the parent's progress line


@dataclass(slots=True)
class GroupResult:
    tally: ReplayTally
    segments: dict = field(default_factory=dict)  # partition -> output file
    cpu_s: float = 0.0
    events: int = 0
    peak_rss_kib: int = 0  # of the job's process so far (VmHWM)


def _peak_rss_kib() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def init_job(counter, core: str) -> None:
    """A job's start (`in_group_jobs`): the progress counter, and the rules core its parent chose (a
    job started by spawn or forkserver does not inherit it)."""
    global _counter
    _counter = counter
    choose(core)


def in_group_jobs(fn, groups: list[tuple], jobs: int, **kw):
    """`jobs.by_group` with each job started as every settling job starts (`init_job`: the shared
    progress counter, the rules core chosen in this process): the replay's, the report's and the
    audit's jobs, so none settles by another core than its command's."""
    return by_group(fn, groups, jobs, init=(init_job, chosen().name), **kw)


def count_read(n: int) -> None:
    """In a job: `n` more items read, for the parent's progress line."""
    if _counter is not None:
        with _counter.get_lock():
            _counter.value += n


def replay_group(partitions: tuple, archive_dir: str, sl, wanted, seg_dir: str | None, tags=None,
                 thresholds=None) -> GroupResult:
    """Replay one group of partitions (in a job): outputs per partition into `seg_dir`."""
    start = time.process_time()
    tables = set(sl.tables) if sl is not None and sl.tables is not None else None
    until = sl.until if sl is not None else None
    result = GroupResult(ReplayTally())
    with batch_gc():
        run = ReplayRun(sl, wanted, tick=count_read, tags=tags, thresholds=thresholds)
        writes = seg_dir is not None and (wanted is None or len(wanted) > 0)
        for p in partitions:
            fo = None
            if writes:
                path = os.path.join(seg_dir, f"p{p:06d}.jsonl")
                fo = open(path, "w", encoding="utf-8")
                result.segments[p] = path
            run.write_to(fo)
            try:
                run.feed(iter_archive_batches(archive_dir, tables=tables, until=until, partitions=(p,)))
            finally:
                if fo is not None:
                    fo.close()
    result.tally = run.tally()
    result.events = run.replay.tally.read
    result.cpu_s = time.process_time() - start
    result.peak_rss_kib = _peak_rss_kib()
    return result


@dataclass(slots=True)
class ParallelResult:
    tally: ReplayTally
    jobs: int  # processes used
    groups: int
    cpu_s: float  # of the jobs (not the parent's)
    peak_rss_kib: list = field(default_factory=list)  # per group: its job's peak RSS


def replay_archive_parallel(archive_dir, jobs: int, *, sl=None, wanted=None, out=None, progress=None,
                            tmp_dir: str | None = None, tags=None, thresholds=None) -> ParallelResult:
    """Replay an archive directory in `jobs` processes; outputs (the `wanted` classes, None for
    all) written to the text stream `out` in the single-process order; the merged tally (its hold
    the slice's when `sl` is an active slice)."""
    tables = set(sl.tables) if sl is not None and sl.tables is not None else None
    until = sl.until if sl is not None else None
    groups = partition_groups(archive_dir, tables=tables, until=until)
    if not groups:
        run = ReplayRun(sl, wanted, tags=tags, thresholds=thresholds)
        return ParallelResult(run.tally(), 0, 0, 0.0)
    jobs = max(1, min(jobs, len(groups)))
    writes = out is not None and (wanted is None or len(wanted) > 0)
    seg_dir = tempfile.mkdtemp(prefix="craps-replay-", dir=tmp_dir) if writes else None
    try:
        results = in_group_jobs(replay_group, groups, jobs, args=(str(archive_dir), sl, wanted, seg_dir, tags, thresholds),
                                tick=progress.tick if progress is not None else None)
        if writes:
            for _, path in sorted((p, path) for r in results for p, path in r.segments.items()):
                with open(path, encoding="utf-8") as fo:
                    shutil.copyfileobj(fo, out, 1 << 20)
                os.unlink(path)
    finally:
        if seg_dir is not None:
            shutil.rmtree(seg_dir, ignore_errors=True)
    return ParallelResult(merge_tallies(r.tally for r in results), jobs, len(groups),
                          sum(r.cpu_s for r in results), [r.peak_rss_kib for r in results])
