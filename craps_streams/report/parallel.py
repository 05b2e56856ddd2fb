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

from craps_streams.archive import iter_archive_batches, partition_groups
from craps_streams.report.build import Collected, ReportPass, ReportSettings, add_hourly
from craps_streams.report.days import LeftDays


def consecutive_groups(spec: str, settings: ReportSettings, until: int | None) -> list[tuple] | None:
    """The archive's partition groups (`partition_groups`, with the report's tables and end; `until`
    None: every file) when there are two or more and each is a run of consecutive partitions, in
    order; else None."""
    groups = partition_groups(spec, tables=set(settings.tables) if settings.tables is not None else None,
                              until=until)
    order = [p for members, _ in groups for p in members]
    if len(groups) < 2 or order != sorted(order):
        return None
    return groups


def collect_in_processes(spec: str, settings: ReportSettings, groups: list[tuple], jobs: int, *, tags=None,
                         watch=None, tick=None, riding: bool = False,
                         done=None) -> tuple[Collected, tuple | None]:
    """The pass of `make_report` over the archive `spec`, its `groups` (`consecutive_groups`)
    booked in `jobs` forked processes, largest first, and merged in partition order; `tick(n)`
    told of the items read. `riding`: each job also keeps its partitions' settlement lines as their
    digests for the audit riding on the pass (`book_partitions`), and `done(segments)` is given
    each group's in partition order as soon as it and those before it are done, so they can be
    matched while the others are booked. Returns the books and the riding audit's
    `(settlements or None, tally)` (None unless `riding`)."""
    from craps_streams.replay.parallel import in_group_jobs

    left = LeftDays()
    try:
        parts = in_group_jobs(_collect_group, groups, jobs, args=(spec, settings, tags, watch, riding, left.shared()),
                              tick=tick, each=None if done is None else (lambda i, part: done(part[1][2])))
    except BaseException:
        left.close()
        raise
    collected = merge_collected([c for c, _ in parts])
    left.written = sum(c.left.written for c, _ in parts)
    collected.left = left  # the jobs' lines written out, in the directory this process removes
    return collected, merge_riding([r for _, r in parts])


def _collect_group(partitions: tuple, spec: str, settings: ReportSettings, tags, watch,
                   riding: bool, days_dir: str) -> tuple[Collected, tuple | None]:
    """One group's pass (in a job): `book_partitions` with its own copy of the tag check, whose
    count of untagged events is this group's, writing the lines of the days it leaves behind in
    `days_dir` (the parent's: days.py)."""
    from craps_streams.replay.parallel import count_read

    if tags is not None:
        tags = copy.copy(tags)
        tags.untagged = 0
    return book_partitions(spec, settings, partitions, tags=tags, watch=watch, riding=riding, tick=count_read,
                           left=LeftDays(days_dir))


def book_partitions(spec: str, settings: ReportSettings, partitions, *, tags=None, watch=None,
                    riding: bool = False, tick=None, left: LeftDays | None = None) -> tuple[Collected, tuple | None]:
    """The report's pass over an archive's `partitions`, partition after partition: its books, and
    `riding` what an audit riding on it needs, `(settlements or None, the replay's tally, the
    lines' segments)`: the settlement lines of each partition, then, once the books are finished,
    those of what the period left unread (`iter_archive_after`: the events after its end), so that
    the lines are those of the whole history, each partition's and each tail's kept as its
    `(length, digest)` (`LineDigest`), in the order partition, its tail, the next partition. None
    for the settlements when the replay gave an id twice or what the period left is not each
    table's tail: the audit then runs on its own."""
    from craps_streams.archive import load_index
    from craps_streams.replay.agreement import SettlementLines

    lines = SettlementLines(None) if riding else None
    rp = ReportPass(settings, tags, watch=watch, settled=lines, left=left)
    tables = set(settings.tables) if settings.tables is not None else None
    until = rp.slice.until
    index = load_index(spec) if lines is not None else None
    kept: dict = {}  # (partition, tail) -> LineDigest
    try:
        return _book(spec, partitions, rp, lines, index, kept, tables, until, tick)
    except BaseException:
        rp.c.left.close()  # what it wrote out (a job's: the parent's directory, removed there)
        raise


def _book(spec: str, partitions, rp: ReportPass, lines, index, kept: dict, tables, until,
          tick) -> tuple[Collected, tuple | None]:
    from craps_streams.archive import after_slice, iter_archive_after
    from craps_streams.replay.agreement import LineDigest, settled_of
    from craps_streams.replay.run import batch_gc

    with batch_gc():
        for p in partitions:
            if lines is not None:
                lines.write = kept.setdefault((p, False), LineDigest()).write
            batches = iter_archive_batches(spec, tables=tables, until=until, partitions=(p,))
            rp.feed(batches if tick is None else _counted(batches, tick))
            if lines is not None:  # the tables of the files it skipped whole: continued after the books
                rp.cut.update(t for e in index["files"] if e["partition"] == p and after_slice(e, until)
                              for t in e["tables"])
        collected = rp.finish()
        if lines is None:
            return collected, None
        collected.tally = copy.deepcopy(collected.tally)  # the report's; the audit's goes on
        whole = True
        feeds, feed = rp.slice.feeds, rp.replay.feed_batch
        for p in partitions:
            after = iter_archive_after(spec, until, p, index)
            if after is None:
                whole = False
                break
            lines.write = kept.setdefault((p, True), LineDigest()).write
            for skipped, batches in after:
                for batch in batches:
                    items = batch if skipped else \
                        [it for it in batch if not feeds(it[0] if type(it) is tuple else it)]
                    settled = settled_of(feed(items)) if items else None
                    if settled:
                        lines(settled)
    whole = whole and not rp.interleaved and lines.distinct
    segments = [kept[(p, tail)].sealed() for p in partitions for tail in (False, True) if (p, tail) in kept]
    return collected, (lines.count if whole else None, rp.replay.tally, segments)


def merge_riding(parts: list) -> tuple | None:
    """The groups' `(settlements, tally, segments)` for a riding audit as one `(settlements,
    tally)` (the segments are matched as each group is done): None without one."""
    from craps_streams.replay.engine import merge_tallies

    if not parts or parts[0] is None:
        return None
    counts = [n for n, _, _ in parts]
    return (None if None in counts else sum(counts)), merge_tallies(t for _, t, _ in parts)


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
        for table, cents in c.hourly.items():  # a table's own (in one group), added all the same
            if table not in out.hourly:
                out.hourly[table] = cents
                continue
            for hour, v in enumerate(cents):
                if v:
                    add_hourly(out, table, hour, v)
        for name in ("series", "rules", "held"):  # a table's own, in one group only
            mine, theirs = getattr(out, name), getattr(c, name)
            if mine.keys() & theirs.keys():
                raise ValueError(f"tables booked in two groups ({name}): {sorted(mine.keys() & theirs.keys())[:5]}")
            mine.update(theirs)
        out.noted.merge(c.noted)
        seen, more = out.seen, c.seen
        seen.items += more.items
        if more.min_ts is not None and (seen.min_ts is None or more.min_ts < seen.min_ts):
            seen.min_ts = more.min_ts
        if more.max_ts is not None and (seen.max_ts is None or more.max_ts > seen.max_ts):
            seen.max_ts = more.max_ts
    out.tally = merge_tallies(c.tally for c in parts)
    return out

