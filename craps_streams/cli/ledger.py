"""`craps-streams ledger`: finance's ledger, the output topics as SQL rows (craps_streams/ledger)."""
from __future__ import annotations

import logging
import pathlib
import signal

from craps_streams.cli.options import APP_ID, KAFKA, LEDGER, Formatter, add_bootstrap, add_loglevel, epilog


def run_ledger(args, settings) -> int:
    from prometheus_client import start_http_server

    from craps_streams.kafka.access import ledger_group, ledger_topics
    from craps_streams.ledger.metrics import LedgerMetrics
    from craps_streams.ledger.service import LedgerService, LedgerSettings
    from craps_streams.ledger.store import Ledger, open_engine
    from craps_streams.report.calendar import calendar_of

    logging.basicConfig(level=args.loglevel.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    db = args.db or settings.ledger_db
    if db.startswith("sqlite:///") and not db.startswith("sqlite:////"):
        pathlib.Path(db.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    ledger_settings = LedgerSettings(
        topics=tuple(ledger_topics(settings.topic_prefix)), group_id=ledger_group(settings.app_id),
        calendar=calendar_of(args.tz or settings.report_tz, args.day_start or settings.report_day_start,
                             args.shifts or settings.report_shifts),
        instance=args.instance or settings.ledger_instance, bootstrap=settings.kafka_bootstrap,
        max_batch_records=args.batch, events_topic=settings.topics.table_events)
    metrics = LedgerMetrics()
    port = settings.ledger_port if args.metrics_port is None else args.metrics_port
    if port:
        start_http_server(port, addr="127.0.0.1", registry=metrics.registry)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    LedgerService(Ledger(open_engine(db)), ledger_settings, metrics).run(lambda: bool(stopping))
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "ledger", help="finance's ledger: settlements, rejections and alerts as SQL rows, exactly once",
        formatter_class=Formatter,
        description="Read the floor's settlements, surveillance alerts and rejections, and the tables' openings "
                    "(read_committed) into a SQL database, each record once: the partitions' positions are stored "
                    "in the same transaction as the rows (docs/operating/ledger.md). `report --from-ledger` "
                    "reports from it.",
        epilog=epilog(KAFKA, APP_ID, LEDGER))
    p.add_argument("--db", metavar="URL",
                   help="sqlite:///FILE or postgresql+psycopg://... (default $CRAPS_LEDGER_DB or sqlite:///.run/ledger.db)")
    p.add_argument("--metrics-port", type=int,
                   help="/metrics on 127.0.0.1; 0 turns it off (default $CRAPS_LEDGER_PORT or 6075)")
    p.add_argument("--instance",
                   help="this ledger's name in its group, kept across restarts; each ledger process of a floor "
                        "has its own (default $CRAPS_LEDGER_INSTANCE or 1)")
    p.add_argument("--batch", type=int, default=5000, help="most records in one transaction (default 5000)")
    p.add_argument("--tz", help="the casino's IANA time zone (default $CRAPS_REPORT_TZ or America/New_York)")
    p.add_argument("--day-start", help="local time the gaming day starts (default $CRAPS_REPORT_DAY_START or 06:00)")
    p.add_argument("--shifts", help="NAME=HH:MM,... (default $CRAPS_REPORT_SHIFTS, else day, swing, grave, 8 hours "
                                    "each from --day-start)")
    add_bootstrap(p)
    add_loglevel(p)
    p.set_defaults(run=run_ledger, broker_role="ledger")
