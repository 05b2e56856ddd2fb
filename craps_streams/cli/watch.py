"""`tail`, `status`: follow the floor's outputs, and its status panel."""
from __future__ import annotations

import sys

import time

from craps_streams.cli.errors import EXIT_BROKER_UNREACHABLE, EXIT_FINDINGS, EXIT_OK, CommandError
from craps_streams.cli.options import KAFKA, STATUS, Formatter, add_bootstrap, epilog


def cmd_tail(args, settings) -> int:
    from craps_streams.app.tail import follow

    try:
        for line in follow(args.topics.split(","), args.from_beginning, args.limit, args.bootstrap,
                           topics=settings.topics,
                           notice=lambda message: print(f"craps-streams tail: {message}", file=sys.stderr, flush=True),
                           broker_wait_s=args.broker_wait):
            print(line, flush=True)
    except ValueError as e:
        raise CommandError(str(e)) from None
    except KeyboardInterrupt:
        pass
    return 0


def once_code(snap) -> int:
    """`status --once`'s exit code: 0 every source answered, 1 some did not, 5 none did (nothing is up)."""
    answered = [s.error is None for s in snap.sources]
    if all(answered):
        return EXIT_OK
    return EXIT_FINDINGS if any(answered) else EXIT_BROKER_UNREACHABLE


def cmd_status(args, settings) -> int:
    from rich.console import Console
    from rich.live import Live

    from craps_streams.metrics.panel import Links, plain_line, render
    from craps_streams.metrics.panel_sources import Sources, take, watch

    # The run's name in the title only when a floor's prefix was given (source .run/floor.env).
    prefix = settings.topic_prefix if "topic_prefix" in settings.explicit else ""
    metrics = args.metrics_url or [f"http://127.0.0.1:{settings.web_port}/metrics"]
    floor_url = args.floor_url if args.floor_url is not None else \
        settings.floor_url or f"http://127.0.0.1:{settings.floor_port}/"
    prometheus_url = args.prometheus_url if args.prometheus_url is not None else settings.prometheus_url
    links = Links(floor_url, tuple(metrics), prometheus_url, prefix.rstrip("."), args.note, (
        ("in another terminal", "source .run/floor.env   (this run's topics)"),
        ("follow the stream", "craps-streams tail --topics settlements,alerts,rejections"),
        ("replay the history", "craps-streams replay --from-topic --only none"),
        ("audit the floor", "craps-streams audit --from-topic --settlements-topic"),
        ("the gaming day's report", "craps-streams report --from-topic --pdf --out .run/report"),
    ) if prefix.startswith("craps.run-") else (
        ("follow the stream", "craps-streams tail --topics settlements,alerts,rejections"),
        ("audit the floor", "craps-streams audit --from-topic --settlements-topic")))
    sources = Sources.with_credentials(metrics, floor_url, prometheus_url, username=settings.scrape_username,
                                       password_file=settings.scrape_password_file, ca_file=settings.scrape_ca_file,
                                       ledger_url=args.ledger_url)
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
        return once_code(snap)
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


def register(sub) -> None:
    t = sub.add_parser("tail", help="follow settlements and alerts in the terminal", formatter_class=Formatter,
                       description="Follow the floor's outputs in the terminal, one line each, as they commit.",
                       epilog=epilog(KAFKA))
    t.add_argument("--topics", default="settlements,alerts", metavar="KINDS",
                   help="comma list of settlements,markers,alerts,rejections (default settlements,alerts)")
    t.add_argument("--from-beginning", action="store_true",
                   help="start at the topics' first records (default: only what commits from now on)")
    t.add_argument("--limit", type=int, default=0, help="stop after this many records (default 0: follow)")
    t.add_argument("--broker-wait", type=float, default=30.0, metavar="S",
                   help="when the broker goes away: say so after 3 s, wait this long for it, then exit 5 (default 30)")
    add_bootstrap(t)
    t.set_defaults(run=cmd_tail, broker_role="viewer")

    st = sub.add_parser("status", help="a status panel of the running floor, redrawn in place: tables, "
                        "settlements per second, hold against theory, open alerts, lag, the URLs and commands",
                        description="Reads the workers' /metrics, the floor view's /api/floor, Prometheus' "
                        "HTTP API and, with --ledger-url, the ledger's /metrics (its lag behind the settlements). On a terminal the panel is redrawn in place; otherwise (a pipe, a log file, "
                        "--plain) one line per interval. Secured web sides are read with CRAPS_SCRAPE_USERNAME, "
                        "CRAPS_SCRAPE_PASSWORD_FILE and CRAPS_SCRAPE_CA_FILE; CRAPS_TOPIC_PREFIX (source "
                        ".run/floor.env) names the run in the title. Exit status with --once: 0 when every "
                        "source answered, 1 when some did not, 5 when none did (nothing is up).",
                        formatter_class=Formatter, epilog=epilog(STATUS))
    st.add_argument("--metrics-url", action="append",
                    help="a worker's metrics, repeatable (default http://127.0.0.1:$CRAPS_WEB_PORT/metrics, "
                    "port 6066)")
    st.add_argument("--floor-url",
                    help="the floor view (default $CRAPS_FLOOR_URL, or http://127.0.0.1:$CRAPS_FLOOR_PORT/, port "
                    "6070); '' to leave it out")
    st.add_argument("--prometheus-url",
                    help="Prometheus (default $CRAPS_PROMETHEUS_URL or http://127.0.0.1:9090); '' to leave it out")
    st.add_argument("--ledger-url", default="",
                    help="the ledger's metrics, for its lag behind the settlements (make run: "
                    "http://127.0.0.1:6075/metrics; default: not read)")
    st.add_argument("--interval", type=float, help="seconds between two looks (default 2 on a terminal, 10 "
                    "otherwise)")
    st.add_argument("--once", action="store_true", help="one snapshot (two looks a second apart, for the rates)")
    st.add_argument("--plain", action="store_true", help="plain lines even on a terminal")
    st.add_argument("--note", default="Ctrl-C quits", help="the line under the panel (default: Ctrl-C quits)")
    st.set_defaults(run=cmd_status)
