"""A report's pass over an archive in several processes (`report --jobs N`): the books of one pass.

Everything the pass books belongs to one table (its lines, series, hourly handle, openings,
held events; its state and surveillance) or is a sum over tables (the lines before the period,
the outcomes against the odds, the tally). An archive keeps a table's events in offset order on
its partitions, and `partition_groups` puts every partition holding a table in one group; so each
group's pass books exactly what the one pass books of its tables, and the books merge by adding
(integer cents and counts). One process reads the archive partition after partition; when the
groups are runs of consecutive partitions, their books merged in partition order meet every key,
alert and rejection in the order the one pass met them, so the report is the same to the byte
(tests/report/test_report_jobs.py). An archive whose groups interleave (a table moved between
partitions far apart) is booked in one process.
"""
from __future__ import annotations

import copy
import multiprocessing
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait

from craps_streams.archive import iter_archive_batches, partition_groups
from craps_streams.report.build import Collected, ReportPass, ReportSettings


def consecutive_groups(spec: str, settings: ReportSettings, until: int) -> list[tuple] | None:
    """The archive's partition groups (`partition_groups`, with the report's tables and end) when
    there are two or more and each is a run of consecutive partitions, in order; else None."""
    groups = partition_groups(spec, tables=set(settings.tables) if settings.tables is not None else None,
                              until=until)
    order = [p for members, _ in groups for p in members]
    if len(groups) < 2 or order != sorted(order):
        return None
    return groups


def collect_in_processes(spec: str, settings: ReportSettings, groups: list[tuple], jobs: int, *, tags=None,
                         watch=None, tick=None) -> Collected:
    """The pass of `make_report` over the archive `spec`, its `groups` (`consecutive_groups`)
    booked in `jobs` forked processes, largest first, and merged in partition order; `tick(n)`
    told of the items read."""
    from craps_streams.accelerator.rules import chosen
    from craps_streams.replay.parallel import init_job

    ctx = multiprocessing.get_context("fork")
    counter = ctx.Value("q", 0)
    with ProcessPoolExecutor(max_workers=min(jobs, len(groups)), mp_context=ctx, initializer=init_job,
                             initargs=(counter, chosen().name)) as pool:
        order = sorted(range(len(groups)), key=lambda i: -groups[i][1])
        futures = {pool.submit(_collect_group, spec, settings, groups[i][0], tags, watch): i for i in order}
        pending, seen = set(futures), 0
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_EXCEPTION)
            if tick is not None:
                now = counter.value
                tick(now - seen)
                seen = now
            for f in done:
                f.result()  # a job's exception ends the report here
        parts: list = [None] * len(groups)
        for f, i in futures.items():
            parts[i] = f.result()
    return merge_collected(parts)


def _collect_group(spec: str, settings: ReportSettings, partitions: tuple, tags, watch) -> Collected:
    """One group's pass (in a job): its own copy of the tag check, whose count of untagged events
    is this group's."""
    from craps_streams.replay.parallel import count_read
    from craps_streams.replay.run import batch_gc

    if tags is not None:
        tags = copy.copy(tags)
        tags.untagged = 0
    rp = ReportPass(settings, tags, watch=watch)
    batches = iter_archive_batches(spec, tables=set(settings.tables) if settings.tables is not None else None,
                                   until=rp.slice.until, partitions=partitions)
    with batch_gc():
        rp.feed(_counted(batches, count_read))
    return rp.finish()


def _counted(batches, tick):
    for b in batches:
        tick(len(b))
        yield b


def merge_collected(parts: list[Collected]) -> Collected:
    """The books of groups of tables (in partition order) as one pass would have booked them."""
    from craps_streams.replay.engine import merge_tallies

    out = parts[0]
    for c in parts[1:]:
        for into, more in ((out.lines, c.lines), (out.before, c.before)):
            for key, line in more.items():
                known = into.get(key)
                if known is None:
                    into[key] = line
                else:
                    known.merge(line)
        for lk, odds in c.odds.items():
            out.odds.setdefault(lk, odds)
        for lk, counts in c.outcomes.items():
            known = out.outcomes.setdefault(lk, {})
            for v, n in counts.items():
                known[v] = known.get(v, 0) + n
        for key, handle in c.hourly.items():
            out.hourly[key] = out.hourly.get(key, 0) + handle
        for name in ("series", "rules", "held"):  # a table's own, in one group only
            mine, theirs = getattr(out, name), getattr(c, name)
            if mine.keys() & theirs.keys():
                raise ValueError(f"tables booked in two groups ({name}): {sorted(mine.keys() & theirs.keys())[:5]}")
            mine.update(theirs)
        out.alerts += c.alerts
        out.rejections += c.rejections
        out.duplicates += c.duplicates
        seen, more = out.seen, c.seen
        seen.items += more.items
        if more.min_ts is not None and (seen.min_ts is None or more.min_ts < seen.min_ts):
            seen.min_ts = more.min_ts
        if more.max_ts is not None and (seen.max_ts is None or more.max_ts > seen.max_ts):
            seen.max_ts = more.max_ts
    out.tally = merge_tallies(c.tally for c in parts)
    return out

