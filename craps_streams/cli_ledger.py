"""The `ledger` command: finance's ledger, the output topics as SQL rows (craps_streams/ledger).

`register(subparsers)` adds it to the craps-streams parser.
"""
from __future__ import annotations

import argparse
import logging
import os
import pathlib
import signal

DEFAULT_DB = "sqlite:///.run/ledger.db"
DB_ENV = "CRAPS_LEDGER_DB"
PORT_ENV = "CRAPS_LEDGER_PORT"
DEFAULT_PORT = 6075

ENV_LEDGER = f"""\
  {DB_ENV}        the ledger database URL (default {DEFAULT_DB}); a PostgreSQL
                         URL carries a password: set it here rather than on the command line
  {PORT_ENV}      the ledger's /metrics port (default {DEFAULT_PORT})
  CRAPS_LEDGER_INSTANCE  this ledger's name in its consumer group (default 1)
  CRAPS_REPORT_TZ, CRAPS_REPORT_DAY_START, CRAPS_REPORT_SHIFTS   the calendar, as `report`'s"""


def cmd_ledger(args) -> int:
    from prometheus_client import start_http_server

    from craps_streams.kafka.access import ledger_group, ledger_topics
    from craps_streams.ledger.metrics import LedgerMetrics
    from craps_streams.ledger.service import LedgerService, LedgerSettings
    from craps_streams.ledger.store import Ledger, open_engine
    from craps_streams.report.calendar import calendar_of
    from craps_streams.topics import APP_ID, TOPIC_PREFIX

    logging.basicConfig(level=args.loglevel.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.db.startswith("sqlite:///") and not args.db.startswith("sqlite:////"):
        pathlib.Path(args.db.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    settings = LedgerSettings(topics=tuple(ledger_topics(TOPIC_PREFIX)), group_id=ledger_group(APP_ID),
                              calendar=calendar_of(args.tz, args.day_start, args.shifts), instance=args.instance,
                              bootstrap=args.bootstrap,
                              max_batch_records=args.batch)
    metrics = LedgerMetrics()
    if args.metrics_port:
        start_http_server(args.metrics_port, addr="127.0.0.1", registry=metrics.registry)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    LedgerService(Ledger(open_engine(args.db)), settings, metrics).run(lambda: bool(stopping))
    return 0


def register(subparsers) -> None:
    from craps_streams import cli

    p = subparsers.add_parser(
        "ledger", help="finance's ledger: settlements, rejections and alerts as SQL rows, exactly once",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Read the floor's settlements, surveillance alerts and rejections (read_committed) into a "
                    "SQL database, each record once: the partitions' positions are stored in the same transaction "
                    "as the rows (docs/operating/ledger.md).",
        epilog=cli._epilog(cli.ENV_KAFKA, cli.ENV_APP_ID, ENV_LEDGER))
    p.add_argument("--db", default=os.environ.get(DB_ENV, DEFAULT_DB), metavar="URL",
                   help=f"sqlite:///FILE or postgresql+psycopg://... (default ${DB_ENV} or {DEFAULT_DB})")
    p.add_argument("--metrics-port", type=int, default=int(os.environ.get(PORT_ENV, DEFAULT_PORT)),
                   help=f"/metrics on 127.0.0.1; 0 turns it off (default ${PORT_ENV} or {DEFAULT_PORT})")
    p.add_argument("--instance", default=os.environ.get("CRAPS_LEDGER_INSTANCE", "1"),
                   help="this ledger's name in its group, kept across restarts; each ledger process of a floor "
                        "has its own (default $CRAPS_LEDGER_INSTANCE or 1)")
    p.add_argument("--batch", type=int, default=5000, help="most records in one transaction (default 5000)")
    p.add_argument("--tz", default=os.environ.get("CRAPS_REPORT_TZ", "America/New_York"),
                   help="the casino's IANA time zone (default $CRAPS_REPORT_TZ or America/New_York)")
    p.add_argument("--day-start", default=os.environ.get("CRAPS_REPORT_DAY_START", "06:00"),
                   help="local time the gaming day starts (default $CRAPS_REPORT_DAY_START or 06:00)")
    p.add_argument("--shifts", default=os.environ.get("CRAPS_REPORT_SHIFTS"),
                   help="NAME=HH:MM,... (default: day, swing, grave, 8 hours each from --day-start)")
    cli._add_bootstrap(p)
    cli._add_loglevel(p)
    p.set_defaults(run=cmd_ledger, broker_role="ledger")
