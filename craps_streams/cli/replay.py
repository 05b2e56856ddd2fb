"""`replay`, `archive`, `audit`: settle a history again, keep the table events, check the floor."""
from __future__ import annotations

import json
import os
import sys

from craps_streams.cli.errors import EXIT_FINDINGS, EXIT_OK, EXIT_SECRETS, CommandError, note
from craps_streams.cli.history import format_summary, open_out, slice_of, tag_check
from craps_streams.cli.options import (APP_ID, ARCHIVE_KEY, KAFKA, KEYS, RULES, Formatter, add_bootstrap,
                                       add_slice_options, add_tag_options, epilog)
from craps_streams.cli.progress import Progress


def cmd_replay(args, settings) -> int:
    from craps_streams.replay.run import ReplayRun, batch_gc, wanted_types
    from craps_streams.replay.sources import history_kind, open_history_batches

    try:
        wanted = wanted_types(args.only)
    except ValueError as e:
        raise CommandError(f"--only: {e}") from None
    if not args.files and not args.from_topic:
        raise CommandError("give a history (FILE, -, an archive DIR, .avro files) or --from-topic")
    if args.files and args.from_topic:
        raise CommandError("either files or --from-topic, not both")
    if args.jobs < 1:
        raise CommandError(f"--jobs must be 1 or more, got {args.jobs}")
    sl = slice_of(args)
    tags = tag_check(args, settings)
    spec, extra = (args.files[0] if args.files else None), args.files[1:]
    kind = history_kind(spec, from_topic=args.from_topic, extra_files=extra)
    if args.jobs > 1 and kind == "archive":
        return _replay_parallel(args, settings, spec, sl, wanted, tags)
    if args.jobs > 1:
        note(args, "--jobs splits an archive directory by partition; this history is replayed in one process")
    history = open_history_batches(spec, from_topic=args.from_topic, topic=args.topic or settings.topics.table_events,
                                   bootstrap=args.bootstrap, sl=sl, extra_files=extra)
    first = next(history, None)  # opens the source: a missing file fails here (exit 3, in main)
    out = open_out(args.output)
    progress = Progress(not args.no_progress)
    run = ReplayRun(sl, wanted, out, progress.tick, tags=tags, thresholds=settings.thresholds)
    if first is not None:
        import itertools

        with batch_gc():
            run.feed(itertools.chain((first,), history))
    progress.done()
    if out is sys.stdout:
        out.flush()
    else:
        out.close()
    print(format_summary(run.tally()), file=sys.stderr)
    args.outputs_closed = True  # nothing left to write or to wait for: the program may end at once (cli.console)
    return 0


def _replay_parallel(args, settings, spec: str, sl, wanted, tags) -> int:
    from craps_streams.replay.parallel import replay_archive_parallel

    out = open_out(args.output)
    progress = Progress(not args.no_progress)
    result = replay_archive_parallel(spec, args.jobs, sl=sl, wanted=wanted, out=out, progress=progress,
                                     tags=tags, thresholds=settings.thresholds)
    progress.done()
    out.flush()
    print(format_summary(result.tally), file=sys.stderr)
    return 0


def cmd_archive(args, settings) -> int:
    from craps_streams.archive import archive, verify
    from craps_streams.authenticity import KeyRingError
    from craps_streams.authenticity import keyfile

    try:
        key = keyfile.archive_key(settings.archive_key_path)  # seals the chain head; None: unsealed
    except KeyRingError as e:
        raise CommandError(str(e), EXIT_SECRETS) from None
    if args.jobs < 1:
        raise CommandError(f"--jobs must be 1 or more, got {args.jobs}")
    if args.action == "verify":
        target = args.dir or args.out
        if not target:
            raise CommandError("the archive directory (DIR or --out DIR)")
        if not os.path.isdir(target):  # nothing to verify is no clean archive
            import errno

            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), target)
        v = verify(target, check_seq=True, key=key, jobs=args.jobs)
        for line in v.lines():
            print(line)
        return 0 if v.archive_ok else 1
    if args.action is not None or not args.out:
        raise CommandError("--out DIR (or `archive verify DIR`)")

    progress = Progress(not args.no_progress, "archived")
    result = archive(args.out, args.topic or settings.topics.table_events, args.bootstrap, progress=progress,
                     seal_key=key)
    progress.done()
    print(f"archived {result.archived:,} messages ({result.undecodable:,} undecodable, kept raw) "
          f"into {len(result.files)} files under {args.out}", file=sys.stderr)
    if args.no_verify:
        return 0
    v = verify(args.out, check_seq=True, key=key, jobs=args.jobs)
    for line in v.lines():
        print(line, file=sys.stderr)
    return 0 if v.archive_ok else 1


def cmd_audit(args, settings) -> int:
    from craps_streams.authenticity import keyfile
    from craps_streams.replay.audit import report_record, run_audit

    if not args.history and not args.from_topic:
        raise CommandError("--history (an archive DIR, a .jsonl file) or --from-topic")
    if not args.recorded and args.settlements_topic is None:
        raise CommandError("--recorded settlements.jsonl or --settlements-topic")
    if args.jobs < 1:
        raise CommandError(f"--jobs must be 1 or more, got {args.jobs}")
    sl = slice_of(args)
    tags = tag_check(args, settings)
    report = run_audit(args.history, sl, from_topic=args.from_topic, topic=args.topic, recorded=args.recorded,
                       settlements_topic=args.settlements_topic, bootstrap=args.bootstrap, tags=tags,
                       archive_key=keyfile.archive_key(settings.archive_key_path),
                       group=args.group or settings.app_id, topics=settings.topics, thresholds=settings.thresholds,
                       jobs=args.jobs)
    for line in report.lines(args.limit)[:-1]:
        print(line)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fo:
            json.dump(report_record(report), fo, indent=1, default=str)
    print(report.summary())
    return EXIT_OK if report.clean else EXIT_FINDINGS


def register(sub) -> None:
    r = sub.add_parser(
        "replay", help="settle a history of table events (JSON Lines, archive, Avro, topic)", formatter_class=Formatter,
        description="Settle a history with the rules core. A time slice (--since/--until) feeds every "
                    "event up to --until from the table's TableOpened on (a table's state is its whole "
                    "history) and keeps only the OUTPUTS whose deciding event's ts is in [since, until].",
        epilog=epilog(KAFKA, KEYS, RULES))
    r.add_argument("files", nargs="*", metavar="FILE",
                   help="JSON Lines file of table events, - for stdin, an archive directory, or .avro files")
    r.add_argument("--only", metavar="KINDS",
                   help="comma list of settlements,markers,alerts,rejections; none: the summary only "
                        "(default: every output)")
    r.add_argument("--output", "-o", metavar="FILE", help="write outputs here (default: stdout)")
    r.add_argument("--from-topic", action="store_true", help="read the table-events topic (read_committed)")
    r.add_argument("--topic", help="with --from-topic: the topic (default: $CRAPS_TOPIC_PREFIX + table-events)")
    add_bootstrap(r)
    add_slice_options(r)
    r.add_argument("--jobs", "-j", type=int, default=1,
                   help="replay an archive directory in this many processes, by partition (same output; default 1)")
    r.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    add_tag_options(r)
    r.set_defaults(run=cmd_replay, broker_role=lambda a: "audit" if a.from_topic else None)

    a = sub.add_parser("archive", help="copy the table-events topic into Avro container files (resumable); "
                                       "`archive verify DIR` checks an archive and its hash chain",
                       formatter_class=Formatter,
                       description="Copy the table-events topic into Avro container files under --out, from where "
                                   "the last run stopped, then verify the archive and its hash chain. "
                                   "`archive verify DIR` only verifies.",
                       epilog=epilog(KAFKA, ARCHIVE_KEY))
    a.add_argument("action", nargs="?", choices=["verify"], help="verify: check DIR only, archive nothing")
    a.add_argument("dir", nargs="?", help="with verify: the archive directory")
    a.add_argument("--out", metavar="DIR", help="the archive directory")
    a.add_argument("--topic", help="the topic (default: $CRAPS_TOPIC_PREFIX + table-events)")
    add_bootstrap(a)
    a.add_argument("--no-verify", action="store_true", help="skip the verification after archiving")
    a.add_argument("--jobs", "-j", type=int, default=1,
                   help="walk the tables' seqs in this many processes, by partition (the same findings; default 1)")
    a.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    a.set_defaults(run=cmd_archive, broker_role=lambda a: None if a.action == "verify" else "archive")

    au = sub.add_parser(
        "audit", help="replay a history and compare with the recorded settlements", formatter_class=Formatter,
        description="Replay a history of table events with the rules core and compare, wager by wager, "
                    "with the settlements that were recorded: missing, extra, duplicated, different "
                    "(each with the table events that explain it). Exit 0 when clean, 1 with findings.\n\n"
                    "An archive is checked as `archive verify` checks it, its hash chain, its seal and its "
                    "index's offsets (each archived once), and a finding there is the audit's; the tables' "
                    "seqs are the replay's to see (a duplicate counted, a gap alerted).\n\n"
                    "A live floor (--from-topic --settlements-topic) is audited on one consistent cut: the "
                    "table events the worker group (--group) has committed, and the settlements it wrote "
                    "for exactly those; the report names the cut, per partition. What was settled after "
                    "it is the next audit's.",
        epilog=epilog(KAFKA, APP_ID, KEYS, ARCHIVE_KEY, RULES))
    au.add_argument("--history", metavar="PATH", help="an archive directory, a .jsonl file, or .avro file")
    au.add_argument("--from-topic", action="store_true", help="the history is the table-events topic")
    au.add_argument("--topic", help="with --from-topic: the topic (default: $CRAPS_TOPIC_PREFIX + table-events)")
    au.add_argument("--recorded", metavar="FILE", help="recorded settlements as JSON Lines")
    au.add_argument("--settlements-topic", nargs="?", const="", default=None, metavar="TOPIC",
                    help="read the recorded settlements from this topic (default, without TOPIC: "
                         "$CRAPS_TOPIC_PREFIX + settlements)")
    au.add_argument("--group", help="the worker group whose committed offsets cut a live floor "
                                    "(default: $CRAPS_APP_ID or craps-streams)")
    add_bootstrap(au)
    au.add_argument("--json", dest="json_out", metavar="FILE", help="also write the findings as JSON here")
    au.add_argument("--limit", type=int, default=50, help="findings shown per kind (default 50)")
    au.add_argument("--jobs", "-j", type=int, default=1,
                    help="a history long enough to be compared in buckets on disk: its recorded settlements "
                         "read by a second process while it is settled, its buckets compared in this many "
                         "processes (the same report; default 1)")
    add_slice_options(au)
    add_tag_options(au)
    au.set_defaults(run=cmd_audit,
                    broker_role=lambda a: "audit" if a.from_topic or a.settlements_topic is not None else None)
