"""Gaming-day statistical reports of the side wagers, for finance and the regulator.

    make_report(settings, history ...) -> the report (plain data: rows, totals, exceptions,
                                          Rules Submissions, plots' data, provenance)
    craps_streams.report.files: the report as CSV (one file per grain), JSON, HTML (with its plots), PDF

The money comes from the settling step the live worker uses (`craps_streams.replay.engine.Replay`), so
a report reconciles to the settlements topic and the worker's counters to the cent
(docs/reports.md).
"""
from __future__ import annotations

import itertools
import time
from typing import Callable, Iterable

from craps_streams.replay.run import batch_gc
from craps_streams.replay.sources import history_kind, open_history_batches
from craps_streams.report.build import ReportPass, ReportSettings
from craps_streams.report.calendar import GamingCalendar, Period, utc_iso
from craps_streams.report.figures import build_figures
from craps_streams.report.provenance import history_block_begun, key_ring_block, settings_block, software

__all__ = ["STAGES", "GamingCalendar", "Period", "ReportSettings", "make_report"]

# Where a report's time goes, in order: `make_report` times the first three, the command the rest.
STAGES = {"reading": "reading the history", "settling": "settling and booking", "figures": "figures and tails",
          "files": "CSV and JSON", "plots": "page", "pdf": "PDF (Chromium)"}


def _batches(kind: str, spec, *, from_topic: bool, topic, bootstrap, sl, extra) -> Iterable[list]:
    """The history in batches of core events and `(item, where)` pairs; JSON Lines as `LineBatch`es
    of raw lines (`sources.jsonl_batches`), which `ReportPass.feed` settles through the native lane
    where it can, as the replay does."""
    if kind == "jsonl":
        from craps_streams.replay.sources import jsonl_batches

        return jsonl_batches(spec)
    return open_history_batches(spec, from_topic=from_topic, topic=topic, bootstrap=bootstrap, sl=sl,
                                extra_files=extra)


def make_report(settings: ReportSettings, spec: str | None, *, from_topic: bool = False, topic: str | None = None,
                bootstrap: str | None = None, extra_files: Iterable[str] = (), tags=None, ring=None,
                tick: Callable[[int], object] | None = None, thresholds: dict | None = None,
                watch=None, jobs: int = 1, stages: dict | None = None, audit=None) -> dict:
    """The report of `settings.period` from a history (`craps_streams.replay.sources.open_history`'s
    `spec`: a .jsonl file or -, an archive directory, .avro files, or the topic with
    `from_topic`). `tags` the tag check every event passes (`craps_streams.authenticity.TagCheck`),
    `ring` its key ring (for the provenance), `tick(n)` told of every batch read, `watch` the
    surveillance (HoldWatch; None: the default thresholds), `thresholds` the ones set explicitly
    (for the provenance), `jobs` the processes booking an archive's tables (split by partition:
    craps_streams/report/parallel.py; its reading then counted in the settling) and computing the
    lines' tails (`build_figures`), `stages` a dict given the seconds of each stage (`STAGES`: reading the history, settling and
    booking it, the figures). `audit`: a `craps_streams.replay.agreement.PassAudit`, the audit's
    quick pass riding on the pass over an archive of every table (its settlements' lines, and
    those of what follows the period, matched against the recording; its verdict left in it).
    OSError or ValueError when the history cannot be read."""
    clock = time.perf_counter
    began = clock()
    extra = list(extra_files)
    kind = history_kind(spec, from_topic=from_topic, extra_files=extra)
    if kind == "topic" and topic is None:
        from craps_streams.topics import Topics

        topic = Topics().table_events
    rp = ReportPass(settings, tags, topic_offsets=kind == "topic", watch=watch)
    collected = None
    try:
        history_digest = history_block_begun(kind, spec, extra, topic)
        reading = [0.0]
        groups = None
        riding = audit is not None and kind == "archive" and settings.tables is None
        if (jobs > 1 or riding) and kind == "archive":
            from craps_streams.archive import partition_groups
            from craps_streams.report.parallel import book_partitions, collect_in_processes, consecutive_groups

            # Riding, every partition is read: one whose events all follow the period still has settlements.
            until = None if riding else rp.slice.until
            groups = consecutive_groups(spec, settings, until) if jobs > 1 else None
        if groups is not None or riding:
            # The pass by partition (reading counted in it): in processes, tables split by partition
            # group; or in this one, the audit riding on it (its lines kept as a digest a partition).
            if groups is not None:
                collected, lines = collect_in_processes(spec, settings, groups, jobs, tags=tags, watch=watch, tick=tick,
                                                        riding=riding, done=audit.match if riding else None)
            else:
                partitions = sorted(p for members, _ in partition_groups(spec) for p in members)
                collected, (settlements, tally, segments) = book_partitions(spec, settings, partitions, tags=tags,
                                                                            watch=watch, riding=True, tick=tick)
                audit.match(segments)
                lines = settlements, tally
            if riding:
                audit.settle(lines)
        else:
            batches = _batches(kind, spec, from_topic=from_topic, topic=topic, bootstrap=bootstrap, sl=rp.slice,
                               extra=extra)
            batches = _timed(iter(batches), tick, reading)
            first = next(batches, None)  # opens the source: a missing file fails here
            if first is not None:
                with batch_gc():
                    rp.feed(itertools.chain((first,), batches))
            collected = rp.finish()
        passed = clock()
        seen = collected.seen
        history = history_digest()
        if seen.offsets:
            history["offsets"] = {f"{t}/{p}": {"first": a, "last": b} for (t, p), (a, b) in sorted(seen.offsets.items())}
        history.update(items=seen.items, events_read=collected.tally.read,
                       first_event_time=utc_iso(seen.min_ts) if seen.min_ts is not None else None,
                       last_event_time=utc_iso(seen.max_ts) if seen.max_ts is not None else None)
        provenance = {
            "history": history,
            "key_ring": key_ring_block(ring),
            "software": software(),
            "settings": settings_block(settings, thresholds),
            "command": None,
        }
        with batch_gc():  # the books (tens of thousands of lines) frozen out of the collector's walks
            report = build_figures(collected, provenance, jobs)
    finally:  # the lines the pass wrote out (report/days.py) go with it
        rp.c.left.close()
        if collected is not None and collected.left is not None:
            collected.left.close()
    if stages is not None:
        stages.update(reading=reading[0], settling=passed - began - reading[0], figures=clock() - passed)
    return report


def _timed(batches, tick, spent: list):
    """The batches, `tick` told of each, the seconds spent getting them (reading) added to spent[0]."""
    clock = time.perf_counter
    while True:
        t = clock()
        b = next(batches, None)
        spent[0] += clock() - t
        if b is None:
            return
        yield b
        if tick is not None:  # once the batch is read: a block of lines knows its count then
            tick(len(b))
