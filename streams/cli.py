"""`craps-streams`: the command line. Each command is a thin shell: read, apply the core, write."""
from __future__ import annotations

import argparse
import json
import sys
import time

class Progress:
    """A progress line on stderr (events, events/s), shown once a run has lasted `after_s` seconds.
    Library code is given it as an object with tick(n) and done(); only the CLI prints."""

    def __init__(self, enabled: bool = True, label: str = "replayed", after_s: float = 2.0, stream=None,
                 every: int = 10_000, interval_s: float = 1.0):
        self.enabled = enabled
        self.every = every  # events between two looks at the clock (a replay ticks millions)
        self.interval_s = interval_s
        self.label = label
        self.after_s = after_s
        self.stream = stream or sys.stderr
        self.start = self.last = time.monotonic()
        self.count = 0
        self.shown = False
        self._next_check = every

    def tick(self, n: int = 1) -> None:
        self.count += n
        if self.count < self._next_check or not self.enabled:
            return
        self._next_check = self.count + self.every
        now = time.monotonic()
        if now - self.start >= self.after_s and now - self.last >= self.interval_s:
            self.last = now
            self.shown = True
            rate = self.count / max(now - self.start, 1e-9)
            print(f"\r{self.label} {self.count:,} events  {rate:,.0f} events/s", end="", file=self.stream,
                  flush=True)

    def done(self) -> None:
        if self.enabled and (self.shown or self.after_s == 0):
            elapsed = max(time.monotonic() - self.start, 1e-9)
            print(f"\r{self.label} {self.count:,} events in {elapsed:.1f} s "
                  f"({self.count / elapsed:,.0f} events/s)", file=self.stream, flush=True)


def _dollars(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}${cents // 100:,}.{cents % 100:02d}"


def _tag_check(args, command: str):
    """The tag check of replay and audit, from the key ring (`--keys` or the default path); None
    with a message when it cannot be made."""
    from streams.authenticity import KeyRing, KeyRingError, TagCheck
    from streams.authenticity import keyfile

    try:
        ring = keyfile.load(args.keys)
    except KeyRingError as e:
        if not args.accept_untagged:
            print(f"{command}: {e}", file=sys.stderr)
            return None
        print(f"{command}: no key ring ({e}); every tagged event will be rejected (unknown_key)", file=sys.stderr)
        ring = KeyRing()
    return TagCheck(ring, accept_untagged=args.accept_untagged)


def format_summary(tally) -> str:
    lines = [
        f"events read {tally.read:,}  applied {tally.applied:,}  rejected {tally.rejected:,}  "
        f"duplicates {tally.duplicates:,}" + (f"  held {tally.held:,} (beyond a sequence gap)" if tally.held else ""),
    ]
    if tally.rejections_by_reason:
        lines.append("rejections: " + ", ".join(f"{k} {v:,}" for k, v in sorted(tally.rejections_by_reason.items())))
    if getattr(tally, "untagged", 0):
        lines.append(f"UNTAGGED: {tally.untagged:,} events accepted without an authentication tag "
                     f"(--accept-untagged: history from before tags, not proven authentic)")
    header = f"{'wager':<16}{'settled':>10}{'handle':>16}{'won by players':>16}{'house win':>14}{'hold %':>9}"
    lines += [header, "-" * len(header)]
    by_wager = tally.hold.by_wager()
    for wager, line in sorted(by_wager.items()):
        lines.append(f"{wager:<16}{line.settled:>10,}{_dollars(line.handle_cents):>16}"
                     f"{_dollars(line.won_cents):>16}{_dollars(line.house_win_cents):>14}{line.hold_percent:>8.2f}%")
    t = tally.hold.total()
    lines.append(f"{'all side wagers':<16}{t.settled:>10,}{_dollars(t.handle_cents):>16}"
                 f"{_dollars(t.won_cents):>16}{_dollars(t.house_win_cents):>14}{t.hold_percent:>8.2f}%")
    return "\n".join(lines)


def _open_in(path: str):
    return sys.stdin if path == "-" else open(path, encoding="utf-8", errors="replace")


def _open_out(path: str | None):
    return sys.stdout if path in (None, "-") else open(path, "w", encoding="utf-8")


def _slice_of(args, command: str):
    from streams.replay.sources import Slice, parse_time

    try:
        since, until = parse_time(args.since), parse_time(args.until)
    except ValueError as e:
        print(f"{command}: {e}", file=sys.stderr)
        return None
    tables = frozenset(t.strip() for t in args.tables.split(",") if t.strip()) if args.tables else None
    return Slice(tables, since, until)


def cmd_replay(args) -> int:
    from streams.replay.run import ReplayRun, batch_gc, wanted_types
    from streams.replay.sources import history_kind, open_history_batches

    try:
        wanted = wanted_types(args.only)
    except ValueError as e:
        print(f"--only: {e}", file=sys.stderr)
        return 2
    if not args.files and not args.from_topic:
        print("replay: give a history (FILE, -, an archive DIR, .avro files) or --from-topic", file=sys.stderr)
        return 2
    if args.files and args.from_topic:
        print("replay: either files or --from-topic, not both", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print("replay: --jobs must be 1 or more", file=sys.stderr)
        return 2
    sl = _slice_of(args, "replay")
    if sl is None:
        return 2
    tags = _tag_check(args, "replay")
    if tags is None:
        return 2
    spec, extra = (args.files[0] if args.files else None), args.files[1:]
    try:
        kind = history_kind(spec, from_topic=args.from_topic, extra_files=extra)
        if args.jobs > 1 and kind == "archive":
            return _replay_parallel(args, spec, sl, wanted, tags)
        if args.jobs > 1:
            print("replay: --jobs splits an archive directory by partition; this history is replayed "
                  "in one process", file=sys.stderr)
        history = open_history_batches(spec, from_topic=args.from_topic, topic=args.topic,
                                       bootstrap=args.bootstrap, sl=sl, extra_files=extra)
        first = next(history, None)  # opens the source: a missing file fails here
    except (OSError, ValueError) as e:
        print(f"replay: cannot read {' '.join(args.files) or 'the topic'}: {getattr(e, 'strerror', None) or e}",
              file=sys.stderr)
        return 2
    out = _open_out(args.output)
    progress = Progress(not args.no_progress)
    run = ReplayRun(sl, wanted, out.write, progress.tick, tags=tags)
    if first is not None:
        import itertools

        with batch_gc():
            run.feed(itertools.chain((first,), history))
    progress.done()
    out.flush()
    print(format_summary(run.tally()), file=sys.stderr)
    return 0


def _replay_parallel(args, spec: str, sl, wanted, tags) -> int:
    from streams.replay.parallel import replay_archive_parallel
    out = _open_out(args.output)
    progress = Progress(not args.no_progress)
    try:
        result = replay_archive_parallel(spec, args.jobs, sl=sl, wanted=wanted, out=out, progress=progress,
                                         tags=tags)
    except (OSError, ValueError) as e:
        print(f"replay: cannot read {spec}: {getattr(e, 'strerror', None) or e}", file=sys.stderr)
        return 2
    progress.done()
    out.flush()
    print(format_summary(result.tally), file=sys.stderr)
    return 0


def cmd_archive(args) -> int:
    from streams.archive import archive, verify
    from streams.authenticity import KeyRingError
    from streams.authenticity import keyfile

    try:
        key = keyfile.archive_key()  # seals the chain head; None: unsealed, seal not checked
    except KeyRingError as e:
        print(f"archive: {e}", file=sys.stderr)
        return 2
    if args.action == "verify":
        target = args.dir or args.out
        if not target:
            print("archive verify: the archive directory (DIR or --out DIR)", file=sys.stderr)
            return 2
        try:
            v = verify(target, check_seq=True, key=key)
        except (OSError, ValueError) as e:
            print(f"archive verify: {e}", file=sys.stderr)
            return 2
        for line in v.lines():
            print(line)
        return 0 if v.archive_ok else 1
    if args.action is not None or not args.out:
        print("archive: --out DIR (or `archive verify DIR`)", file=sys.stderr)
        return 2

    progress = Progress(not args.no_progress, "archived")
    try:
        result = archive(args.out, args.topic, args.bootstrap, progress=progress, seal_key=key)
    except (ValueError, TimeoutError) as e:
        print(f"archive: {e}", file=sys.stderr)
        return 2
    progress.done()
    print(f"archived {result.archived:,} messages ({result.undecodable:,} undecodable, kept raw) "
          f"into {len(result.files)} files under {args.out}", file=sys.stderr)
    if args.no_verify:
        return 0
    v = verify(args.out, check_seq=True, key=key)
    for line in v.lines():
        print(line, file=sys.stderr)
    return 0 if v.archive_ok else 1


def cmd_audit(args) -> int:
    from streams.replay.audit import report_record, run_audit

    if not args.history and not args.from_topic:
        print("audit: --history (an archive DIR, a .jsonl file) or --from-topic", file=sys.stderr)
        return 2
    if not args.recorded and args.settlements_topic is None:
        print("audit: --recorded settlements.jsonl or --settlements-topic", file=sys.stderr)
        return 2
    sl = _slice_of(args, "audit")
    if sl is None:
        return 2
    tags = _tag_check(args, "audit")
    if tags is None:
        return 2
    try:
        from streams.authenticity import keyfile

        report = run_audit(args.history, sl, from_topic=args.from_topic, topic=args.topic, recorded=args.recorded,
                           settlements_topic=args.settlements_topic, bootstrap=args.bootstrap, tags=tags,
                           archive_key=keyfile.archive_key())
    except (OSError, ValueError) as e:
        print(f"audit: {getattr(e, 'strerror', None) or e}", file=sys.stderr)
        return 2
    for line in report.lines(args.limit)[:-1]:
        print(line)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fo:
            json.dump(report_record(report), fo, indent=1, default=str)
    print(report.summary())
    return 0 if report.clean else 1


def _dev_signer(command: str):
    """The dev floor's table signer (the key ring made at first start), or None with a message."""
    from streams.authenticity import KeyRingError, TableSigner
    from streams.authenticity import keyfile

    try:
        ring, made = keyfile.init()
    except KeyRingError as e:
        print(f"{command}: {e}", file=sys.stderr)
        return None
    if made:
        print(f"{command}: made the dev floor's key ring at {keyfile.default_path()} (0600, git-ignored)",
              file=sys.stderr)
    return TableSigner(ring)


def _tagged(records, signer, command: str):
    from streams.authenticity import sign_record

    for record in records:
        try:
            yield sign_record(signer, record)
        except LookupError as e:
            raise SystemExit(f"{command}: {e}: add keys with `craps-streams keys add --tables ...`") from None


def cmd_keys(args) -> int:
    import time as _time

    from streams.authenticity import KeyRingError
    from streams.authenticity import keyfile
    from streams.replay.sources import parse_time

    path = keyfile.default_path() if args.path is None else __import__("pathlib").Path(args.path)
    try:
        at = parse_time(getattr(args, "at", None))
        now = _time.time_ns() // 1_000_000
        tables = [t.strip() for t in (getattr(args, "tables", None) or "").split(",") if t.strip()]
        if args.action == "init":
            ring, made = keyfile.init(path, tables or keyfile.dev_floor_tables(args.count),
                                      at if at is not None else 0)
            print(f"{'made' if made else 'kept the existing'} key ring {path}: {len(ring.keys)} keys")
            keyfile.archive_key(create=True)  # the archiver's key (seals archive chain heads)
            print(f"archive key {keyfile.archive_key_path()} (0600)")
            return 0
        ring = keyfile.load(path)
        if args.action == "list":
            print(f"{'key id':<32} {'tables':<24} {'not_before':>15} {'not_after':>15}")
            for k in ring.keys:
                tabs = ",".join(sorted(k.tables)[:3]) + (" ..." if len(k.tables) > 3 else "")
                print(f"{k.key_id:<32} {tabs:<24} {k.not_before:>15} {str(k.not_after or '-'):>15}")
            return 0
        if args.action == "add":
            if not tables:
                print("keys add: --tables T1,T2", file=sys.stderr)
                return 2
            for t in tables:
                ring = ring.with_key(keyfile.new_key({t}, at if at is not None else now))
        elif args.action == "rotate":
            if not tables:
                print("keys rotate: --tables T1,T2 (each gets a new key)", file=sys.stderr)
                return 2
            at = at if at is not None else now
            for t in tables:
                ring = ring.rotated({t}, at, keyfile.new_key({t}, at), grace_ms=int(args.grace_s * 1000))
        elif args.action == "retire":
            ring = ring.retired(args.key_id, at if at is not None else now)
        keyfile.save(ring, path)
    except (KeyRingError, ValueError) as e:
        print(f"keys {args.action}: {e}", file=sys.stderr)
        return 2
    print(f"keys {args.action}: {path} now holds {len(ring.keys)} keys")
    return 0


def cmd_simulate(args) -> int:
    from streams.sim.floor import floor_events

    if args.tables < 1 or args.hours <= 0 or not 0 <= args.bad_rate <= 1 or args.speed <= 0:
        print("simulate: --tables >= 1, --hours > 0, --speed > 0 and --bad-rate in 0..1", file=sys.stderr)
        return 2
    try:
        faults = _faults(args)
    except ValueError as e:
        print(f"simulate: {e}", file=sys.stderr)
        return 2
    if args.live:
        return _simulate_live(args, faults)
    records = floor_events(args.tables, args.hours, args.seed, args.bad_rate, faults=faults)
    if not args.no_tags:
        signer = _dev_signer("simulate")
        if signer is None:
            return 2
        records = _tagged(records, signer, "simulate")
    out = _open_out(args.output)
    dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
    write = out.write
    try:
        for record in records:
            write(record if type(record) is str else dumps(record))
            write("\n")
        out.flush()
    except BrokenPipeError:
        return 0
    return 0


def _faults(args) -> dict:
    """--fault SPEC on the tables of --fault-tables (default T001): table id -> Fault."""
    from streams.sim.floor import Fault

    if not args.fault:
        if args.fault_tables:
            raise ValueError("--fault-tables needs --fault")
        return {}
    fault = Fault.parse(args.fault)
    tables = [t.strip() for t in (args.fault_tables or "T001").split(",") if t.strip()]
    known = {f"T{n:03d}" for n in range(1, args.tables + 1)}
    unknown = [t for t in tables if t not in known]
    if unknown:
        raise ValueError(f"--fault-tables: no such table on this floor: {', '.join(unknown)}")
    return {t: fault for t in tables}


def _simulate_live(args, faults: dict) -> int:
    import time

    from streams.ingest.producer import make_producer, paced, produce
    from streams.sim.floor import floor_events

    def stamped(records):
        # A live feed: the event time is when the floor sends the event.
        for record in records:
            if type(record) is dict:
                record["ts"] = time.time_ns() // 1_000_000
            yield record

    start_ms = time.time_ns() // 1_000_000
    records = stamped(paced(floor_events(args.tables, args.hours, args.seed, args.bad_rate, start_ms, faults=faults),
                            args.speed))
    if not args.no_tags:
        signer = _dev_signer("simulate")
        if signer is None:
            return 2
        records = _tagged(records, signer, "simulate")
    producer = make_producer(args.bootstrap, live=True)
    try:
        produce(records, producer, progress=Progress(True, "floor sent", after_s=0.0, every=1, interval_s=0.5))
    finally:
        producer.close()
    return 0


def cmd_produce(args) -> int:
    from streams.ingest.producer import make_producer, produce, records_of

    records = records_of(args.file)
    if not args.no_tags:
        # The dev floor's table controllers: an event without a tag is tagged with its table's key;
        # one that carries a tag is sent as it is (never re-signed: that would launder a forgery).
        signer = _dev_signer("produce")
        if signer is None:
            return 2
        records = (r if type(r) is dict and "tag" in r else t
                   for r, t in ((r, next(_tagged((r,), signer, "produce"))) for r in records))
    producer = make_producer(args.bootstrap)
    try:
        n = produce(records, producer, progress=Progress(not args.quiet, "sent", after_s=0.0, every=1, interval_s=0.5))
    except OSError as e:
        print(f"produce: cannot read {args.file}: {e.strerror}", file=sys.stderr)
        return 2
    finally:
        producer.close()
    if args.quiet:
        print(f"sent {n:,} events", file=sys.stderr)
    return 0


def cmd_worker(args) -> int:
    from streams.app.service import serve

    return serve(web_port=args.web_port, loglevel=args.loglevel)


def cmd_floor(args) -> int:
    import os

    # Before the Faust app is built (at import): its app id carries the instance name.
    if args.instance:
        os.environ["CRAPS_FLOOR_INSTANCE"] = args.instance
    if args.port:
        os.environ["CRAPS_FLOOR_PORT"] = str(args.port)
    from streams.floor.app import serve

    return serve(loglevel=args.loglevel)


def cmd_tail(args) -> int:
    from streams.app.tail import follow

    try:
        for line in follow(args.topics.split(","), args.from_beginning, args.limit, args.bootstrap):
            print(line, flush=True)
    except ValueError as e:
        print(f"tail: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


def cmd_topics(args) -> int:
    from streams.kafka.settings import default_bootstrap
    from streams.kafka.topics import create_topics, describe_topics, prune_runs, spec_drift

    bootstrap = args.bootstrap or default_bootstrap()
    if args.prune_runs is not None:
        deleted = prune_runs(args.prune_runs, bootstrap, args.timeout)
        print(f"deleted {len(deleted)} topics of earlier runs" + (f": {', '.join(deleted)}" if deleted else ""))
        return 0
    if not args.list:
        for name, status in create_topics(bootstrap, timeout_s=args.timeout).items():
            print(f"{status:8} {name}")
    rc = 0
    print(f"topics on {bootstrap}:")
    for name, info in describe_topics(bootstrap, timeout_s=args.timeout).items():
        cfg = info["configs"]
        shown = " ".join(f"{k}={cfg[k]}" for k in ("cleanup.policy", "retention.ms") if k in cfg)
        drift = spec_drift(name, info)
        if drift:
            rc = 1
        print(f"  {name:32} partitions={info['partitions']:<3} {shown}"
              + ("  DIFFERS FROM SPEC: " + ", ".join(drift) if drift else ""))
    return rc


def cmd_odds(args) -> int:
    from streams.odds.report import format_text, odds_records

    if args.format == "json":
        print(json.dumps(odds_records(), indent=2))
    else:
        print(format_text())
    return 0


def cmd_report(args) -> int:
    import datetime as _dt
    import os
    import shlex
    import subprocess
    from pathlib import Path

    from streams.report import GamingCalendar, Period, ReportSettings, make_report
    from streams.report import files
    from streams.report.calendar import parse_clock, parse_shifts

    if bool(args.files) == bool(args.from_topic):
        print("report: give a history (an archive DIR, a .jsonl file, .avro files) or --from-topic", file=sys.stderr)
        return 2
    try:
        start = parse_clock(args.day_start)
        shifts = parse_shifts(args.shifts) if args.shifts else \
            tuple((n, parse_clock(f"{(start.hour + 8 * i) % 24:02d}:{start.minute:02d}"))
                  for i, n in enumerate(("day", "swing", "grave")))
        cal = GamingCalendar(args.tz, start, shifts)
        if args.day and (args.first or args.last):
            raise ValueError("--day, or --from/--to, not both")
        if args.first or args.last:
            period = Period(_dt.date.fromisoformat(args.first or args.last), _dt.date.fromisoformat(args.last or args.first))
        else:
            day = _dt.date.fromisoformat(args.day) if args.day else cal.gaming_day(time.time_ns() // 1_000_000)
            period = Period(day, day, args.shift)
        if period.shift:
            cal.shift_bounds(period.first, period.shift)  # an unknown shift fails here
        if not 0 < args.investigate_at < 1:
            raise ValueError("--investigate-at is a probability between 0 and 1, e.g. 0.05")
        tables = frozenset(t.strip() for t in args.tables.split(",") if t.strip()) if args.tables else None
    except ValueError as e:
        print(f"report: {e}", file=sys.stderr)
        return 2
    tags = _tag_check(args, "report")
    if tags is None:
        return 2
    settings = ReportSettings(cal, period, args.investigate_at, tables)
    thresholds = {k: v for k, v in sorted(os.environ.items()) if k.startswith(("CRAPS_HOLD_", "CRAPS_POSITION_", "CRAPS_DICE_"))}
    progress = Progress(not args.no_progress, "reported")
    spec, extra = (args.files[0] if args.files else None), args.files[1:]
    try:
        report = make_report(settings, spec, from_topic=args.from_topic, topic=args.topic, bootstrap=args.bootstrap,
                             extra_files=extra, tags=tags, ring=tags.ring, tick=progress.tick, thresholds=thresholds)
    except (OSError, ValueError, TimeoutError) as e:
        print(f"report: cannot read {' '.join(args.files) or 'the topic'}: {getattr(e, 'strerror', None) or e}",
              file=sys.stderr)
        return 2
    progress.done()
    report["provenance"]["command"] = "craps-streams " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    written = files.write_csv(report, out)
    written.append(files.write_json(report, out / "report.json"))
    if not args.no_html:
        html = files.write_html(report, out / "report.html")
        written.append(html)
        if args.pdf:
            try:
                written.append(files.print_pdf(html, out / "report.pdf"))
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                print(f"report: no PDF: {e}", file=sys.stderr)
                return 1
    total = next(row for row in report["floor"] if row["wager"] == "all" and row["scope"] != "month_to_date"
                 and row["scope"] != "year_to_date")
    flagged = sum(1 for row in report["kinds"] if row["investigate"])
    print(f"{report['title']}: handle {_dollars(total['handle_cents'])}, house win {_dollars(total['house_win_cents'])}"
          f" over {len({row['table_id'] for row in report['tables']})} tables; {flagged} lines flagged for investigation; "
          f"{report['exceptions']['rejections']['count']} rejections, {report['exceptions']['alerts']['count']} alerts")
    for path in written:
        print(f"  {path}")
    return 0


def _add_tag_options(p) -> None:
    p.add_argument("--keys", help="the table key ring (default: $CRAPS_TABLE_KEYS or .secrets/table-keys.json)")
    p.add_argument("--accept-untagged", action="store_true",
                   help="let events without any tag through (history from before tags); said in the summary")


def _add_slice_options(p) -> None:
    p.add_argument("--tables", help="comma list of table ids, e.g. T001,T002")
    p.add_argument("--since", help="outputs decided at or after this time (ISO 8601 or epoch ms)")
    p.add_argument("--until", help="history fed up to and outputs decided at or before this time")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="craps-streams", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser(
        "replay", help="settle a history of table events (JSON Lines, archive, Avro, topic)",
        description="Settle a history with the rules core. A time slice (--since/--until) feeds every "
                    "event up to --until from the table's TableOpened on (a table's state is its whole "
                    "history) and keeps only the OUTPUTS whose deciding event's ts is in [since, until].")
    r.add_argument("files", nargs="*", metavar="FILE",
                   help="JSON Lines file of table events, - for stdin, an archive directory, or .avro files")
    r.add_argument("--only", help="comma list of settlements,markers,alerts,rejections; none: the summary only")
    r.add_argument("--output", "-o", help="write outputs here instead of stdout")
    r.add_argument("--from-topic", action="store_true", help="read the table-events topic (read_committed)")
    r.add_argument("--topic", help="with --from-topic: the topic (default: the table-events topic)")
    r.add_argument("--bootstrap")
    _add_slice_options(r)
    r.add_argument("--jobs", "-j", type=int, default=1,
                   help="replay an archive directory in this many processes, by partition (same output)")
    r.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    _add_tag_options(r)
    r.set_defaults(run=cmd_replay)

    a = sub.add_parser("archive", help="copy the table-events topic into Avro container files (resumable); "
                                       "`archive verify DIR` checks an archive and its hash chain")
    a.add_argument("action", nargs="?", choices=["verify"], help="verify: check DIR only, archive nothing")
    a.add_argument("dir", nargs="?", help="with verify: the archive directory")
    a.add_argument("--out", help="the archive directory")
    a.add_argument("--topic", help="default: the table-events topic")
    a.add_argument("--bootstrap")
    a.add_argument("--no-verify", action="store_true", help="skip the verification after archiving")
    a.add_argument("--no-progress", action="store_true")
    a.set_defaults(run=cmd_archive)

    au = sub.add_parser("audit", help="replay a history and compare with the recorded settlements")
    au.add_argument("--history", help="an archive directory, a .jsonl file, or .avro file")
    au.add_argument("--from-topic", action="store_true", help="the history is the table-events topic")
    au.add_argument("--topic", help="with --from-topic: the topic (default: the table-events topic)")
    au.add_argument("--recorded", help="recorded settlements as JSON Lines")
    au.add_argument("--settlements-topic", nargs="?", const="", default=None,
                    help="read the recorded settlements from this topic (default: the settlements topic)")
    au.add_argument("--bootstrap")
    au.add_argument("--json", dest="json_out", help="also write the findings as JSON here")
    au.add_argument("--limit", type=int, default=50, help="findings shown per kind (default 50)")
    _add_slice_options(au)
    _add_tag_options(au)
    au.set_defaults(run=cmd_audit)

    rp = sub.add_parser(
        "report", help="gaming-day report of the side wagers: per table, kind, shift; CSV, JSON, HTML, PDF",
        description="Settle a history (as replay does) and report a gaming day, a shift or a range of gaming "
                    "days: handle, paid, house win, hold against theory, the probability of a result this far "
                    "from theory, month and year to date, exceptions, Rules Submissions, provenance "
                    "(docs/reports.md).")
    rp.add_argument("files", nargs="*", metavar="HISTORY", help="an archive directory, a .jsonl file, or .avro files")
    rp.add_argument("--from-topic", action="store_true", help="read the table-events topic (read_committed)")
    rp.add_argument("--topic", help="with --from-topic: the topic (default: the table-events topic)")
    rp.add_argument("--bootstrap")
    rp.add_argument("--day", help="the gaming day YYYY-MM-DD (default: the current gaming day)")
    rp.add_argument("--shift", help="only this shift of --day")
    rp.add_argument("--from", dest="first", help="first gaming day of a range (YYYY-MM-DD)")
    rp.add_argument("--to", dest="last", help="last gaming day of a range, inclusive")
    rp.add_argument("--tz", default=__import__("os").environ.get("CRAPS_REPORT_TZ", "America/New_York"),
                    help="the casino's IANA time zone (default $CRAPS_REPORT_TZ or America/New_York)")
    rp.add_argument("--day-start", default=__import__("os").environ.get("CRAPS_REPORT_DAY_START", "06:00"),
                    help="local time the gaming day starts (default $CRAPS_REPORT_DAY_START or 06:00)")
    rp.add_argument("--shifts", default=__import__("os").environ.get("CRAPS_REPORT_SHIFTS"),
                    help="NAME=HH:MM,... (default: day, swing, grave, 8 hours each from --day-start)")
    rp.add_argument("--investigate-at", type=float, default=0.05,
                    help="flag a line whose result is this improbable or more, two-sided (default 0.05)")
    rp.add_argument("--tables", help="comma list of table ids (default: every table)")
    rp.add_argument("--out", "-o", default="report", help="directory for the files (default ./report)")
    rp.add_argument("--pdf", action="store_true", help="also print report.pdf with headless Chromium")
    rp.add_argument("--no-html", action="store_true", help="CSV and JSON only")
    rp.add_argument("--no-progress", action="store_true")
    _add_tag_options(rp)
    rp.set_defaults(run=cmd_report)

    s = sub.add_parser("simulate", help="write a simulated floor's event history as JSON Lines")
    s.add_argument("--tables", type=int, default=10)
    s.add_argument("--hours", type=float, default=1.0)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--bad-rate", type=float, default=0.0, help="chance per window of a bad input")
    s.add_argument("--output", "-o")
    s.add_argument("--live", action="store_true", help="feed the floor to Kafka in real time instead")
    s.add_argument("--speed", type=float, default=1.0, help="with --live: times faster than real time")
    s.add_argument("--bootstrap", help="Kafka bootstrap servers (default 127.0.0.1:9092)")
    s.add_argument("--no-tags", action="store_true",
                   help="write untagged events (history as before tags; rejected unless --accept-untagged)")
    s.add_argument("--fault", help="a table that misbehaves: loaded-dice[:P7] (default 5/36), "
                   "shaker-drift[:RATE] (die 1's six gains RATE an hour, default 0.02), or "
                   "past-posting:POSITION (Hot Roller wagers only when the next throw is not a 7)")
    s.add_argument("--fault-tables", help="comma list of the tables with the fault (default T001)")
    s.set_defaults(run=cmd_simulate)

    pr = sub.add_parser("produce", help="send JSON Lines or Avro container files of table events to Kafka")
    pr.add_argument("file", help="a .jsonl file, an Avro container (.avro), or - for stdin")
    pr.add_argument("--bootstrap")
    pr.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    pr.add_argument("--no-tags", action="store_true",
                    help="send events as they are (default: tag untagged events with the dev floor's keys)")
    pr.set_defaults(run=cmd_produce)

    k = sub.add_parser("keys", help="the table controllers' key ring (tags): init, add, rotate, retire, list",
                       description="Keys live in $CRAPS_TABLE_KEYS (default .secrets/table-keys.json, 0600, "
                                   "git-ignored). Times are event times (ISO 8601 or epoch ms).")
    k.add_argument("--path", help="the key ring file (default: $CRAPS_TABLE_KEYS or .secrets/table-keys.json)")
    ks = k.add_subparsers(dest="action", required=True)
    ki = ks.add_parser("init", help="make the dev floor's ring if there is none: one key per table")
    ki.add_argument("--count", type=int, default=1000, help="tables T001.. (default 1000)")
    ki.add_argument("--tables", help="comma list of table ids instead of T001..")
    ki.add_argument("--at", help="keys valid from this event time (default: the epoch)")
    ks.add_parser("list", help="key ids, tables and validity (never the secrets)")
    ka = ks.add_parser("add", help="a new key for each of these tables")
    ka.add_argument("--tables", required=True)
    ka.add_argument("--at", help="valid from (default: now)")
    kr = ks.add_parser("rotate", help="a new key per table from --at; the old ones end --grace-s later")
    kr.add_argument("--tables", required=True)
    kr.add_argument("--at", help="the switch time (default: now)")
    kr.add_argument("--grace-s", type=float, default=60.0,
                    help="seconds the old key still authenticates events after the switch (default 60)")
    kt = ks.add_parser("retire", help="a key authenticates no event stamped at or after --at")
    kt.add_argument("key_id")
    kt.add_argument("--at", help="default: now; a compromised key: from when it may have leaked")
    k.set_defaults(run=cmd_keys)

    w = sub.add_parser("worker", help="run a settling worker against Kafka")
    w.add_argument("--web-port", type=int, default=int(__import__("os").environ.get("CRAPS_WEB_PORT", 6066)),
                   help="the worker's web server (/metrics, /state); 0 turns it off")
    w.add_argument("--loglevel", default="warning")
    w.set_defaults(run=cmd_worker)

    fl = sub.add_parser("floor", help="the floor view: every table live, with plots (faust-streaming)")
    fl.add_argument("--port", type=int, help="web port (default $CRAPS_FLOOR_PORT or 6070)")
    fl.add_argument("--instance", help="this view's name, unique per instance (default $CRAPS_FLOOR_INSTANCE or 1)")
    fl.add_argument("--loglevel", default="warning")
    fl.set_defaults(run=cmd_floor)

    t = sub.add_parser("tail", help="follow settlements and alerts in the terminal")
    t.add_argument("--topics", default="settlements,alerts",
                   help="comma list of settlements,markers,alerts,rejections")
    t.add_argument("--from-beginning", action="store_true")
    t.add_argument("--limit", type=int, default=0, help="stop after this many records (0: follow)")
    t.add_argument("--bootstrap")
    t.set_defaults(run=cmd_tail)

    o = sub.add_parser("odds", help="exact outcome distribution, house edge and std dev of every wager")
    o.add_argument("--format", choices=("text", "json"), default="text")
    o.set_defaults(run=cmd_odds)

    tp = sub.add_parser("topics", help="create the pipeline topics (idempotent) and list what the broker holds")
    tp.add_argument("--bootstrap", help="default $CRAPS_KAFKA_BOOTSTRAP or 127.0.0.1:9092")
    tp.add_argument("--list", action="store_true", help="only print the existing topics")
    tp.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")
    tp.add_argument("--prune-runs", type=int, metavar="N",
                    help="only delete the topics of `make run` floors (craps.run-*) but the newest N runs'")
    tp.set_defaults(run=cmd_topics)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
