"""Verifying an archive: per partition one record per offset, contiguous; every table's seq walked."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from craps_streams.archive.chain import verify_chain
from craps_streams.archive.index import load_index
from craps_streams.archive.reader import located_batches, partition_groups
from craps_streams.codec.fastread import EVENT_TYPES


@dataclass(slots=True)
class Verification:
    partitions: dict = field(default_factory=dict)  # p -> {"first","next","count","covered"}
    offset_gaps: list = field(default_factory=list)  # (partition, first missing, last missing)
    offset_overlaps: list = field(default_factory=list)  # (partition, offset, files)
    count_mismatches: list = field(default_factory=list)  # (partition, count, covered)
    records: int = 0
    chain: object = None  # chain.ChainReport: the hash chain of files and records
    seq_gaps: list = field(default_factory=list)  # (table, after seq, next seq, partition, offset)
    seq_duplicates: list = field(default_factory=list)  # (table, seq, last seq, partition, offset)
    tables: int = 0

    @property
    def offsets_consistent(self) -> bool:
        """Every offset archived once, each partition's count the offsets its files cover."""
        return not (self.offset_gaps or self.offset_overlaps or self.count_mismatches)

    @property
    def archive_ok(self) -> bool:
        """The archive itself: its offsets consistent and its chain intact."""
        return self.offsets_consistent and (self.chain is None or self.chain.ok)

    def lines(self, limit: int = 20) -> list[str]:
        out = [] if self.chain is None else self.chain.lines(limit)
        for p, info in sorted(self.partitions.items()):
            out.append(f"partition {p}: offsets {info['first']}..{info['next'] - 1} covered {info['covered']:,}, "
                       f"archived {info['count']:,}" + ("" if info["count"] == info["covered"] else "  MISMATCH"))
        out += self.offset_findings(limit)
        for t, last, nxt, p, o in self.seq_gaps[:limit]:
            out.append(f"seq gap (floor): table {t} seq {last} then {nxt} (partition {p} offset {o})")
        for t, seq, last, p, o in self.seq_duplicates[:limit]:
            out.append(f"seq duplicate or out of order (floor): table {t} seq {seq} after {last} "
                       f"(partition {p} offset {o})")
        more = max(0, len(self.seq_gaps) - limit) + max(0, len(self.seq_duplicates) - limit)
        if more:
            out.append(f"... and {more:,} more seq findings")
        out.append(self.summary())
        return out

    def offset_findings(self, limit: int = 20) -> list[str]:
        """The offsets not archived once: gaps and overlaps, and partitions whose count is not the
        offsets their files cover."""
        out = [f"offset gap: partition {p} offsets {a}..{b} not archived" for p, a, b in self.offset_gaps[:limit]]
        out += [f"offset overlap: partition {p} offset {o} in {', '.join(files)}"
                for p, o, files in self.offset_overlaps[:limit]]
        out += [f"count mismatch: partition {p}: {count:,} records archived for {covered:,} offsets"
                for p, count, covered in self.count_mismatches[:limit]]
        return out

    def offsets_summary(self) -> str:
        """The index's offsets in a line (an audit's, which walks no seqs: its replay does)."""
        return (f"archive offsets {'CONSISTENT' if self.offsets_consistent else 'INCONSISTENT'}: {self.records:,} records in "
                f"{len(self.partitions)} partitions, {len(self.offset_gaps)} offset gaps, "
                f"{len(self.offset_overlaps)} overlaps, {len(self.count_mismatches)} count mismatches")

    def summary(self) -> str:
        return (f"verify: {self.records:,} records in {len(self.partitions)} partitions, "
                f"archive {'OK' if self.archive_ok else 'INCONSISTENT'} "
                f"({len(self.offset_gaps)} offset gaps, {len(self.offset_overlaps)} overlaps, "
                f"{len(self.count_mismatches)} count mismatches"
                f"{'' if self.chain is None else ', ' + self.chain.summary()}); floor: {self.tables} tables, "
                f"{len(self.seq_gaps)} seq gaps, {len(self.seq_duplicates)} seq duplicates")


def verify(out_dir, *, check_seq: bool = True, key: bytes | None = None, jobs: int = 1) -> Verification:
    """`key`: the archiver's key, to check the chain head's seal (archive.chain). `jobs`: the seq
    walk's partition groups (`partition_groups`) shared by this process and forked ones
    (craps_streams/jobs.py), the same findings in the same order."""
    d = Path(out_dir)
    index = load_index(d)
    v = Verification()
    v.chain = verify_chain(d, index, key)
    by_partition: dict = {}
    for e in index["files"]:
        by_partition.setdefault(e["partition"], []).append(e)
    for p, entries in sorted(by_partition.items()):
        ranges = sorted((first, last, e["path"]) for e in entries for first, last in e["offsets"])
        count = sum(e["count"] for e in entries)
        listed = sum(last - first + 1 for first, last, _ in ranges)
        if listed != count:
            v.count_mismatches.append((p, count, listed))
        first = ranges[0][0] if ranges else 0
        nxt = index["partitions"].get(str(p), {}).get("next_offset", first)
        covered = nxt - first
        reach, reach_path = first - 1, None
        for a, b, path in ranges:
            if a <= reach:
                v.offset_overlaps.append((p, a, [reach_path, path]))
            elif a > reach + 1:
                v.offset_gaps.append((p, reach + 1, a - 1))
            if b > reach:
                reach, reach_path = b, path
        if reach < nxt - 1:
            v.offset_gaps.append((p, reach + 1, nxt - 1))
        if count != covered:
            v.count_mismatches.append((p, count, covered))
        v.partitions[p] = {"first": first, "next": nxt, "count": count, "covered": covered}
        v.records += count
    if check_seq and not v.chain.findings:  # a tampered archive is not read as history
        groups = [members for members, _ in partition_groups(d)] if jobs > 1 else []
        if len(groups) > 1:
            from craps_streams.jobs import in_processes

            # Partition groups share no table, so each walks its tables' seqs on its own; a walk's
            # findings come in partition and offset order, so sorted so they are the one walk's.
            walks = in_processes(_seq_walk, [(d, members) for members in groups], jobs)
            for gaps, duplicates, _ in walks:
                v.seq_gaps += gaps
                v.seq_duplicates += duplicates
            v.seq_gaps.sort(key=lambda f: (f[3], f[4]))
            v.seq_duplicates.sort(key=lambda f: (f[3], f[4]))
            v.tables = sum(tables for *_, tables in walks)
        else:
            v.seq_gaps, v.seq_duplicates, v.tables = _seq_walk(d, None)
    return v


def _seq_walk(d: Path, partitions, batch: int = 4096) -> tuple[list, list, int]:
    """The floor's seq check over the archive's events (of `partitions`, None: all), partition after
    partition in offset order: (gaps, duplicates, tables seen)."""
    gaps: list = []
    duplicates: list = []
    last: dict = {}
    # Read by the replay's native block reader in batches, a file at a time: only each event's
    # table and seq are walked (`walk_seqs`), and an offset is found only for a finding.
    walk = seq_walk()
    for p, where, items in located_batches(d, partitions=partitions, batch=batch):
        for i, finding, t, seq, prev in walk(items, last):
            if finding == "gap":
                gaps.append((t, prev, seq, p, where(i)))
            else:
                duplicates.append((t, seq, prev, p, where(i)))
    return gaps, duplicates, len(last)


def walk_seqs(items: list, last: dict) -> list:
    """The floor's seq rule over a batch of archive items (core events, or `(record, where)` tuples
    as `iter_archive_batches` gives them): each table's events come with seqs 1, 2, 3 and so on.
    `last`: each table's last seq in order, updated. The items that break the rule, as
    `(index, "gap" or "duplicate", table, seq, last seq)`: a seq beyond the next one is a gap (the
    table's next seq follows it); a seq at or below the last one, a duplicate or out of order (the
    last one stands). A record without a table and a whole seq, and an undecodable message, are the
    replay's to reject, not walked."""
    found = []
    get = last.get
    for i, item in enumerate(items):
        if type(item) in EVENT_TYPES:
            t, seq = item.table_id, item.seq
        else:
            record = item[0]
            if type(record) is not dict:
                continue
            t, seq = record.get("table_id"), record.get("seq")
            if type(t) is not str or type(seq) is not int:
                continue
        prev = get(t)
        if prev is None:
            if seq != 1:
                found.append((i, "gap", t, seq, 0))
            last[t] = seq
        elif seq == prev + 1:
            last[t] = seq
        elif seq <= prev:
            found.append((i, "duplicate", t, seq, prev))
        else:
            found.append((i, "gap", t, seq, prev))
            last[t] = seq
    return found


def seq_walk() -> Callable[[list, dict], list]:
    """`walk_seqs`, with its runs of wagers placed, dice thrown and shooters changed walked in one
    native call each where the accelerator is in use (native/src/seqs.rs); every other item by the
    rule here. The same findings, in the same order, and the same last seqs."""
    from craps_streams.accelerator.seqs import walk_seqs as native_walk

    run = native_walk()
    if run is None:
        return walk_seqs

    def walk(items: list, last: dict) -> list:
        found: list = []
        i, n = 0, len(items)
        while i < n:
            i = run(items, i, last, found)
            if i < n:  # an item the run leaves to the rule
                found += [(i, *f[1:]) for f in walk_seqs(items[i:i + 1], last)]
                i += 1
        return found

    return walk
