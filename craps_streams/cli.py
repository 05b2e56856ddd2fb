"""`craps-streams`: the command line. Each command is a thin shell: read, apply the core, write.

Every command answers what stops it with one or two lines on stderr and an exit code of its own
kind (docs/operating/cli.md); `--debug` adds the traceback and the Kafka clients' own logs:

    0  done (audit, archive verify: clean; topics: as specified)
    1  findings: audit findings, a tampered archive, topics that differ from their spec
    2  a bad argument or input that is not what the command takes
    3  a file that cannot be read or written
    4  missing or unusable secrets: a Kafka client config, the secrets directory, the key ring
    5  the Kafka broker cannot be reached, or stopped answering
    6  the Kafka broker refused: the login, the TLS handshake, or the role's rights (ACLs)
    70 an internal error (a bug): the one line says so, --debug shows where
    130 interrupted (Ctrl-C)
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_FILE = 3
EXIT_SECRETS = 4
EXIT_BROKER_UNREACHABLE = 5
EXIT_BROKER_REFUSED = 6
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130

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
    from craps_streams.authenticity import KeyRing, KeyRingError, TagCheck
    from craps_streams.authenticity import keyfile

    try:
        ring = keyfile.load(args.keys)
    except KeyRingError as e:
        if not args.accept_untagged:
            print(f"craps-streams {command}: {e}", file=sys.stderr)
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
    from craps_streams.replay.sources import Slice, parse_time

    try:
        since, until = parse_time(args.since), parse_time(args.until)
    except ValueError as e:
        print(f"{command}: {e}", file=sys.stderr)
        return None
    tables = frozenset(t.strip() for t in args.tables.split(",") if t.strip()) if args.tables else None
    return Slice(tables, since, until)


def cmd_replay(args) -> int:
    from craps_streams.replay.run import ReplayRun, batch_gc, wanted_types
    from craps_streams.replay.sources import history_kind, open_history_batches

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
        return EXIT_SECRETS
    spec, extra = (args.files[0] if args.files else None), args.files[1:]
    kind = history_kind(spec, from_topic=args.from_topic, extra_files=extra)
    if args.jobs > 1 and kind == "archive":
        return _replay_parallel(args, spec, sl, wanted, tags)
    if args.jobs > 1:
        print("replay: --jobs splits an archive directory by partition; this history is replayed "
              "in one process", file=sys.stderr)
    history = open_history_batches(spec, from_topic=args.from_topic, topic=args.topic,
                                   bootstrap=args.bootstrap, sl=sl, extra_files=extra)
    first = next(history, None)  # opens the source: a missing file fails here (exit 3, in main)
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
    from craps_streams.replay.parallel import replay_archive_parallel
    out = _open_out(args.output)
    progress = Progress(not args.no_progress)
    result = replay_archive_parallel(spec, args.jobs, sl=sl, wanted=wanted, out=out, progress=progress,
                                     tags=tags)
    progress.done()
    out.flush()
    print(format_summary(result.tally), file=sys.stderr)
    return 0


def cmd_archive(args) -> int:
    from craps_streams.archive import archive, verify
    from craps_streams.authenticity import KeyRingError
    from craps_streams.authenticity import keyfile

    try:
        key = keyfile.archive_key()  # seals the chain head; None: unsealed, seal not checked
    except KeyRingError as e:
        print(f"archive: {e}", file=sys.stderr)
        return EXIT_SECRETS
    if args.action == "verify":
        target = args.dir or args.out
        if not target:
            print("archive verify: the archive directory (DIR or --out DIR)", file=sys.stderr)
            return 2
        if not os.path.isdir(target):  # nothing to verify is no clean archive
            import errno

            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), target)
        v = verify(target, check_seq=True, key=key)
        for line in v.lines():
            print(line)
        return 0 if v.archive_ok else 1
    if args.action is not None or not args.out:
        print("archive: --out DIR (or `archive verify DIR`)", file=sys.stderr)
        return 2

    progress = Progress(not args.no_progress, "archived")
    result = archive(args.out, args.topic, args.bootstrap, progress=progress, seal_key=key)
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
    from craps_streams.replay.audit import report_record, run_audit

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
        return EXIT_SECRETS
    from craps_streams.authenticity import keyfile

    report = run_audit(args.history, sl, from_topic=args.from_topic, topic=args.topic, recorded=args.recorded,
                       settlements_topic=args.settlements_topic, bootstrap=args.bootstrap, tags=tags,
                       archive_key=keyfile.archive_key(), group=args.group)
    for line in report.lines(args.limit)[:-1]:
        print(line)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fo:
            json.dump(report_record(report), fo, indent=1, default=str)
    print(report.summary())
    return EXIT_OK if report.clean else EXIT_FINDINGS


def _dev_signer(command: str):
    """The dev floor's table signer (the key ring made at first start), or None with a message."""
    from craps_streams.authenticity import KeyRingError, TableSigner
    from craps_streams.authenticity import keyfile

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
    from craps_streams.authenticity import sign_record

    for record in records:
        try:
            yield sign_record(signer, record)
        except LookupError as e:
            raise SystemExit(f"{command}: {e}: add keys with `craps-streams keys add --tables ...`") from None


def cmd_keys(args) -> int:
    import time as _time

    from craps_streams.authenticity import KeyRingError
    from craps_streams.authenticity import keyfile
    from craps_streams.replay.sources import parse_time

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
    except KeyRingError as e:
        print(f"keys {args.action}: {e}", file=sys.stderr)
        return EXIT_SECRETS
    except ValueError as e:
        print(f"keys {args.action}: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(f"keys {args.action}: {path} now holds {len(ring.keys)} keys")
    return 0


def cmd_simulate(args) -> int:
    from craps_streams.sim.floor import floor_events

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
            return EXIT_SECRETS
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
    from craps_streams.sim.floor import Fault

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

    from craps_streams.ingest.producer import make_producer, paced, produce
    from craps_streams.sim.floor import floor_events

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
            return EXIT_SECRETS
        records = _tagged(records, signer, "simulate")
    producer = make_producer(args.bootstrap, live=True)
    try:
        produce(records, producer, progress=Progress(True, "floor sent", after_s=0.0, every=1, interval_s=0.5))
    finally:
        producer.close()
    return 0


def cmd_produce(args) -> int:
    from craps_streams.ingest.producer import make_producer, produce, records_of

    records = records_of(args.file)
    if not args.no_tags:
        # The dev floor's table controllers: an event without a tag is tagged with its table's key;
        # one that carries a tag is sent as it is (never re-signed: that would launder a forgery).
        signer = _dev_signer("produce")
        if signer is None:
            return EXIT_SECRETS
        records = (r if type(r) is dict and "tag" in r else t
                   for r, t in ((r, next(_tagged((r,), signer, "produce"))) for r in records))
    producer = make_producer(args.bootstrap)
    try:
        n = produce(records, producer, progress=Progress(not args.quiet, "sent", after_s=0.0, every=1, interval_s=0.5))
    finally:
        producer.close()
    if args.quiet:
        print(f"sent {n:,} events", file=sys.stderr)
    return 0


def cmd_worker(args) -> int:
    from craps_streams.app.service import serve

    return serve(web_port=args.web_port, loglevel=args.loglevel)


def cmd_floor(args) -> int:
    import os

    # Before the Faust app is built (at import): its app id carries the instance name.
    if args.instance:
        os.environ["CRAPS_FLOOR_INSTANCE"] = args.instance
    if args.port:
        os.environ["CRAPS_FLOOR_PORT"] = str(args.port)
    from craps_streams.floor.app import serve

    return serve(loglevel=args.loglevel)


def cmd_tail(args) -> int:
    from craps_streams.app.tail import follow

    try:
        for line in follow(args.topics.split(","), args.from_beginning, args.limit, args.bootstrap):
            print(line, flush=True)
    except ValueError as e:
        print(f"tail: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


def cmd_status(args) -> int:
    import os

    from rich.console import Console
    from rich.live import Live

    from craps_streams.metrics.panel import Links, plain_line, render
    from craps_streams.metrics.panel_sources import Sources, take, watch

    prefix = os.environ.get("CRAPS_TOPIC_PREFIX", "")
    metrics = args.metrics_url or [f"http://127.0.0.1:{os.environ.get('CRAPS_WEB_PORT', '6066')}/metrics"]
    links = Links(args.floor_url, tuple(metrics), args.prometheus_url, prefix.rstrip("."), args.note, (
        ("in another terminal", "source .run/floor.env   (this run's topics)"),
        ("follow the stream", "craps-streams tail --topics settlements,alerts,rejections"),
        ("replay the history", "craps-streams replay --from-topic --only none"),
        ("audit the floor", "craps-streams audit --from-topic --settlements-topic"),
        ("the gaming day's report", "craps-streams report --from-topic --pdf --out .run/report"),
    ) if prefix.startswith("craps.run-") else (
        ("follow the stream", "craps-streams tail --topics settlements,alerts,rejections"),
        ("audit the floor", "craps-streams audit --from-topic --settlements-topic")))
    sources = Sources.from_env(os.environ, metrics, args.floor_url, args.prometheus_url)
    console = Console(highlight=False)
    live_panel = console.is_terminal and not args.plain
    if args.once:
        first = take(sources, time.time())
        time.sleep(1.0)  # a second look, for the rates
        snap = take(sources, time.time(), first)
        if live_panel:
            console.print(render(snap, links, console.size.height))
        else:
            print(plain_line(snap), flush=True)
        return 0 if all(s.error is None for s in snap.sources) else 1
    interval = args.interval or (2.0 if live_panel else 10.0)
    try:
        if not live_panel:
            for snap in watch(sources, interval):
                print(plain_line(snap), flush=True)
        with Live(console=console, auto_refresh=False, redirect_stdout=False, redirect_stderr=False) as live:
            for snap in watch(sources, interval):
                live.update(render(snap, links, console.size.height - 1), refresh=True)
    except KeyboardInterrupt:
        pass
    return 0


def cmd_topics(args) -> int:
    from craps_streams.kafka.settings import default_bootstrap
    from craps_streams.kafka.topics import create_topics, describe_topics, internal_health, prune_runs, spec_drift

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
        health = info.get("health")
        # A cluster: the replication factor shown, and a partition short of replicas flagged.
        flags = health.flags() if health else []
        if drift or flags:
            rc = 1
        print(f"  {name:32} partitions={info['partitions']:<3} {shown}"
              + (f" replicas={health.replicas}" if health and health.replicas > 1 else "")
              + ("  DIFFERS FROM SPEC: " + ", ".join(drift) if drift else "")
              + ("  " + ", ".join(flags) if flags else ""))
    for name, health in internal_health(bootstrap, timeout_s=args.timeout).items():
        if health.flags():
            rc = 1
            print(f"  {name:32} replicas={health.replicas}  " + ", ".join(health.flags()))
    return rc


def cmd_transactions(args) -> int:
    from craps_streams.kafka.settings import default_bootstrap
    from craps_streams.kafka.transactions import AbortRefused, abort, open_transactions

    bootstrap = args.bootstrap or default_bootstrap()
    if args.abort:
        topic, sep, partition = args.abort.rpartition(":")
        if not sep or not topic or not partition.isdigit():
            print(f"transactions: --abort takes TOPIC:PARTITION, got {args.abort!r}", file=sys.stderr)
            return 2
        try:
            txn = abort(topic, int(partition), args.producer_id, args.force, bootstrap, args.timeout)
        except AbortRefused as e:
            print(f"transactions: {e}", file=sys.stderr)
            return 1
        print(f"aborted the transaction of producer id {txn.producer_id} (epoch {txn.producer_epoch}, "
              f"{txn.transactional_id or 'no transactional id known'}) on {txn.where} from offset {txn.start_offset}")
        return 0
    older = args.older_than if args.older_than is not None else (60.0 if args.hanging else 0.0)
    found = open_transactions(bootstrap, older, args.prefix or "", args.timeout)
    print(f"transactions open {older:g} s or longer on {bootstrap}: {len(found)}")
    for t in found:
        who = (f"{t.transactional_id} ({t.coordinator_state}, timeout {t.timeout_s:g} s)" if t.transactional_id
               else "no coordinator knows the producer id")
        print(f"  {t.where:32} producer {t.producer_id} epoch {t.producer_epoch}  from offset {t.start_offset}"
              f"  open {t.age_s:.0f} s  {who}" + ("  HANGING: abort it (--abort " + t.where + ")" if t.hanging else ""))
    # --hanging: exit 1 when a transaction is open past the bound (for a check or a cron job).
    return 1 if args.hanging and found else 0


def cmd_odds(args) -> int:
    from craps_streams.odds.report import format_text, odds_records

    if args.format == "json":
        print(json.dumps(odds_records(), indent=2))
    else:
        print(format_text())
    return 0


# ---------------------------------------------------------------- the environment, said in the help

ENV_KAFKA = """\
  CRAPS_KAFKA_BOOTSTRAP  Kafka bootstrap servers, host:port[,host:port] (default 127.0.0.1:9092);
                         --bootstrap overrides it
  CRAPS_TOPIC_PREFIX     prefix of every topic name (default craps.; a `make run` floor's:
                         craps.run-<time>.)
  CRAPS_SECRETS_DIR      the secrets directory (default .secrets at the repository root for the
                         Kafka client configs, .secrets in the current directory for the keys):
                         clients/<role>.properties, table-keys.json, archive-key
  CRAPS_KAFKA_CONFIG     one Kafka client config file for every role instead of
                         $CRAPS_SECRETS_DIR/clients/<role>.properties
  CRAPS_SCHEMA_DIR       the Avro schemas (default: the schemas inside the package)"""
ENV_FLOOR = """\
A `make run` floor writes its CRAPS_TOPIC_PREFIX and CRAPS_APP_ID to .run/floor.env: run
`source .run/floor.env` in a second terminal to work on that floor's topics."""
ENV_APP_ID = """\
  CRAPS_APP_ID           the floor's worker group and transactional id prefix (default craps-streams)"""
ENV_KEYS = """\
  CRAPS_TABLE_KEYS       the table key ring (default $CRAPS_SECRETS_DIR/table-keys.json, else
                         .secrets/table-keys.json in the current directory)"""
ENV_ARCHIVE_KEY = """\
  CRAPS_ARCHIVE_KEY      the archiver's key that seals an archive's chain head (default
                         $CRAPS_SECRETS_DIR/archive-key, else .secrets/archive-key)"""
ENV_RULES = """\
  CRAPS_CORE             the rules core: auto, python or native (default auto: native when built)
  CRAPS_HOLD_TAIL_ALERT, CRAPS_HOLD_CHECK_Z, CRAPS_POSITION_TAIL_ALERT, CRAPS_DICE_SEVEN_H,
  CRAPS_DICE_FACE_H, CRAPS_DICE_CELL_H
                         surveillance thresholds (defaults: docs/operating/cli.md); the worker's
                         and a replay's must agree for the replay to match"""
ENV_WEB = """\
  CRAPS_WEB_HOST         the address the web server listens on (default 127.0.0.1)
  CRAPS_WEB_CONFIG       an exporter-toolkit web config: TLS and basic auth on the web server"""
ENV_WORKER = """\
  CRAPS_WEB_PORT         the default of --web-port (6066)
  CRAPS_FLOOR_URL        where the worker's / redirects (default the floor view)
  CRAPS_SESSION_TIMEOUT_MS (10000), CRAPS_HEARTBEAT_INTERVAL_MS (a fifth of it),
  CRAPS_TRANSACTION_TIMEOUT_MS (60000), CRAPS_MAX_POLL_INTERVAL_MS (120000),
  CRAPS_RETRY_BACKOFF_MS (10)
                         the worker's Kafka timeouts, in milliseconds"""
ENV_FLOOR_VIEW = """\
  CRAPS_FLOOR_PORT       the default of --port (6070)
  CRAPS_FLOOR_INSTANCE   the default of --instance (1)
  CRAPS_FLOOR_DATADIR    the floor view's local state (default a new temporary directory)
  CRAPS_FLOOR_SESSION_TIMEOUT_MS  its Kafka group session timeout (default 10000)"""
ENV_TOPICS = """\
  CRAPS_REPLICATION_FACTOR  replication factor of new topics (default 1)"""
ENV_REPORT = """\
  CRAPS_REPORT_TZ        the default of --tz (America/New_York)
  CRAPS_REPORT_DAY_START the default of --day-start (06:00)
  CRAPS_REPORT_SHIFTS    the default of --shifts (day, swing, grave: 8 hours each)
  CRAPS_CHROMIUM         the browser that prints --pdf (default: chromium on the PATH)
  CRAPS_HOLD_*, CRAPS_POSITION_*, CRAPS_DICE_*
                         the surveillance thresholds in force, recorded in the provenance block"""
EXIT_CODES = """\
exit codes: 0 done, 1 findings, 2 bad argument, 3 unreadable file, 4 missing secrets or key ring,
5 broker unreachable, 6 broker refused (login, TLS, ACLs), 70 internal error, 130 interrupted;
--debug shows the traceback of an error."""


def _epilog(*parts: str) -> str:
    env = [p for p in parts if p.startswith("  ")]
    notes = [p for p in parts if not p.startswith("  ")]
    return "\n\n".join((["environment:\n" + "\n".join(env)] if env else []) + notes + [EXIT_CODES])
def cmd_report(args) -> int:
    import datetime as _dt
    import os
    import shlex
    import subprocess
    from pathlib import Path

    from craps_streams.report import GamingCalendar, Period, ReportSettings, make_report
    from craps_streams.report import files
    from craps_streams.report.calendar import parse_clock, parse_shifts

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
    p.add_argument("--keys", metavar="FILE",
                   help="the table key ring (default: $CRAPS_TABLE_KEYS or .secrets/table-keys.json)")
    p.add_argument("--accept-untagged", action="store_true",
                   help="let events without any tag through (history from before tags); said in the summary")


def _add_slice_options(p) -> None:
    p.add_argument("--tables", metavar="T1,T2", help="comma list of table ids, e.g. T001,T002 (default: every table)")
    p.add_argument("--since", metavar="TIME",
                   help="outputs decided at or after this time (ISO 8601 or epoch ms; default: from the start)")
    p.add_argument("--until", metavar="TIME",
                   help="history fed up to and outputs decided at or before this time (default: to the end)")


def _add_bootstrap(p) -> None:
    p.add_argument("--bootstrap", metavar="HOST:PORT",
                   help="Kafka bootstrap servers (default: $CRAPS_KAFKA_BOOTSTRAP or 127.0.0.1:9092)")


def _add_loglevel(p) -> None:
    p.add_argument("--loglevel", default="warning", choices=("debug", "info", "warning", "error"),
                   help="what the service logs (default warning)")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    from craps_streams.accelerator.rules import chosen

    try:
        number = version("craps-streams")
    except PackageNotFoundError:
        number = "(not installed)"
    chosen_core = chosen()
    core = f"rules core: {chosen_core.name}" + (f" ({chosen_core.note})" if chosen_core.note else "")
    return f"craps-streams {number}\n{core}"


class _VersionAction(argparse.Action):
    """--version: the package's version and which rules core settles (the one `main` chose)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(_version())
        parser.exit()


# Which Kafka role a command's run logs in as (craps_streams/kafka/settings.py), checked before it starts
# (craps_streams.kafka.errors.preflight): None for a run that does not use the broker. The worker and the
# floor view are services that wait for a broker that is not up yet: not checked.
def _broker_role_of(args) -> str | None:
    role = getattr(args, "broker_role", None)
    return role(args) if callable(role) else role


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions wrapped to the terminal, paragraph by paragraph; the environment and exit code
    paragraphs of the epilogs (already laid out in lines) kept as they are."""

    def _fill_text(self, text, width, indent):
        import textwrap

        return "\n\n".join(p if "\n" in p else textwrap.fill(p, width, initial_indent=indent,
                                                               subsequent_indent=indent)
                            for p in text.split("\n\n"))


def build_parser() -> argparse.ArgumentParser:
    fmt = _Formatter
    p = argparse.ArgumentParser(prog="craps-streams", formatter_class=fmt,
                                description="Settle the side wagers of a craps floor from Kafka, exactly once; "
                                            "simulate, replay and audit floors; follow them live.",
                                epilog=_epilog(ENV_KAFKA, ENV_APP_ID, ENV_KEYS, ENV_FLOOR,
                                               "each command's --help names what it reads."))
    p.add_argument("--version", action=_VersionAction, help="print the version and the rules core that settles")
    p.add_argument("--debug", action="store_true",
                   help="on an error, the traceback and the Kafka clients' logs too (default: one or two lines)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser(
        "replay", help="settle a history of table events (JSON Lines, archive, Avro, topic)", formatter_class=fmt,
        description="Settle a history with the rules core. A time slice (--since/--until) feeds every "
                    "event up to --until from the table's TableOpened on (a table's state is its whole "
                    "history) and keeps only the OUTPUTS whose deciding event's ts is in [since, until].",
        epilog=_epilog(ENV_KAFKA, ENV_KEYS, ENV_RULES, ENV_FLOOR))
    r.add_argument("files", nargs="*", metavar="FILE",
                   help="JSON Lines file of table events, - for stdin, an archive directory, or .avro files")
    r.add_argument("--only", metavar="KINDS",
                   help="comma list of settlements,markers,alerts,rejections; none: the summary only "
                        "(default: every output)")
    r.add_argument("--output", "-o", metavar="FILE", help="write outputs here (default: stdout)")
    r.add_argument("--from-topic", action="store_true", help="read the table-events topic (read_committed)")
    r.add_argument("--topic", help="with --from-topic: the topic (default: $CRAPS_TOPIC_PREFIX + table-events)")
    _add_bootstrap(r)
    _add_slice_options(r)
    r.add_argument("--jobs", "-j", type=int, default=1,
                   help="replay an archive directory in this many processes, by partition (same output; default 1)")
    r.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    _add_tag_options(r)
    r.set_defaults(run=cmd_replay, broker_role=lambda a: "audit" if a.from_topic else None)

    a = sub.add_parser("archive", help="copy the table-events topic into Avro container files (resumable); "
                                       "`archive verify DIR` checks an archive and its hash chain",
                       formatter_class=fmt,
                       description="Copy the table-events topic into Avro container files under --out, from where "
                                   "the last run stopped, then verify the archive and its hash chain. "
                                   "`archive verify DIR` only verifies.",
                       epilog=_epilog(ENV_KAFKA, ENV_ARCHIVE_KEY))
    a.add_argument("action", nargs="?", choices=["verify"], help="verify: check DIR only, archive nothing")
    a.add_argument("dir", nargs="?", help="with verify: the archive directory")
    a.add_argument("--out", metavar="DIR", help="the archive directory")
    a.add_argument("--topic", help="the topic (default: $CRAPS_TOPIC_PREFIX + table-events)")
    _add_bootstrap(a)
    a.add_argument("--no-verify", action="store_true", help="skip the verification after archiving")
    a.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    a.set_defaults(run=cmd_archive, broker_role=lambda a: None if a.action == "verify" else "archive")

    au = sub.add_parser(
        "audit", help="replay a history and compare with the recorded settlements", formatter_class=fmt,
        description="Replay a history of table events with the rules core and compare, wager by wager, "
                    "with the settlements that were recorded: missing, extra, duplicated, different "
                    "(each with the table events that explain it). Exit 0 when clean, 1 with findings.\n\n"
                    "A live floor (--from-topic --settlements-topic) is audited on one consistent cut: the "
                    "table events the worker group (--group) has committed, and the settlements it wrote "
                    "for exactly those; the report names the cut, per partition. What was settled after "
                    "it is the next audit's.",
        epilog=_epilog(ENV_KAFKA, ENV_APP_ID, ENV_KEYS, ENV_ARCHIVE_KEY, ENV_RULES, ENV_FLOOR))
    au.add_argument("--history", metavar="PATH", help="an archive directory, a .jsonl file, or .avro file")
    au.add_argument("--from-topic", action="store_true", help="the history is the table-events topic")
    au.add_argument("--topic", help="with --from-topic: the topic (default: $CRAPS_TOPIC_PREFIX + table-events)")
    au.add_argument("--recorded", metavar="FILE", help="recorded settlements as JSON Lines")
    au.add_argument("--settlements-topic", nargs="?", const="", default=None, metavar="TOPIC",
                    help="read the recorded settlements from this topic (default, without TOPIC: "
                         "$CRAPS_TOPIC_PREFIX + settlements)")
    au.add_argument("--group", help="the worker group whose committed offsets cut a live floor "
                                    "(default: $CRAPS_APP_ID or craps-streams)")
    _add_bootstrap(au)
    au.add_argument("--json", dest="json_out", metavar="FILE", help="also write the findings as JSON here")
    au.add_argument("--limit", type=int, default=50, help="findings shown per kind (default 50)")
    _add_slice_options(au)
    _add_tag_options(au)
    au.set_defaults(run=cmd_audit,
                    broker_role=lambda a: "audit" if a.from_topic or a.settlements_topic is not None else None)

    rp = sub.add_parser(
        "report", help="gaming-day report of the side wagers: per table, kind, shift; CSV, JSON, HTML, PDF",
        description="Settle a history (as replay does) and report a gaming day, a shift or a range of gaming "
                    "days: handle, paid, house win, hold against theory, the probability of a result this far "
                    "from theory, month and year to date, exceptions, Rules Submissions, provenance "
                    "(docs/reports.md).",
        formatter_class=fmt, epilog=_epilog(ENV_KAFKA, ENV_KEYS, ENV_RULES, ENV_REPORT, ENV_FLOOR))
    rp.add_argument("files", nargs="*", metavar="HISTORY", help="an archive directory, a .jsonl file, or .avro files")
    rp.add_argument("--from-topic", action="store_true", help="read the table-events topic (read_committed; default: the HISTORY given)")
    rp.add_argument("--topic", help="with --from-topic: the topic (default: the table-events topic)")
    _add_bootstrap(rp)
    rp.add_argument("--day", help="the gaming day YYYY-MM-DD (default: the current gaming day)")
    rp.add_argument("--shift", help="only this shift of --day (default: the whole day)")
    rp.add_argument("--from", dest="first", help="first gaming day of a range (YYYY-MM-DD; default: --day)")
    rp.add_argument("--to", dest="last", help="last gaming day of a range, inclusive (default: --from)")
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
    rp.add_argument("--pdf", action="store_true", help="also print report.pdf with headless Chromium (default: no PDF)")
    rp.add_argument("--no-html", action="store_true", help="CSV and JSON only (default: the HTML page too)")
    rp.add_argument("--no-progress", action="store_true", help="no progress line on stderr (default: shown)")
    _add_tag_options(rp)
    rp.set_defaults(run=cmd_report, broker_role=lambda a: "audit" if a.from_topic else None)

    s = sub.add_parser("simulate", help="write a simulated floor's event history as JSON Lines", formatter_class=fmt,
                       description="A simulated floor: each table's shooters, throws and side wagers as table "
                                   "events, JSON Lines on stdout (or -o), or fed to Kafka live (--live).",
                       epilog=_epilog(ENV_KAFKA, ENV_KEYS, ENV_FLOOR))
    s.add_argument("--tables", type=int, default=10, help="how many tables, T001.. (default 10)")
    s.add_argument("--hours", type=float, default=1.0, help="hours of play per table (default 1)")
    s.add_argument("--seed", type=int, default=1, help="the random seed: same seed, same floor (default 1)")
    s.add_argument("--bad-rate", type=float, default=0.0,
                   help="chance per window of a bad input (default 0: none)")
    s.add_argument("--output", "-o", metavar="FILE", help="write here (default: stdout)")
    s.add_argument("--live", action="store_true", help="feed the floor to Kafka in real time instead")
    s.add_argument("--speed", type=float, default=1.0,
                   help="with --live: times faster than real time (default 1)")
    _add_bootstrap(s)
    s.add_argument("--no-tags", action="store_true",
                   help="write untagged events (history as before tags; rejected unless --accept-untagged)")
    s.add_argument("--fault", help="a table that misbehaves: loaded-dice[:P7] (default 5/36), "
                   "shaker-drift[:RATE] (die 1's six gains RATE an hour, default 0.02), or "
                   "past-posting:POSITION (Hot Roller wagers only when the next throw is not a 7)")
    s.add_argument("--fault-tables", metavar="T1,T2",
                   help="comma list of the tables with the fault (default T001)")
    s.set_defaults(run=cmd_simulate, broker_role=lambda a: "controller" if a.live else None)

    pr = sub.add_parser("produce", help="send JSON Lines or Avro container files of table events to Kafka",
                        formatter_class=fmt, epilog=_epilog(ENV_KAFKA, ENV_KEYS, ENV_FLOOR),
                        description="Send table events to the table-events topic as the table controller, "
                                    "each tagged with its table's key unless it carries a tag.")
    pr.add_argument("file", help="a .jsonl file, an Avro container (.avro), or - for stdin")
    _add_bootstrap(pr)
    pr.add_argument("--quiet", "-q", action="store_true", help="no progress bar; a count at the end")
    pr.add_argument("--no-tags", action="store_true",
                    help="send events as they are (default: tag untagged events with the dev floor's keys)")
    pr.set_defaults(run=cmd_produce, broker_role="controller")

    k = sub.add_parser("keys", help="the table controllers' key ring (tags): init, add, rotate, retire, list",
                       formatter_class=fmt,
                       description="Keys live in $CRAPS_TABLE_KEYS (default .secrets/table-keys.json, 0600, "
                                   "git-ignored). Times are event times (ISO 8601 or epoch ms).",
                       epilog=_epilog(ENV_KEYS, ENV_ARCHIVE_KEY))
    k.add_argument("--path", metavar="FILE",
                   help="the key ring file (default: $CRAPS_TABLE_KEYS or .secrets/table-keys.json)")
    ks = k.add_subparsers(dest="action", required=True, metavar="ACTION")
    ki = ks.add_parser("init", help="make the dev floor's ring if there is none: one key per table",
                       description="Make the dev floor's key ring if there is none (one key per table), and the "
                                   "archiver's key.")
    ki.add_argument("--count", type=int, default=1000, help="tables T001.. (default 1000)")
    ki.add_argument("--tables", metavar="T1,T2", help="comma list of table ids instead of T001..")
    ki.add_argument("--at", metavar="TIME", help="keys valid from this event time (default: the epoch)")
    ks.add_parser("list", help="key ids, tables and validity (never the secrets)",
                  description="Key ids, tables and validity (never the secrets).")
    ka = ks.add_parser("add", help="a new key for each of these tables", description="A new key for each table.")
    ka.add_argument("--tables", required=True, metavar="T1,T2", help="comma list of table ids")
    ka.add_argument("--at", metavar="TIME", help="valid from (default: now)")
    kr = ks.add_parser("rotate", help="a new key per table from --at; the old ones end --grace-s later",
                       description="A new key per table from --at; the old ones end --grace-s later.")
    kr.add_argument("--tables", required=True, metavar="T1,T2", help="comma list of table ids")
    kr.add_argument("--at", metavar="TIME", help="the switch time (default: now)")
    kr.add_argument("--grace-s", type=float, default=60.0,
                    help="seconds the old key still authenticates events after the switch (default 60)")
    kt = ks.add_parser("retire", help="a key authenticates no event stamped at or after --at",
                       description="A key authenticates no event stamped at or after --at.")
    kt.add_argument("key_id", help="the key's id (`keys list`)")
    kt.add_argument("--at", metavar="TIME", help="default: now; a compromised key: from when it may have leaked")
    k.set_defaults(run=cmd_keys)

    w = sub.add_parser("worker", help="run a settling worker against Kafka", formatter_class=fmt,
                       description="Settle the table events of the partitions the worker group gives this "
                                   "worker, exactly once (Kafka transactions), and serve /metrics and /state.",
                       epilog=_epilog(ENV_KAFKA, ENV_APP_ID, ENV_KEYS, ENV_RULES, ENV_WORKER, ENV_WEB, ENV_FLOOR))
    w.add_argument("--web-port", type=int, default=int(os.environ.get("CRAPS_WEB_PORT", 6066)),
                   help="the worker's web server (/metrics, /state); 0 turns it off "
                        "(default: $CRAPS_WEB_PORT or 6066)")
    _add_loglevel(w)
    w.set_defaults(run=cmd_worker)

    fl = sub.add_parser("floor", help="the floor view: every table live, with plots (faust-streaming)",
                        formatter_class=fmt, description="The floor view: every table live, with plots, on a web "
                                                         "page (faust-streaming).",
                        epilog=_epilog(ENV_KAFKA, ENV_APP_ID, ENV_FLOOR_VIEW, ENV_WEB, ENV_FLOOR))
    fl.add_argument("--port", type=int, help="web port (default: $CRAPS_FLOOR_PORT or 6070)")
    fl.add_argument("--instance",
                    help="this view's name, unique per instance (default: $CRAPS_FLOOR_INSTANCE or 1)")
    _add_loglevel(fl)
    fl.set_defaults(run=cmd_floor)

    t = sub.add_parser("tail", help="follow settlements and alerts in the terminal", formatter_class=fmt,
                       description="Follow the floor's outputs in the terminal, one line each, as they commit.",
                       epilog=_epilog(ENV_KAFKA, ENV_FLOOR))
    t.add_argument("--topics", default="settlements,alerts", metavar="KINDS",
                   help="comma list of settlements,markers,alerts,rejections (default settlements,alerts)")
    t.add_argument("--from-beginning", action="store_true",
                   help="start at the topics' first records (default: only what commits from now on)")
    t.add_argument("--limit", type=int, default=0, help="stop after this many records (default 0: follow)")
    _add_bootstrap(t)
    t.set_defaults(run=cmd_tail, broker_role="viewer")

    st = sub.add_parser("status", help="a status panel of the running floor, redrawn in place: tables, "
                        "settlements per second, hold against theory, open alerts, lag, the URLs and commands",
                        description="Reads the workers' /metrics, the floor view's /api/floor and Prometheus' "
                        "HTTP API. On a terminal the panel is redrawn in place; otherwise (a pipe, a log file, "
                        "--plain) one line per interval. Secured web sides are read with CRAPS_SCRAPE_USERNAME, "
                        "CRAPS_SCRAPE_PASSWORD_FILE and CRAPS_SCRAPE_CA_FILE; CRAPS_TOPIC_PREFIX (source "
                        ".run/floor.env) names the run in the title. Exit status with --once: 0 when every "
                        "source answered, 1 otherwise.",
                        formatter_class=fmt, epilog=_epilog(ENV_FLOOR))
    _env = __import__("os").environ
    st.add_argument("--metrics-url", action="append",
                    help="a worker's metrics, repeatable (default http://127.0.0.1:$CRAPS_WEB_PORT/metrics, "
                    "port 6066)")
    st.add_argument("--floor-url", default=_env.get("CRAPS_FLOOR_URL")
                    or f"http://127.0.0.1:{_env.get('CRAPS_FLOOR_PORT', '6070')}/",
                    help="the floor view (default $CRAPS_FLOOR_URL, or http://127.0.0.1:$CRAPS_FLOOR_PORT/, port "
                    "6070); '' to leave it out")
    st.add_argument("--prometheus-url", default=_env.get("CRAPS_PROMETHEUS_URL", "http://127.0.0.1:9090"),
                    help="Prometheus (default $CRAPS_PROMETHEUS_URL or http://127.0.0.1:9090); '' to leave it out")
    st.add_argument("--interval", type=float, help="seconds between two looks (default 2 on a terminal, 10 "
                    "otherwise)")
    st.add_argument("--once", action="store_true", help="one snapshot (two looks a second apart, for the rates)")
    st.add_argument("--plain", action="store_true", help="plain lines even on a terminal")
    st.add_argument("--note", default="Ctrl-C quits", help="the line under the panel (default: Ctrl-C quits)")
    st.set_defaults(run=cmd_status)

    o = sub.add_parser("odds", help="exact outcome distribution, house edge and std dev of every wager",
                       description="The exact outcome distribution, house edge and standard deviation of every "
                                   "side wager and paytable.")
    o.add_argument("--format", choices=("text", "json"), default="text",
                   help="text tables or JSON records (default text)")
    o.set_defaults(run=cmd_odds)

    tp = sub.add_parser("topics", help="create the pipeline topics (idempotent) and list what the broker holds",
                        formatter_class=fmt, epilog=_epilog(ENV_KAFKA, ENV_APP_ID, ENV_TOPICS, ENV_FLOOR),
                        description="As the administrator: create the floor's topics that are missing and grant "
                                    "the floor's ACLs, then list the topics with their settings (exit 1 when one "
                                    "differs from its spec).")
    _add_bootstrap(tp)
    tp.add_argument("--list", action="store_true", help="only print the existing topics")
    tp.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the broker (default 30)")
    tp.add_argument("--prune-runs", type=int, metavar="N",
                    help="delete the topics of earlier `make run` floors (named craps.run-<time>.*), keeping "
                         "those of the newest N runs; no other topic is touched")
    tp.set_defaults(run=cmd_topics, broker_role="admin")

    tx = sub.add_parser("transactions", help="transactions open on the partitions (readers wait behind them); "
                                             "abort a hanging one", formatter_class=fmt,
                        epilog=_epilog(ENV_KAFKA, ENV_FLOOR),
                        description="As the administrator: list the transactions open on the floor's partitions "
                                    "(coordinator state, age, hanging or not), or end one with an abort marker. "
                                    "A read_committed reader stops at the first open transaction of a partition "
                                    "(docs/operating/cluster.md, \"Stalled readers\").")
    _add_bootstrap(tx)
    tx.add_argument("--hanging", action="store_true",
                    help="only those open --older-than (default 60 s) or longer; exit 1 if there are any (default: every open one)")
    tx.add_argument("--older-than", type=float, metavar="SECONDS", help="open at least this long (default 0)")
    tx.add_argument("--prefix", help="only topics whose name starts with this (default every topic)")
    tx.add_argument("--abort", metavar="TOPIC:PARTITION", help="end the transaction open there (an abort marker; default: list only)")
    tx.add_argument("--producer-id", type=int, help="with --abort: the producer's, when several are open there (default: the one open)")
    tx.add_argument("--force", action="store_true",
                    help="with --abort: also a transaction its coordinator still holds open (default: refused)")
    tx.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the broker (default 30)")
    tx.set_defaults(run=cmd_transactions, broker_role="admin")
    return p


def _debug_everywhere(parser: argparse.ArgumentParser) -> None:
    """--debug after the command too (`craps-streams tail --debug`), not only before it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                if not any("--debug" in a.option_strings for a in sub._actions):
                    sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                     help="on an error, the traceback and the Kafka clients' logs too")
                _debug_everywhere(sub)


# ---------------------------------------------------------------- errors: one or two lines and a code

def _file_problem(e: OSError) -> str:
    name = e.filename if e.filename is not None else ""
    what = e.strerror or str(e)
    if isinstance(e, FileNotFoundError):
        return f"{name}: no such file or directory"
    if isinstance(e, IsADirectoryError):
        return f"{name}: a directory, not a file"
    if isinstance(e, PermissionError):
        return f"{name}: permission denied"
    return f"{name}: {what}"


def explain_error(e: BaseException) -> tuple[int, str]:
    """(exit code, one or two lines) for an exception a command raised."""
    from craps_streams.authenticity import KeyRingError
    from craps_streams.kafka.errors import BrokerRefused, BrokerUnreachable, broker_problem
    from craps_streams.kafka.security import SecurityConfigError

    problem = broker_problem(e)
    if isinstance(problem, BrokerUnreachable):
        return EXIT_BROKER_UNREACHABLE, (
            f"cannot reach the Kafka broker: {problem}\n"
            "  start it (`make kafka-up`, or `make run` for a whole floor), or point --bootstrap or "
            "CRAPS_KAFKA_BOOTSTRAP at it")
    if isinstance(problem, BrokerRefused):
        return EXIT_BROKER_REFUSED, (
            f"{problem}\n  the client configs and logins are made by `infra/kafka/kafka.sh up`; "
            "`python -m craps_streams.kafka.access rotate ROLE` gives a role a new password, "
            "`craps-streams topics` grants a floor's ACLs")
    if isinstance(e, SecurityConfigError):
        return EXIT_SECRETS, str(e)
    if isinstance(e, KeyRingError):
        return EXIT_SECRETS, f"{e}\n  the key ring: $CRAPS_TABLE_KEYS, else .secrets/table-keys.json"
    if isinstance(e, TimeoutError):
        return EXIT_BROKER_UNREACHABLE, f"timed out waiting for the Kafka broker: {e}"
    if isinstance(e, OSError) and e.filename is not None:
        return EXIT_FILE, _file_problem(e)
    if isinstance(e, ValueError):
        return EXIT_USAGE, str(e)
    if isinstance(e, OSError):
        return EXIT_FILE, str(e)
    return EXIT_INTERNAL, (f"internal error: {type(e).__name__}: {e}\n"
                           "  run it again with --debug for the traceback, and report it")


def _quiet_clients() -> None:
    """The Kafka client libraries log their retries as warnings; a command says what went wrong once."""
    for name in ("kafka", "aiokafka"):
        logging.getLogger(name).addHandler(logging.NullHandler())
        logging.getLogger(name).propagate = False


def _choose_core() -> str | None:
    """Chooses the rules core for this run from CRAPS_CORE (craps_streams/accelerator/rules.py
    `rules_core`: auto when unset): read here once, before anything settles. The problem, in one
    line, when the choice cannot be had (CRAPS_CORE=native without a usable accelerator)."""
    from craps_streams.accelerator.rules import CHOICES, choose

    choice = os.environ.get("CRAPS_CORE") or "auto"
    if choice not in CHOICES:
        return f"CRAPS_CORE={choice!r}: one of {', '.join(CHOICES)}"
    try:
        choose(choice)
    except RuntimeError as e:
        return f"CRAPS_CORE=native: {e}"
    return None


def main(argv: list[str] | None = None) -> int:
    problem = _choose_core()
    if problem is not None:
        print(f"craps-streams: {problem}", file=sys.stderr)
        return EXIT_USAGE
    parser = build_parser()
    _debug_everywhere(parser)
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    if getattr(args, "broker_role", None) is not None:  # not the services (worker, floor): --loglevel
        if debug:
            logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        else:
            _quiet_clients()
    try:
        role = _broker_role_of(args)
        if role is not None:
            from craps_streams.kafka.errors import preflight

            preflight(role, getattr(args, "bootstrap", None))
        return args.run(args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # stdout closed by its reader (`| head`): nothing more to say, to anybody
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as e:  # noqa: BLE001 - every error answered in one or two lines
        if debug:
            import traceback

            traceback.print_exc()
        code, message = explain_error(e)
        print(f"craps-streams {args.command}: {message}", file=sys.stderr)
        return code


if __name__ == "__main__":
    sys.exit(main())
