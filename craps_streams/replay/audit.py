"""Audit: replay a history with the rules core and compare with the settlements that were recorded.

Wager by wager, by settlement id (`table/seq/settle/wager_id`) and by wager id:

* missing    the replay settled it, nothing was recorded for the wager
* extra      recorded, the replay did not settle the wager at all
* duplicated the same id recorded more than once, or the same wager recorded under two ids
* different  the same wager recorded with other field values than the replay's (the fields shown);
             a settlement recorded under another id (another deciding seq) is a difference in `id`
             and `seq`
* unreadable a recorded line that is not a settlement record

Each finding names the table events that explain it: the wager's WagerPlaced (`placed_seq`) and
the deciding event (`seq`), looked up by table and seq in a second pass over the history, with
the replay's verdict on them when it rejected them.

A live floor (the table-events topic, or an archive of it, against the settlements topic) is
audited on one consistent cut, the events the worker group has committed and the settlements of
exactly those events (craps_streams/kafka/cut.py says why that cut is sound): what was settled after the
cut is the next audit's. The report names the cut (`report.cut`). An archive must reach the cut.

`compare` is the audit itself, a pure function of the replayed and the recorded settlements;
`run_audit` reads the history and the recording and calls it, after a quicker pass that finds a
recording clean when it is, line for line, what the replay writes (replay/agreement.py says why
that is the same verdict).
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from craps_streams.replay.wager_buckets import ReplayedBuckets, WagerBuckets
from craps_streams.rules import EventRejected, WagerSettled, output_to_record
from craps_streams.topics import DEFAULT_APP_ID, Topics

# An audit holds the replayed and recorded settlements of this many table events in memory at most
# (about 400 MB at its peak); a longer history is compared bucket by bucket on disk (wager_buckets.py).
BUCKET_EVENTS = 200_000
JSONL_EVENT_BYTES = 200  # a simulated floor's table event as a JSON line, about
AVRO_EVENT_BYTES = 60  # and in an Avro container file

COMPARED_FIELDS = ("id", "wager_id", "table_id", "position", "wager", "outcome", "stake_cents", "won_cents",
                   "paytable", "detail", "seq", "ts", "placed_seq")
KINDS = ("missing", "extra", "duplicated", "different", "unreadable")


@dataclass(slots=True)
class Finding:
    kind: str  # missing | extra | duplicated | different | unreadable
    id: str
    wager_id: str | None
    table_id: str | None
    message: str
    replayed: dict | None = None
    recorded: list = field(default_factory=list)
    fields: dict = field(default_factory=dict)  # name -> {"replayed": v, "recorded": v}
    events: list = field(default_factory=list)  # {"role", "table_id", "seq", "where", "record", "replay"}

    def keys(self) -> set:
        """(table, seq) of the events that explain it."""
        out = set()
        for r in ([self.replayed] if self.replayed else []) + list(self.recorded):
            t = r.get("table_id")
            if type(t) is not str:
                continue
            for name in ("placed_seq", "seq"):
                if type(r.get(name)) is int:
                    out.add((t, r[name]))
        return out

    def to_record(self) -> dict:
        return {"kind": self.kind, "id": self.id, "wager_id": self.wager_id, "table_id": self.table_id,
                "message": self.message, "replayed": self.replayed, "recorded": self.recorded,
                "fields": self.fields, "events": self.events}


@dataclass(slots=True)
class AuditReport:
    replayed: int = 0
    recorded: int = 0
    findings: list = field(default_factory=list)
    archive: object = None  # craps_streams.archive.verify.Verification of an archive history (no seq walk)
    unreadable: str = ""  # why a tampered archive could not be replayed at all
    untagged: int = 0  # events let through without a tag (--accept-untagged)
    forged: dict = field(default_factory=dict)  # reason -> events rejected before the rules
    cut: object = None  # craps_streams.kafka.cut.Cut of a live floor's audit

    def of(self, kind: str) -> list:
        return [f for f in self.findings if f.kind == kind]

    @property
    def chain(self):
        """The archive's hash chain as the check found it (`craps_streams.archive.chain.ChainReport`),
        None for a history that is no archive."""
        return None if self.archive is None else self.archive.chain

    @property
    def clean(self) -> bool:
        return not self.findings and not self.unreadable and (self.archive is None or self.archive.archive_ok)

    def summary(self) -> str:
        counts = {k: 0 for k in KINDS}
        for f in self.findings:
            counts[f.kind] += 1
        parts = [f"{counts[k]:,} {k}" for k in KINDS if k != "unreadable" or counts[k]]
        verdict = "CLEAN" if self.clean else "FINDINGS"
        if self.chain is not None and not self.chain.ok:
            parts.append(f"archive TAMPERED ({len(self.chain.findings)} chain findings)")
        a = self.archive
        if a is not None and not a.offsets_consistent:
            parts.append(f"archive INCONSISTENT ({len(a.offset_gaps)} offset gaps, {len(a.offset_overlaps)} overlaps, "
                         f"{len(a.count_mismatches)} count mismatches)")
        return (f"audit {verdict}: {self.replayed:,} settlements replayed, {self.recorded:,} recorded: "
                + ", ".join(parts))

    def lines(self, limit: int = 50) -> list[str]:
        out = [] if self.cut is None else self.cut.lines()
        if self.chain is not None:
            out += self.chain.lines(limit)
        if self.archive is not None:
            out += self.archive.offset_findings(limit) + [self.archive.offsets_summary()]
        if self.unreadable:
            out.append(self.unreadable)
        if self.forged:
            out.append("events rejected before the rules (authentication): "
                       + ", ".join(f"{r} {n:,}" for r, n in sorted(self.forged.items())))
        if self.untagged:
            out.append(f"UNTAGGED: {self.untagged:,} events accepted without an authentication tag "
                       f"(--accept-untagged)")
        for kind in KINDS:
            found = self.of(kind)
            for f in found[:limit]:
                out.append(f"{kind.upper():<10} {f.id}: {f.message}")
                for name, v in f.fields.items():
                    out.append(f"    {name}: replayed {v['replayed']!r}, recorded {v['recorded']!r}")
                for e in f.events:
                    verdict = f"  [replay: {e['replay']}]" if e.get("replay") else ""
                    out.append(f"    {e['role']:<9} {e['table_id']} seq {e['seq']} ({e['where']}): "
                               f"{json.dumps(e['record'], sort_keys=True, default=str)}{verdict}")
                if not f.events and kind != "unreadable":
                    out.append("    (no table event with that table and seq in the history)")
            if len(found) > limit:
                out.append(f"... and {len(found) - limit:,} more {kind}")
        out.append(self.summary())
        return out


def _settlement_of(record) -> bool:
    return type(record) is dict and record.get("type", "WagerSettled") == "WagerSettled" \
        and type(record.get("id")) is str


def _comparable(record: dict) -> dict:
    return {k: record.get(k) for k in COMPARED_FIELDS}


def _diff(replayed: dict, recorded: dict) -> dict:
    out = {}
    for k in COMPARED_FIELDS:
        a, b = replayed.get(k), recorded.get(k)
        if a != b or type(a) is not type(b):
            out[k] = {"replayed": a, "recorded": b}
    return out


def _describe(s: dict) -> str:
    won = f" won {s.get('won_cents')}" if s.get("outcome") == "win" else ""
    return (f"{s.get('wager')} {s.get('outcome')}{won} on stake {s.get('stake_cents')} "
            f"(paytable {s.get('paytable')}, {s.get('detail')}), table {s.get('table_id')} "
            f"placed at seq {s.get('placed_seq')}, decided at seq {s.get('seq')}")


def audit_replay(tags=None, thresholds=None):
    """The replay an audit settles its history with: `tags` the tag check before the core,
    `thresholds` the surveillance's (None: the defaults)."""
    from craps_streams.replay.engine import Replay
    from craps_streams.surveillance import HoldWatch

    return Replay(HoldWatch(thresholds) if thresholds is not None else None, tags=tags)


def replay_settlements(history: Iterable, sl=None, tags=None, thresholds=None,
                       into=None) -> tuple[dict, dict, object]:
    """Replay a history: (settlement id -> record, (table, seq) -> rejection "reason: message",
    tally); `tags` the tag check before the core (`craps_streams.authenticity.TagCheck`),
    `thresholds` the surveillance's (None: the defaults). `into` takes the settlements instead of a
    new dict (`ReplayedBuckets`: on disk, by wager)."""
    from craps_streams.replay.sources import batched, feed_item

    replay = audit_replay(tags, thresholds)
    settled = {} if into is None else into
    rejected: dict = {}
    feeds = sl.feeds if sl is not None and sl.active else None
    keeps = sl.keeps if sl is not None and sl.active else None
    if feeds is None:  # every item: in batches, as the replay command settles them (its quiet runs natively)
        outputs = (o for batch in batched(history) for o in replay.feed_batch(batch))
    else:
        outputs = (o for item, where in history if feeds(item) for o in feed_item(replay, item, where))
    for o in outputs:
        t = type(o)
        if t is WagerSettled:
            if keeps is None or keeps(o):
                settled[o.id] = output_to_record(o)
        elif t is EventRejected and o.table_id:
            rejected.setdefault((o.table_id, o.seq), f"rejected {o.reason}: {o.message[:200]}")
    return settled, rejected, replay.tally


def compare(replayed: dict, recorded: Iterable) -> AuditReport:
    """Findings of the recorded settlements against the replayed ones (id -> record)."""
    report = AuditReport(replayed=len(replayed))
    rec_by_id: dict = {}
    order = []
    for n, item in enumerate(recorded, 1):
        record, where = item if type(item) is tuple else (item, f"record {n}")
        if not _settlement_of(record):
            if type(record) is dict and record.get("type") not in (None, "WagerSettled"):
                continue  # another output kind in a mixed file: not the audit's business
            report.findings.append(Finding("unreadable", f"<{where}>", None, None,
                                           f"not a settlement record: {str(record)[:200]}"))
            continue
        report.recorded += 1
        if record["id"] not in rec_by_id:
            order.append(record["id"])
        rec_by_id.setdefault(record["id"], []).append(record)

    replay_by_wager = {r["wager_id"]: i for i, r in replayed.items()}
    matched_replay = set()
    unmatched_recorded = []
    for i in order:
        copies = rec_by_id[i]
        first = copies[0]
        if len(copies) > 1:
            identical = all(_comparable(c) == _comparable(first) for c in copies[1:])
            report.findings.append(Finding(
                "duplicated", i, first.get("wager_id"), first.get("table_id"),
                f"recorded {len(copies)} times ({'identical copies' if identical else 'copies differ'}): "
                f"{_describe(first)}", replayed.get(i), [dict(c) for c in copies]))
        if i in replayed:
            matched_replay.add(i)
            seen_diffs = []
            for c in copies:
                d = _diff(replayed[i], c)
                if d and d not in seen_diffs:
                    seen_diffs.append(d)
                    report.findings.append(Finding(
                        "different", i, c.get("wager_id"), c.get("table_id"),
                        f"{', '.join(d)} differ{'s' if len(d) == 1 else ''}: replayed {_describe(replayed[i])}",
                        replayed[i], [dict(c)], d))
        else:
            unmatched_recorded.append(first)

    # Recorded under an id the replay does not have: the same wager decided elsewhere, the same
    # wager paid twice, or a settlement of a wager the replay never settled.
    recorded_wagers: dict = {}
    for i in order:
        recorded_wagers.setdefault(rec_by_id[i][0].get("wager_id"), []).append(i)
    for r in unmatched_recorded:
        w = r.get("wager_id")
        rid = replay_by_wager.get(w)
        if rid is not None and rid not in matched_replay:
            matched_replay.add(rid)
            d = _diff(replayed[rid], r)
            report.findings.append(Finding(
                "different", r["id"], w, r.get("table_id"),
                f"recorded under {r['id']}, replayed as {rid}: {', '.join(d)} differ; "
                f"replayed {_describe(replayed[rid])}", replayed[rid], [dict(r)], d))
        elif rid is not None:
            others = [i for i in recorded_wagers.get(w, []) if i != r["id"]]
            report.findings.append(Finding(
                "duplicated", r["id"], w, r.get("table_id"),
                f"wager {w} recorded again under another id (also {', '.join(others)}): {_describe(r)}",
                replayed[rid], [dict(r)], _diff(replayed[rid], r)))
        else:
            report.findings.append(Finding(
                "extra", r["id"], w, r.get("table_id"),
                f"recorded, the replay did not settle wager {w}: {_describe(r)}", None, [dict(r)]))
    for i, s in replayed.items():
        if i not in matched_replay:
            report.findings.append(Finding(
                "missing", i, s.get("wager_id"), s.get("table_id"),
                f"replay settled, not recorded: {_describe(s)}", s, []))
    return report


def recorded_in_buckets(recorded: Iterable, directory: Path, count: int) -> WagerBuckets:
    """The recorded items split by wager into `count` buckets on disk, as the replayed settlements
    are (`compare_buckets`' other side)."""
    kept = WagerBuckets(directory, "recorded", count)
    for n, item in enumerate(recorded, 1):
        record, where = item if type(item) is tuple else (item, f"record {n}")
        kept.add(record.get("wager_id") if _settlement_of(record) else None, (record, where))
    kept.close()
    return kept


def compare_buckets(replayed: ReplayedBuckets, kept: WagerBuckets, jobs: int = 1) -> AuditReport:
    """`compare` of a history too long to hold: each bucket of the replayed settlements compared on
    its own with the same bucket of the recorded ones (craps_streams/replay/wager_buckets.py says
    why that finds the same as one comparison). Findings come bucket by bucket; with `jobs`, the
    buckets are shared by this process and forked ones and put back in bucket order (craps_streams/jobs.py)."""
    from craps_streams.jobs import in_processes

    replayed.close()
    report = AuditReport()
    parts = in_processes(_compare_bucket, [(replayed, kept, b) for b in range(replayed.count)], jobs)
    for part in parts:
        report.replayed += part.replayed
        report.recorded += part.recorded
        report.findings += part.findings
    return report


def _compare_bucket(replayed: ReplayedBuckets, kept: WagerBuckets, b: int) -> AuditReport:
    return compare(replayed.by_id(b), kept.read(b))


def audit_buckets(events: int) -> int:
    """How many buckets an audit of about `events` table events compares in: one (all in memory)
    up to BUCKET_EVENTS, then one more for each BUCKET_EVENTS."""
    return max(1, -(-events // BUCKET_EVENTS))


def history_events(history: str | None, cut=None) -> int:
    """About how many table events a history holds, from what is known before reading it: a cut's
    offsets, an archive's index, a file's size; 0 when nothing is (stdin, a topic without a cut)."""
    if cut is not None:
        return sum(cut.events.values())
    if history in (None, "-"):
        return 0
    path = Path(history)
    if (path / "index.json").exists():
        from craps_streams.archive.index import load_index

        return sum(int(f.get("count", 0)) for f in load_index(path)["files"])
    try:
        size = path.stat().st_size
    except OSError:
        return 0
    return size // (AVRO_EVENT_BYTES if path.suffix == ".avro" else JSONL_EVENT_BYTES)


def explain(report: AuditReport, history: Iterable, rejected: dict) -> None:
    """Attach the table events named by each finding (second pass over the history)."""
    wanted = {}
    for f in report.findings:
        for key in f.keys():
            wanted.setdefault(key, [])
    if not wanted:
        return
    for item, where in history:
        if type(item) is not dict:
            continue
        key = (item.get("table_id"), item.get("seq"))
        if key in wanted:
            wanted[key].append((where, item))
    for f in report.findings:
        rows = []
        refs = []
        for r in ([f.replayed] if f.replayed else []) + list(f.recorded):
            t = r.get("table_id")
            for role, name in (("placed", "placed_seq"), ("deciding", "seq")):
                ref = (role, t, r.get(name))
                if ref not in refs:
                    refs.append(ref)
        for role, t, seq in refs:
            for where, record in wanted.get((t, seq), []):
                if role == "placed" and record.get("type") != "WagerPlaced":
                    role_shown = "placed?"  # placed_seq names an event that is no WagerPlaced
                else:
                    role_shown = role
                rows.append({"role": role_shown, "table_id": t, "seq": seq, "where": where, "record": record,
                             "replay": rejected.get((t, seq))})
        f.events = rows


# ---------------------------------------------------------------- reading the history and the recording


def recorded_from_jsonl(path: str) -> Iterator[tuple[object, str]]:
    stream = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="replace")
    with stream:
        for n, line in enumerate(stream, 1):
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line), f"{path}:{n}"
            except (ValueError, RecursionError):  # RecursionError: hostile nesting
                yield line, f"{path}:{n}"


def recorded_from_topic(topic: str, bootstrap: str | None,
                        ends: dict[int, int] | None = None) -> Iterator[tuple[object, str]]:
    """The settlements topic read_committed, to its end or to `ends` (partition -> offset)."""
    from craps_streams.codec import CodecError, decode_output
    from craps_streams.kafka.reader import read_committed

    for m in read_committed(topic, "audit", bootstrap=bootstrap, ends=ends):
        where = f"{m.topic}/{m.partition}/{m.offset}"
        try:
            record = decode_output(m.value)
        except CodecError as e:
            record = f"undecodable: {e}"
        if type(record) is dict:
            record.setdefault("type", "WagerSettled")
        yield record, where


def run_audit(history: str | None, sl, *, from_topic: bool = False, topic: str | None = None,
              recorded: str | None = None, settlements_topic: str | None = None,
              bootstrap: str | None = None, tags=None, archive_key: bytes | None = None,
              group: str = DEFAULT_APP_ID, topics: Topics = Topics(), thresholds=None,
              buckets: int | None = None, jobs: int = 1):
    """Replay `history` (an archive directory, a .jsonl or .avro file, "-"; or with `from_topic`
    the floor's table-events topic, or `topic`) over the slice `sl` and compare it with the recorded
    settlements: a JSON Lines file `recorded`, else the topic `settlements_topic` (default the
    floor's settlements topic; `topics`: the floor's). `thresholds`: the surveillance's. `tags` checks every event's tag before the core (TagCheck).

    The table-events topic (or an archive of it) against the settlements topic is a live floor:
    both are read on the consistent cut of the worker group `group` (the setting CRAPS_APP_ID)
    (`report.cut`); an archive that ends before the cut is a ValueError. An
    archive's hash chain is verified first (its seal with `archive_key` when given)
    (`report.chain`): a tampered archive is a finding, and one that cannot be read as it is gives
    a report with the chain's findings only. `buckets`: compare in that many buckets on disk
    (default: from the history's size, `audit_buckets`). `jobs` 2 or more, with more than one
    bucket: the recorded settlements are read and split into their buckets by a second (forked)
    process while this one settles the history, then the buckets are compared in `jobs` processes
    (the same report: both sides' buckets hold what they would in one process, in the same order,
    and the findings come back in bucket order). A recording in a file is first matched line for line
    with the replay's own settlement lines (replay/agreement.py; with `jobs`, an archive's tables
    settled in that many processes): a recording that is exactly those is clean without the
    comparison, any other is compared as above. Returns the report (`.clean`, `.lines(limit)`,
    `.summary()`); raises OSError or ValueError for a history or recording it cannot read."""
    from craps_streams.replay.sources import open_history, open_history_batches, reopenable

    if not recorded and not settlements_topic:
        settlements_topic = topics.settlements
    is_archive = not from_topic and history not in (None, "-") and (Path(history) / "index.json").exists()
    cut = None
    if not recorded and (from_topic or is_archive):
        from craps_streams.kafka.cut import committed_cut

        if from_topic:
            events_topic = topic or topics.table_events
        else:
            from craps_streams.archive import archive_topic

            events_topic = archive_topic(history)
        cut = committed_cut(events_topic, settlements_topic, group, bootstrap=bootstrap)
        if is_archive:
            _archive_reaches(history, cut)

    def history_items(fast=True):
        if is_archive and cut is not None:
            return _archive_to(history, sl, cut.events)
        return open_history(history, from_topic=from_topic, topic=topic or topics.table_events, bootstrap=bootstrap, sl=sl, fast=fast,
                            ends=None if cut is None else cut.events)

    # An archive's hash chain first: a changed, removed or inserted file or record is a finding;
    # and its index's offsets, each once: a file lost or listed twice is one.
    archive = _archive_check(history, archive_key) if is_archive else None
    if buckets is None:
        buckets = audit_buckets(history_events(None if from_topic else history, cut))
    def recorded_items():
        if recorded:
            items = recorded_from_jsonl(recorded)
        else:
            items = recorded_from_topic(settlements_topic, bootstrap, None if cut is None else cut.settlements)
        if sl.active:
            items = ((r, w) for r, w in items if not _settlement_of(r) or _in_slice(r, sl))
        return items

    if recorded and recorded != "-" and not sl.active and reopenable(history, from_topic):
        # First the quick pass (replay/agreement.py): a recording that is the replay's own lines
        # is clean without a record compared; any other goes on to the comparison below.
        from craps_streams.replay.agreement import recording_agrees, recording_agrees_in_processes

        groups = []
        if jobs > 1 and is_archive:
            from craps_streams.archive import partition_groups

            groups = partition_groups(history)
        try:
            if len(groups) > 1:  # the archive's tables settled in processes, split by partition
                agreed, tally = recording_agrees_in_processes(history, groups, jobs, recorded, tags=tags,
                                                              thresholds=thresholds)
            else:
                replay = audit_replay(tags, thresholds)
                agreed = recording_agrees(replay, open_history_batches(
                    history, from_topic=from_topic, topic=topic or topics.table_events, bootstrap=bootstrap, sl=sl),
                    recorded)
                tally = replay.tally
        except (OSError, ValueError) as e:
            return _unreadable(archive, e)
        if agreed is not None:
            return _finished(AuditReport(replayed=agreed, recorded=agreed), archive, cut, tally)

    with tempfile.TemporaryDirectory(prefix="craps-audit-") as spill:
        into = ReplayedBuckets(Path(spill), "replayed", buckets) if buckets > 1 else None
        reading = _RecordedInAProcess(recorded_items, Path(spill), buckets) if into is not None and jobs > 1 else None
        try:
            try:
                replayed, rejected, tally = replay_settlements(history_items(), sl, tags, thresholds, into)
            except (OSError, ValueError) as e:
                return _unreadable(archive, e)
            if into is None:
                report = compare(replayed, recorded_items())
            else:
                kept = recorded_in_buckets(recorded_items(), Path(spill), buckets) if reading is None else reading.result()
                report = compare_buckets(into, kept, jobs)
        finally:
            if reading is not None:
                reading.stop()
    if cut is not None and not cut.committed and report.recorded:
        raise ValueError(f"worker group {cut.group} has committed no offset on {cut.events_topic}, yet "
                         f"{cut.settlements_topic} holds settlements: name the floor's worker group "
                         f"(--group, or CRAPS_APP_ID: `source .run/floor.env` for a `make run` floor)")
    _finished(report, archive, cut, tally)
    if report.findings and (from_topic or history != "-"):
        explain(report, history_items(fast=False), rejected)
    return report


def audit_after_pass(history: str, audit, *, recorded: str, tags=None, archive_key: bytes | None = None,
                     thresholds=None, jobs: int = 1) -> AuditReport:
    """The audit of `history` against the recording `recorded` after another pass over it carried the
    quick pass (`audit`, a `craps_streams.replay.agreement.PassAudit`: the report's): when the
    recording agreed with that pass's settlements, the clean report `run_audit` gives such a
    recording (an archive's hash chain checked as it checks it); else `run_audit` itself, a pass of
    its own. `tags`: a tag check not yet used (its count of untagged events is the audit's)."""
    if audit.settlements is None:
        from craps_streams.replay.sources import Slice

        return run_audit(history, Slice(), recorded=recorded, tags=tags, archive_key=archive_key,
                         thresholds=thresholds, jobs=jobs)
    archive = _archive_check(history, archive_key) if (Path(history) / "index.json").exists() else None
    n = audit.settlements
    return _finished(AuditReport(replayed=n, recorded=n), archive, None, audit.tally)


def _archive_check(history: str, archive_key: bytes | None):
    """The archive checked as `archive verify` checks it, but for the floor's seq walk: its hash
    chain (its head's seal with `archive_key` when given) and its index's offsets, each archived
    once (a `Verification`). The floor's seqs are the audit's replay's to see: an event twice is a
    duplicate in its tally, one missing a `sequence_gap` alert and events held."""
    from craps_streams.archive.verify import verify

    return verify(history, check_seq=False, key=archive_key)


def _unreadable(archive, error: Exception) -> AuditReport:
    """A history that could not be replayed: when its archive's chain says it was tampered with, the
    chain's findings are the report (the archive does not even read as it is); else `error` is
    raised again."""
    if archive is None or archive.chain.ok:
        raise error
    return AuditReport(archive=archive, unreadable=f"the archive cannot be replayed as it is: {error}")


def _finished(report: AuditReport, archive, cut, tally) -> AuditReport:
    """The report with what the replay and the reading found besides the comparison."""
    report.cut = cut
    report.archive = archive
    report.untagged = tally.untagged
    report.forged = {r: n for r, n in tally.rejections_by_reason.items() if r in ("bad_signature", "unknown_key")}
    return report


class _RecordedInAProcess:
    """`recorded_in_buckets` in a forked process, begun at once: the recorded side of an audit read
    (its JSON parsed or its topic consumed) and spilled while this process settles the history.
    Forked, so the reading needs nothing passed but what it already holds; what it raises comes
    back pickled and is raised here."""

    def __init__(self, items, directory: Path, count: int):
        import multiprocessing

        self.directory, self.count = directory, count
        self.failure = directory / "recorded.failure"
        self.process = multiprocessing.get_context("fork").Process(
            target=self._run, args=(items, directory, count, self.failure), name="audit-recorded", daemon=True)
        self.process.start()

    @staticmethod
    def _run(items, directory: Path, count: int, failure: Path) -> None:
        import os
        import pickle

        try:
            recorded_in_buckets(items(), directory, count)
        except BaseException as e:  # noqa: BLE001 - whatever it was, raised again in the parent
            try:
                failure.write_bytes(pickle.dumps(e))
            except Exception:  # noqa: BLE001 - an exception that does not pickle: its words
                failure.write_bytes(pickle.dumps(RuntimeError(f"{type(e).__name__}: {e}")))
            os._exit(1)
        os._exit(0)  # no atexit, no flush of the parent's buffers copied into the fork

    def result(self) -> WagerBuckets:
        import pickle

        self.process.join()
        if self.process.exitcode != 0:
            if self.failure.exists():
                raise pickle.loads(self.failure.read_bytes())  # noqa: S301 - our own child's, in our private directory
            raise RuntimeError(f"the process reading the recorded settlements ended with {self.process.exitcode}")
        return WagerBuckets(self.directory, "recorded", self.count)  # its files, written and closed

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()


def _archive_reaches(path: str, cut) -> None:
    """An archive audited against the live settlements topic must hold every event of the cut:
    the settlements of events it lacks would otherwise be "extra"."""
    from craps_streams.archive.index import load_index

    held = {int(p): v["next_offset"] for p, v in load_index(path)["partitions"].items()}
    short = [f"partition {p}: the archive ends at offset {held.get(p, 0):,}, the worker has committed "
             f"{o:,}" for p, o in sorted(cut.events.items()) if held.get(p, 0) < o]
    if short:
        raise ValueError(f"the archive {path} ends before the events worker group {cut.group} has settled ("
                         + "; ".join(short) + "): archive again first (`craps-streams archive --out "
                         f"{path}`), or audit --from-topic")


def _archive_to(path: str, sl, ends: dict) -> Iterator[tuple[object, str]]:
    """An archive's records below the cut's offsets, partition by partition."""
    from craps_streams.archive import archive_topic, iter_archive

    topic = archive_topic(path)
    tables = set(sl.tables) if sl is not None and sl.tables is not None else None
    until = sl.until if sl is not None else None
    for p, offset, item in iter_archive(path, tables=tables, until=until):
        if offset < ends.get(p, 0):
            yield item, f"{topic}/{p}/{offset}"


def report_record(report) -> dict:
    """The report as JSON-able data (the --json file)."""
    return {"summary": report.summary(), "replayed": report.replayed, "recorded": report.recorded,
            "findings": [f.to_record() for f in report.findings],
            "chain": None if report.chain is None else
            [{"kind": f.kind, "file": f.file, "message": f.message, "position": f.position, "offset": f.offset}
             for f in report.chain.findings],
            "archive_offsets": None if report.archive is None else
            {"consistent": report.archive.offsets_consistent,
             "records": report.archive.records, "offset_gaps": report.archive.offset_gaps,
             "offset_overlaps": report.archive.offset_overlaps, "count_mismatches": report.archive.count_mismatches},
            "untagged": report.untagged, "rejected_before_the_rules": report.forged,
            "cut": None if report.cut is None else report.cut.to_record()}


def _in_slice(record: dict, sl) -> bool:
    if sl.tables is not None and record.get("table_id") not in sl.tables:
        return False
    ts = record.get("ts")
    if type(ts) is not int:
        return True
    return (sl.since is None or ts >= sl.since) and (sl.until is None or ts <= sl.until)
