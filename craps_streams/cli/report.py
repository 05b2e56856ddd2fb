"""`report`: the gaming day's report of the side wagers (CSV, JSON, HTML, PDF)."""
from __future__ import annotations

import sys
import time

from craps_streams.cli.errors import EXIT_FILE, CommandError, note
from craps_streams.cli.history import dollars, tag_check
from craps_streams.cli.options import KAFKA, KEYS, REPORT, RULES, Formatter, add_bootstrap, add_tag_options, epilog
from craps_streams.cli.progress import Progress


def _calendar_and_period(args, settings):
    import datetime as _dt

    from craps_streams.report import GamingCalendar, Period
    from craps_streams.report.calendar import parse_clock, parse_shifts

    start = parse_clock(args.day_start or settings.report_day_start)
    shifts_spec = args.shifts or settings.report_shifts
    shifts = parse_shifts(shifts_spec) if shifts_spec else \
        tuple((n, parse_clock(f"{(start.hour + 8 * i) % 24:02d}:{start.minute:02d}"))
              for i, n in enumerate(("day", "swing", "grave")))
    cal = GamingCalendar(args.tz or settings.report_tz, start, shifts)
    if args.day and (args.first or args.last):
        raise ValueError("--day, or --from/--to, not both")
    if args.first or args.last:
        period = Period(_dt.date.fromisoformat(args.first or args.last), _dt.date.fromisoformat(args.last or args.first))
    else:
        day = _dt.date.fromisoformat(args.day) if args.day else cal.gaming_day(time.time_ns() // 1_000_000)
        period = Period(day, day, args.shift)
    if period.shift:
        cal.shift_bounds(period.first, period.shift)  # an unknown shift fails here
    return cal, period


def cmd_report(args, settings) -> int:
    import shlex
    import subprocess
    from pathlib import Path

    from craps_streams.report import ReportSettings, make_report
    from craps_streams.report import files
    from craps_streams.report.days import TemporaryFilesError
    from craps_streams.surveillance import HoldWatch

    if bool(args.files) + bool(args.from_topic) + (args.from_ledger is not None) != 1:
        raise CommandError("give a history (an archive DIR, a .jsonl file, .avro files), --from-topic or --from-ledger")
    try:
        cal, period = _calendar_and_period(args, settings)
        if not 0 < args.investigate_at < 1:
            raise ValueError(f"--investigate-at is a probability between 0 and 1, e.g. 0.05; got {args.investigate_at:g}")
        tables = frozenset(t.strip() for t in args.tables.split(",") if t.strip()) if args.tables else None
    except ValueError as e:
        raise CommandError(str(e)) from None
    if args.jobs < 1:
        raise CommandError(f"--jobs must be 1 or more, got {args.jobs}")
    report_settings = ReportSettings(cal, period, args.investigate_at, tables)
    stages: dict = {}
    audited = None
    if args.from_ledger is not None:
        if args.audit:
            raise CommandError("--audit audits a history of table events, not the ledger")
        report = _from_ledger(args.from_ledger or settings.ledger_db, report_settings, settings)
    else:
        tags = tag_check(args, settings)
        progress = Progress(not args.no_progress, "reported")
        spec, extra = (args.files[0] if args.files else None), args.files[1:]
        riding = _audit_riding(args, tables)
        try:
            report = make_report(report_settings, spec, from_topic=args.from_topic,
                                 topic=args.topic or (settings.topics.table_events if args.from_topic else None),
                                 bootstrap=args.bootstrap, extra_files=extra, tags=tags, ring=tags.ring,
                                 tick=progress.tick, thresholds=settings.thresholds_set(),
                                 watch=HoldWatch(settings.thresholds), jobs=args.jobs, stages=stages, audit=riding)
        except (OSError, ValueError, TimeoutError) as e:
            if riding is not None:
                riding.close()
            if isinstance(e, TemporaryFilesError):
                raise CommandError(e.strerror, EXIT_FILE) from None
            raise CommandError(f"cannot read {' '.join(args.files) or 'the topic'}: "
                               f"{getattr(e, 'strerror', None) or e}") from None
        progress.done()
        if riding is not None:
            try:
                audited = _audit(args, settings, spec, riding)
            finally:
                riding.close()
            report["audit"] = {"recorded": args.audit, "summary": audited.summary(), "clean": audited.clean,
                               "replayed": audited.replayed, "recorded_settlements": audited.recorded,
                               "findings": len(audited.findings)}
    report["provenance"]["command"] = "craps-streams " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    clock = time.perf_counter
    t = clock()
    written = files.write_csv(report, out)
    written.append(files.write_json(report, out / "report.json"))
    stages["files"] = clock() - t
    failed = None
    if not args.no_html:
        t = clock()
        html = files.write_html(report, out / "report.html")
        stages["plots"] = clock() - t
        written.append(html)
        if args.pdf:
            t = clock()
            try:
                written.append(files.print_pdf(html, out / "report.pdf", chromium=settings.chromium))
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                failed = e
            stages["pdf"] = clock() - t
    if not args.no_progress and args.from_ledger is None:  # the ledger's report reads no events
        print(stages_line(report["provenance"]["history"]["events_read"], stages), file=sys.stderr)
    if failed is not None:
        note(args, f"no PDF: {failed}")
        return 1
    print(summary_line(report))
    for path in written:
        print(f"  {path}")
    if audited is not None:
        for line in audited.lines():
            print(line)
        return 0 if audited.clean else 1
    return 0


def _audit_riding(args, tables):
    """The audit's quick pass for the report's pass to carry (`--audit FILE`), or None."""
    if not args.audit:
        return None
    if args.from_topic or not args.files or args.files[0] == "-" or len(args.files) > 1:
        raise CommandError("--audit audits one history read twice at most: an archive DIR or a file, not "
                           "--from-topic, stdin or several files (`craps-streams audit` audits those)")
    if tables is not None:
        raise CommandError("--audit audits every table's settlements: not with --tables")
    from craps_streams.replay.agreement import PassAudit

    try:
        return PassAudit(args.audit)
    except OSError as e:
        raise CommandError(f"cannot read {args.audit}: {e.strerror or e}") from None


def _audit(args, settings, spec: str, riding):
    """The audit of the report's history against `--audit FILE`, after the report's pass."""
    from craps_streams.authenticity import keyfile
    from craps_streams.replay.audit import audit_after_pass

    try:
        return audit_after_pass(spec, riding, recorded=args.audit, tags=tag_check(args, settings),
                                archive_key=keyfile.archive_key(settings.archive_key_path),
                                thresholds=settings.thresholds, jobs=args.jobs)
    except (OSError, ValueError) as e:
        raise CommandError(f"cannot audit {spec} against {args.audit}: {getattr(e, 'strerror', None) or e}") from None


def _from_ledger(url: str, report_settings, settings) -> dict:
    """The report from the ledger's database at `url` (craps_streams/ledger/report.py)."""
    from craps_streams.ledger.report import report_from_url
    from craps_streams.report.provenance import key_ring_block, settings_block, software

    provenance = {"key_ring": key_ring_block(None), "software": software(),
                  "settings": settings_block(report_settings, settings.thresholds_set()), "command": None}
    try:
        return report_from_url(url, report_settings, provenance)
    except ValueError as e:
        raise CommandError(str(e)) from None


def stages_line(events: int, stages: dict) -> str:
    """Where the report's time went: each stage's seconds (`craps_streams.report.STAGES`, in order)."""
    from craps_streams.report import STAGES

    total = sum(stages.values())
    parts = ", ".join(f"{words} {stages[name]:.2f} s" for name, words in STAGES.items() if name in stages)
    return f"report of {events:,} events in {total:.2f} s: {parts}"


def plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def summary_line(report: dict) -> str:
    """The report in one line: the floor's handle and house win, what is flagged, the exceptions."""
    # A range's own line is "period"; a day's or a shift's is its only line besides the to-date ones.
    totals = {row["scope"]: row for row in report["floor"] if row["wager"] == "all"}
    total = totals.get("period") or next(row for scope, row in totals.items()
                                         if scope not in ("month_to_date", "year_to_date"))
    flagged = sum(1 for row in report["kinds"] if row["investigate"])
    tables = len({row["table_id"] for row in report["tables"]})
    exceptions = report["exceptions"]
    return (f"{report['title']}: handle {dollars(total['handle_cents'])}, house win "
            f"{dollars(total['house_win_cents'])} over {plural(tables, 'table', 'tables')}; "
            f"{plural(flagged, 'line', 'lines')} flagged for investigation; "
            f"{plural(exceptions['rejections']['count'], 'rejection', 'rejections')}, "
            f"{plural(exceptions['alerts']['count'], 'alert', 'alerts')}")


def register(sub) -> None:
    rp = sub.add_parser(
        "report", help="gaming-day report of the side wagers: per table, kind, shift; CSV, JSON, HTML, PDF",
        description="Settle a history (as replay does) and report a gaming day, a shift or a range of gaming "
                    "days: handle, paid, house win, hold against theory, the probability of a result this far "
                    "from theory, month and year to date, exceptions, Rules Submissions, provenance "
                    "(docs/reports.md). The surveillance thresholds set in the environment are recorded in "
                    "the provenance block.",
        formatter_class=Formatter, epilog=epilog(KAFKA, KEYS, RULES, REPORT))
    rp.add_argument("files", nargs="*", metavar="HISTORY", help="an archive directory, a .jsonl file, or .avro files")
    rp.add_argument("--from-topic", action="store_true", help="read the table-events topic (read_committed; default: the HISTORY given)")
    rp.add_argument("--from-ledger", nargs="?", const="", metavar="URL",
                    help="sum the ledger's rows instead of settling a history (docs/operating/ledger.md); URL "
                         "default $CRAPS_LEDGER_DB or sqlite:///.run/ledger.db")
    rp.add_argument("--topic", help="with --from-topic: the topic (default: the table-events topic)")
    add_bootstrap(rp)
    rp.add_argument("--day", help="the gaming day YYYY-MM-DD (default: the current gaming day)")
    rp.add_argument("--shift", help="only this shift of --day (default: the whole day)")
    rp.add_argument("--from", dest="first", help="first gaming day of a range (YYYY-MM-DD; default: --day)")
    rp.add_argument("--to", dest="last", help="last gaming day of a range, inclusive (default: --from)")
    rp.add_argument("--tz", help="the casino's IANA time zone (default $CRAPS_REPORT_TZ or America/New_York)")
    rp.add_argument("--day-start", help="local time the gaming day starts (default $CRAPS_REPORT_DAY_START or 06:00)")
    rp.add_argument("--shifts", help="NAME=HH:MM,... (default $CRAPS_REPORT_SHIFTS, else day, swing, grave, "
                                     "8 hours each from --day-start)")
    rp.add_argument("--investigate-at", type=float, default=0.05,
                    help="flag a line whose result is this improbable or more, two-sided (default 0.05)")
    rp.add_argument("--tables", help="comma list of table ids (default: every table)")
    rp.add_argument("--out", "-o", default="report", help="directory for the files (default ./report)")
    rp.add_argument("--pdf", action="store_true", help="also print report.pdf with headless Chromium (default: no PDF)")
    rp.add_argument("--no-html", action="store_true", help="CSV and JSON only (default: the HTML page too)")
    rp.add_argument("--no-progress", action="store_true",
                    help="no progress line on stderr, nor the line of where the time went (default: shown)")
    rp.add_argument("--jobs", "-j", type=int, default=1,
                    help="processes for an archive's pass (by partition) and the lines' tails (default 1); the same report")
    rp.add_argument("--audit", metavar="FILE",
                    help="also audit the history against the settlements recorded in FILE (JSON Lines), as "
                         "`audit --history HISTORY --recorded FILE` does, its quick pass riding on the report's "
                         "(exit 1 on findings)")
    add_tag_options(rp)
    rp.set_defaults(run=cmd_report, broker_role=lambda a: "audit" if a.from_topic else None)
