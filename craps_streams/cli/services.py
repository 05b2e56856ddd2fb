"""`worker`, `floor`: the services, the settling worker and the floor view."""
from __future__ import annotations

from craps_streams.cli.options import APP_ID, FLOOR_VIEW, KAFKA, KEYS, RULES, WEB, WORKER, Formatter, add_loglevel, epilog


def cmd_worker(args, settings) -> int:
    from craps_streams.app.service import serve

    if args.web_port is not None:
        settings = settings.replace(web_port=args.web_port)
    return serve(settings, loglevel=args.loglevel)


def cmd_floor(args, settings) -> int:
    # The Faust app is built when its module is imported; it takes the settings in use, these.
    from craps_streams.settings import use

    if args.instance:
        settings = settings.replace(floor_instance=args.instance)
    if args.port:
        settings = settings.replace(floor_port=args.port)
    use(settings)
    from craps_streams.floor.app import serve

    return serve(loglevel=args.loglevel)


def register(sub) -> None:
    w = sub.add_parser("worker", help="run a settling worker against Kafka", formatter_class=Formatter,
                       description="Settle the table events of the partitions the worker group gives this "
                                   "worker, exactly once (Kafka transactions), and serve /metrics and /state.",
                       epilog=epilog(KAFKA, APP_ID, KEYS, RULES, WORKER, WEB))
    w.add_argument("--web-port", type=int,
                   help="the worker's web server (/metrics, /state); 0 turns it off "
                        "(default: $CRAPS_WEB_PORT or 6066)")
    add_loglevel(w)
    w.set_defaults(run=cmd_worker)

    fl = sub.add_parser("floor", help="the floor view: every table live, with plots (faust-streaming)",
                        formatter_class=Formatter, description="The floor view: every table live, with plots, on "
                                                               "a web page (faust-streaming).",
                        epilog=epilog(KAFKA, APP_ID, FLOOR_VIEW, WEB))
    fl.add_argument("--port", type=int, help="web port (default: $CRAPS_FLOOR_PORT or 6070)")
    fl.add_argument("--instance",
                    help="this view's name, unique per instance (default: $CRAPS_FLOOR_INSTANCE or 1)")
    add_loglevel(fl)
    fl.set_defaults(run=cmd_floor)
