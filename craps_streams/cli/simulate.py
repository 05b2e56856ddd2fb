"""`simulate`, `produce`: a simulated floor's table events, and table events sent to Kafka."""
from __future__ import annotations

import json
import sys

from craps_streams.cli.errors import CommandError, EXIT_SECRETS, note
from craps_streams.cli.history import open_out
from craps_streams.cli.options import KAFKA, KEYS, Formatter, add_bootstrap, epilog
from craps_streams.cli.progress import Progress


def _dev_signer(args, settings):
    """The dev floor's table signer (the key ring made at first start); CommandError (exit 4)
    when there is none to be had."""
    from craps_streams.authenticity import KeyRingError, TableSigner
    from craps_streams.authenticity import keyfile

    try:
        ring, made = keyfile.init(settings.key_ring_path)
    except KeyRingError as e:
        raise CommandError(str(e), EXIT_SECRETS) from None
    if made:
        note(args, f"made the dev floor's key ring at {settings.key_ring_path} (0600, git-ignored)")
    return TableSigner(ring)


def _tagged(records, signer):
    from craps_streams.authenticity import sign_record

    for record in records:
        try:
            yield sign_record(signer, record)
        except LookupError as e:
            raise CommandError(f"{e}: add keys with `craps-streams keys add --tables ...`", EXIT_SECRETS) from None


def _check_floor(args) -> None:
    """Each of the floor's numbers in range, or a CommandError naming the one that is not."""
    wrong = [f"--tables must be 1 or more, got {args.tables}" if args.tables < 1 else None,
             f"--hours must be more than 0, got {args.hours:g}" if args.hours <= 0 else None,
             f"--speed must be more than 0, got {args.speed:g}" if args.speed <= 0 else None,
             f"--bad-rate must be in 0..1, got {args.bad_rate:g}" if not 0 <= args.bad_rate <= 1 else None]
    wrong = [w for w in wrong if w]
    if wrong:
        raise CommandError("; ".join(wrong))


def cmd_simulate(args, settings) -> int:
    from craps_streams.sim.floor import floor_events

    _check_floor(args)
    try:
        faults = _faults(args)
    except ValueError as e:
        raise CommandError(str(e)) from None
    if args.live:
        return _simulate_live(args, settings, faults)
    records = floor_events(args.tables, args.hours, args.seed, args.bad_rate, faults=faults)
    if not args.no_tags:
        records = _tagged(records, _dev_signer(args, settings))
    out = open_out(args.output)
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


def _simulate_live(args, settings, faults: dict) -> int:
    """The floor entered live through table controllers, as `controller simulate` (and `make run`)
    enter it: the simulator is the tables' dealers and dice readers; the controllers number,
    stamp, sign, journal and forward each event (docs/operating/controller.md)."""
    import tempfile
    from pathlib import Path

    from craps_streams.cli.controller import floor_through_controllers

    if args.no_tags:
        raise CommandError("--no-tags: a live floor is entered through the tables' controllers, which sign every "
                           "event; untagged history is written without --live, or sent with `produce`")
    journal_dir = Path(args.journal_dir or tempfile.mkdtemp(prefix="craps-controllers-"))
    if not args.journal_dir:
        note(args, f"the controllers' journals: {journal_dir}")
    return floor_through_controllers(
        settings, tables=args.tables, hours=args.hours, seed=args.seed, bad_rate=args.bad_rate, speed=args.speed,
        per_controller=args.per_controller, journal_dir=journal_dir, http_port=args.http_port,
        bootstrap=args.bootstrap, faults=faults)


def cmd_produce(args, settings) -> int:
    from craps_streams.ingest.producer import make_producer, produce, records_of

    records = records_of(args.file)
    if not args.no_tags:
        # The dev floor's table controllers: an event without a tag is tagged with its table's key;
        # one that carries a tag is sent as it is (never re-signed: that would launder a forgery).
        signer = _dev_signer(args, settings)
        records = (r if type(r) is dict and "tag" in r else t
                   for r, t in ((r, next(_tagged((r,), signer))) for r in records))
    producer = make_producer(args.bootstrap)
    try:
        n = produce(records, producer, settings.topics.table_events,
                    progress=Progress(not args.quiet, "sent", after_s=0.0, every=1, interval_s=0.5))
    finally:
        producer.close()
    if args.quiet:
        print(f"sent {n:,} events", file=sys.stderr)
    return 0


def register(sub) -> None:
    s = sub.add_parser("simulate", help="write a simulated floor's event history as JSON Lines",
                       formatter_class=Formatter,
                       description="A simulated floor: each table's shooters, throws and side wagers as table "
                                   "events, JSON Lines on stdout (or -o), or entered live (--live) at table "
                                   "controllers that journal and forward them to Kafka, as `make run` does.",
                       epilog=epilog(KAFKA, KEYS))
    s.add_argument("--tables", type=int, default=10, help="how many tables, T001.. (default 10)")
    s.add_argument("--hours", type=float, default=1.0, help="hours of play per table (default 1)")
    s.add_argument("--seed", type=int, default=1, help="the random seed: same seed, same floor (default 1)")
    s.add_argument("--bad-rate", type=float, default=0.0,
                   help="chance per window of a bad input (default 0: none)")
    s.add_argument("--output", "-o", metavar="FILE", help="write here (default: stdout)")
    s.add_argument("--live", action="store_true",
                   help="enter the floor in real time at table controllers run here, which forward it to Kafka")
    s.add_argument("--speed", type=float, default=1.0,
                   help="with --live: times faster than real time (default 1)")
    s.add_argument("--journal-dir", help="with --live: the controllers' journals and sockets (default: a new temporary directory)")
    s.add_argument("--per-controller", type=int, default=10, help="with --live: tables per controller (default 10)")
    s.add_argument("--http-port", type=int,
                   help="with --live: the first controller's HTTP port (/metrics, /status); the next ones count up from it")
    add_bootstrap(s)
    s.add_argument("--no-tags", action="store_true",
                   help="write untagged events (history as before tags; rejected unless --accept-untagged)")
    s.add_argument("--fault", help="a table that misbehaves: loaded-dice[:P7] (default 5/36), "
                   "shaker-drift[:RATE] (die 1's six gains RATE an hour, default 0.02), or "
                   "past-posting:POSITION (Hot Roller wagers only when the next throw is not a 7)")
    s.add_argument("--fault-tables", metavar="T1,T2",
                   help="comma list of the tables with the fault (default T001)")
    s.set_defaults(run=cmd_simulate, broker_role=lambda a: "controller" if a.live else None)

    pr = sub.add_parser("produce", help="send JSON Lines or Avro container files of table events to Kafka",
                        formatter_class=Formatter, epilog=epilog(KAFKA, KEYS),
                        description="Send table events to the table-events topic as the table controller, "
                                    "each tagged with its table's key unless it carries a tag.")
    pr.add_argument("file", help="a .jsonl file, an Avro container (.avro), or - for stdin")
    add_bootstrap(pr)
    pr.add_argument("--quiet", "-q", action="store_true", help="no progress bar; a count at the end")
    pr.add_argument("--no-tags", action="store_true",
                    help="send events as they are (default: tag untagged events with the dev floor's keys)")
    pr.set_defaults(run=cmd_produce, broker_role="controller")
