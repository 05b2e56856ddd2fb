"""`craps-streams controller`: the table controller (craps_streams/controller), its re-sends and
its key file, and a simulated floor entered through controllers."""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from craps_streams.cli.options import KAFKA, KEYS, Formatter, epilog

PAGE_BYTES = 4096  # SQLite's default page size: --journal-max-mb in pages


def _tables(text: str) -> frozenset:
    tables = frozenset(t.strip() for t in (text or "").split(",") if t.strip())
    from craps_streams.rules.contract import valid_id

    bad = sorted(t for t in tables if not valid_id(t))
    if bad:
        raise SystemExit(f"controller: not table ids: {', '.join(map(repr, bad[:5]))}")
    return tables


def _ring(path, tables: frozenset, shared: bool):
    """The key ring the controller signs with: only the served tables' keys. A file holding other
    tables' keys is refused unless --shared-key-file (a dev floor's one ring for every table)."""
    from craps_streams.authenticity import keyfile

    ring = keyfile.load(path)
    mine = ring.only(tables)
    others = len(ring.keys) - len(mine.keys)
    if others and not shared:
        raise SystemExit(f"controller: the key file {path} holds {others} keys of other "
                         "tables: a controller's host keeps only its tables' keys (make one with "
                         "`craps-streams controller key-file --tables ... --out FILE`), or pass --shared-key-file")
    missing = sorted(t for t in tables if not any(t in k.tables for k in mine.keys))
    if missing:
        raise SystemExit(f"controller: no key for {', '.join(missing[:10])} in the key file "
                         "(craps-streams keys add --tables ...)")
    return mine


def cmd_controller(args, settings) -> int:
    from craps_streams.authenticity import KeyRingError, TableSigner
    from craps_streams.controller.service import ControllerConfig, serve

    logging.basicConfig(level=getattr(logging, args.loglevel.upper()), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # the sender words a broker outage itself
    tables = _tables(args.tables)
    if not tables or args.journal is None:
        print("controller: --tables T001[,T002...] and --journal PATH are needed", file=sys.stderr)
        return 2
    if args.http_port is None and args.socket is None and not args.stdin:
        print("controller: no input: give --http-port, --socket or --stdin", file=sys.stderr)
        return 2
    try:
        signer = TableSigner(_ring(args.key_file or settings.key_ring_path, tables, args.shared_key_file))
    except KeyRingError as e:
        print(f"controller: {e}", file=sys.stderr)
        return 4
    topic = args.topic or settings.topics.table_events
    bootstrap = args.bootstrap or settings.kafka_bootstrap
    if not args.new_tables:
        logging.getLogger("kafka").setLevel(logging.CRITICAL)
        for table in _started_after_topic(Path(args.journal), tables, topic, bootstrap, args.seed_from_topic):
            print(f"controller: {table}", file=sys.stderr, flush=True)
    config = ControllerConfig(
        tables=tables, journal=Path(args.journal), signer=signer, topic=topic,
        bootstrap=bootstrap, http_host=args.http_host, http_port=args.http_port,
        socket=Path(args.socket) if args.socket else None, stdin=args.stdin, retention_s=args.retention_h * 3600,
        max_pages=None if args.journal_max_mb is None else int(args.journal_max_mb * 1024 * 1024 // PAGE_BYTES))

    def ready(info):
        print(f"controller ready: {info}", file=sys.stderr, flush=True)

    until_stopped(lambda: serve(config, ready))  # the journal holds whatever is not yet sent
    return 0


def until_stopped(main) -> None:
    """Run the coroutine `main()` until it returns or SIGINT / SIGTERM cancels it. The stop is a
    cancellation, not an exception raised wherever the signal lands: each controller's `finally`
    runs in order (the inputs closed, the sender's producer stopped within its bound, the journal
    closed), so a stop takes seconds and leaves no producer or task half torn down."""
    async def guarded():
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        try:
            await main()
        except asyncio.CancelledError:
            pass

    asyncio.run(guarded())


def _started_after_topic(journal: Path, tables, topic: str, bootstrap: str, seed_them: bool) -> list[str]:
    """The journal's tables checked against the topic before the controller numbers anything
    (craps_streams/controller/seed.py): seeded when `seed_them`, else a CommandError naming the
    tables the journal holds nothing of while the topic has their events. -> what was seeded, in words."""
    from craps_streams.cli.errors import CommandError
    from craps_streams.controller.seed import JournalBehind, NotSeeded, check, seed
    from craps_streams.kafka.errors import broker_problem, preflight

    try:
        if seed_them or _unnumbered(journal, tables):
            preflight("controller", bootstrap)  # an answer in seconds, where a consumer waits 30 s to bootstrap
        if seed_them:
            return [_seeded_words(e) for e in seed(journal, tables, topic, bootstrap)]
        check({journal: tables}, topic, bootstrap)
        return []
    except (NotSeeded, JournalBehind) as e:
        raise CommandError(str(e)) from None
    except Exception as e:
        if broker_problem(e) is not None:
            print(f"controller: cannot read {topic} for the last seq of the tables the journal {journal} holds "
                  "nothing of (a new host's journal starts after them); with --new-tables for tables that never "
                  "played on this topic", file=sys.stderr)
        raise


def _unnumbered(journal: Path, tables) -> bool:
    """Whether the journal holds nothing of some of `tables` (so the topic must be looked at)."""
    from craps_streams.controller.journal import Journal

    j = Journal(journal, sync_full=False)
    try:
        return any(j.last_seq(t) == 0 for t in tables)
    finally:
        j.close()


def _seeded_words(e) -> str:
    return f"{e.table_id}: the journal numbers on after seq {e.seq:,} (ts {e.ts}), the topic's last"


def cmd_seed(args, settings) -> int:
    """Start a new host's journal after what table-events holds of its tables."""
    tables = _tables(args.tables)
    if not tables:
        print("controller seed: --tables T001[,T002...] is needed", file=sys.stderr)
        return 2
    seeded = _started_after_topic(Path(args.journal), tables, args.topic or settings.topics.table_events,
                                  args.bootstrap or settings.kafka_bootstrap, True)
    for line in seeded:
        print(line)
    done = {line.split(":", 1)[0] for line in seeded}
    for table in sorted(tables - done):
        print(f"{table}: nothing to seed (the journal numbers it already, or the topic has none of its events)")
    return 0


def cmd_resend(args, settings) -> int:
    from craps_streams.controller.journal import Journal

    j = Journal(args.journal, sync_full=False)
    try:
        marked, missing = j.resend(args.table, args.from_seq, args.to_seq)
    except ValueError as e:
        print(f"controller resend: {e}", file=sys.stderr)
        return 2
    finally:
        j.close()
    print(f"{args.table} seq {args.from_seq}..{args.to_seq}: {marked} events marked; the running controller "
          "sends them again")
    if missing:
        shown = ", ".join(map(str, missing[:20])) + (" ..." if len(missing) > 20 else "")
        print(f"not in the journal (past the retention, or never taken): {len(missing)}: {shown}", file=sys.stderr)
        return 1
    return 0


def cmd_key_file(args, settings) -> int:
    from craps_streams.authenticity import KeyRingError
    from craps_streams.authenticity import keyfile

    tables = _tables(args.tables)
    try:
        ring = keyfile.load(args.ring or settings.key_ring_path).only(tables)
        if not ring.keys:
            print(f"controller key-file: no key of the ring is bound to only {', '.join(sorted(tables))}",
                  file=sys.stderr)
            return 4
        path = keyfile.save(ring, args.out)
    except KeyRingError as e:
        print(f"controller key-file: {e}", file=sys.stderr)
        return 4
    print(f"wrote {path} (0600): {len(ring.keys)} keys of {len(tables)} tables")
    return 0


def cmd_simulate(args, settings) -> int:
    """A simulated floor entered through controllers: one controller per --per-controller tables
    (in this process, each with its own journal and socket), the simulator as their dealers."""
    logging.basicConfig(level=getattr(logging, args.loglevel.upper()), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    return floor_through_controllers(
        settings, tables=args.tables, hours=args.hours, seed=args.seed, bad_rate=args.bad_rate, speed=args.speed,
        per_controller=args.per_controller, journal_dir=Path(args.journal_dir), http_port=args.http_port,
        key_file=args.key_file, bootstrap=args.bootstrap, topic=args.topic)


def floor_through_controllers(settings, *, tables: int, hours: float, seed: int, bad_rate: float, speed: float,
                              per_controller: int, journal_dir: Path, http_port: int | None = None,
                              key_file=None, bootstrap: str | None = None, topic: str | None = None,
                              faults: dict | None = None) -> int:
    """Run the controllers of a simulated floor in this process and enter the floor's events at
    them in real time (`speed` times faster), as the tables' equipment does (the simulator plays
    the dealers and dice readers: craps_streams/sim/dealers.py); return once every journal is
    forwarded. `controller simulate` and `simulate --live` both run this: every live floor takes
    the controllers' path. -> the exit code."""
    import time

    from craps_streams.authenticity import KeyRingError, TableSigner
    from craps_streams.authenticity import keyfile
    from craps_streams.controller.seed import NotSeeded, check
    from craps_streams.controller.service import ControllerConfig, journal_depth, serve
    from craps_streams.sim.dealers import deal
    from craps_streams.sim.floor import floor_events

    ids = keyfile.dev_floor_tables(tables)
    try:
        ring, _ = keyfile.init(key_file or settings.key_ring_path)
    except KeyRingError as e:
        print(f"controller simulate: {e}", file=sys.stderr)
        return 4
    groups = [ids[i:i + per_controller] for i in range(0, len(ids), per_controller)]
    configs = [ControllerConfig(
        tables=frozenset(group), journal=journal_dir / f"{group[0]}-{group[-1]}.sqlite",
        signer=TableSigner(ring.only(group)), topic=topic or settings.topics.table_events,
        bootstrap=bootstrap or settings.kafka_bootstrap, socket=journal_dir / f"{group[0]}-{group[-1]}.sock",
        http_port=None if http_port is None else http_port + i) for i, group in enumerate(groups)]
    sockets = {t: str(c.socket) for c in configs for t in c.tables}
    journal_dir.mkdir(parents=True, exist_ok=True)
    try:
        check({c.journal: c.tables for c in configs}, configs[0].topic, configs[0].bootstrap)
    except NotSeeded as e:
        # A simulated floor numbers its tables from 1: on topics that already hold them, all of it
        # would be duplicates.
        print(f"controller simulate: the topic {configs[0].topic} already holds events of "
              f"{', '.join(t.table_id for t in e.unseeded[:10])}: a simulated floor starts on topics of its own "
              "(a new CRAPS_TOPIC_PREFIX)", file=sys.stderr)
        return 2

    async def floor():
        ready = [asyncio.Event() for _ in configs]
        controllers = [asyncio.create_task(serve(c, lambda _info, e=e: e.set())) for c, e in zip(configs, ready)]
        try:
            return await entered_and_forwarded(ready)
        finally:  # done, or stopped by a signal: every controller stops in order, together
            for task in controllers:
                task.cancel()
            await asyncio.gather(*controllers, return_exceptions=True)

    async def entered_and_forwarded(ready):
        await asyncio.gather(*(e.wait() for e in ready))
        records = floor_events(tables, hours, seed, bad_rate, time.time_ns() // 1_000_000, faults=faults or {})
        entered = await deal(records, sockets, speed)
        print(f"entered: {sum(entered.acknowledged.values()):,} events acknowledged, "
              f"{sum(entered.refused.values()):,} refused ({dict(entered.refused)}), {entered.repeated:,} entered "
              "again and answered with their seq", file=sys.stderr, flush=True)
        if entered.waits:
            waits = sorted(entered.waits)
            at = lambda q: waits[min(len(waits) - 1, int(q * len(waits)))] * 1000  # noqa: E731
            print(f"answers (entered to durable): p50 {at(0.5):.1f} ms, p99 {at(0.99):.1f} ms, max {waits[-1] * 1000:.1f} ms "
                  f"over {len(waits):,}", file=sys.stderr, flush=True)
        loop = asyncio.get_running_loop()
        for config in configs:  # forwarded: every journal drained
            while (await loop.run_in_executor(None, journal_depth, config.journal))[0]:
                await asyncio.sleep(0.5)
        return entered

    until_stopped(floor)
    return 0


def register(subparsers) -> None:
    """Add the `controller` command group to the CLI's subcommands."""
    c = subparsers.add_parser(
        "controller", help="the table controller: takes a table's events, journals them durably, forwards them",
        formatter_class=Formatter,
        description="Run at a table (one process per table or group of tables on a host). Events come in "
                    "without seq, ts, key_id and tag through a local HTTP/JSON API (POST /events) and/or a "
                    "line protocol (Unix socket, stdin); each is checked against the contract, numbered, "
                    "stamped, signed with its table's key and written to a durable SQLite journal before "
                    "the answer (its seq). A sender forwards the journal to table-events in order; through "
                    "a broker outage the journal holds the events (docs/operating/controller.md).",
        epilog=epilog(KAFKA, KEYS))
    c.add_argument("--tables", help="the tables this controller serves: T001[,T002...]")
    c.add_argument("--journal", metavar="PATH", help="the journal (SQLite file; made if missing)")
    c.add_argument("--http-port", type=int, help="serve POST /events, /resend, /status, /metrics here (0: any free port)")
    c.add_argument("--http-host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: the table's host)")
    c.add_argument("--socket", metavar="PATH", help="the line protocol on this Unix socket (0600)")
    c.add_argument("--stdin", action="store_true",
                   help="the line protocol on stdin, answers on stdout; exits once stdin ends and all is forwarded")
    c.add_argument("--key-file", metavar="PATH", help="the tables' keys (default: $CRAPS_TABLE_KEYS or .secrets/table-keys.json)")
    c.add_argument("--shared-key-file", action="store_true",
                   help="accept a key file that also holds other tables' keys (a dev floor's single ring)")
    c.add_argument("--retention-h", type=float, default=168.0,
                   help="hours sent events stay in the journal for re-sends (default 168)")
    c.add_argument("--journal-max-mb", type=float, help="refuse new events beyond this journal size (default: the disk)")
    c.add_argument("--bootstrap", help="Kafka bootstrap servers (default $CRAPS_KAFKA_BOOTSTRAP or 127.0.0.1:9092)")
    c.add_argument("--topic", help="the table-events topic (default: $CRAPS_TOPIC_PREFIX + table-events)")
    c.add_argument("--seed-from-topic", action="store_true",
                   help="a new host's journal: start each table the journal holds nothing of after its last seq on "
                        "the topic (as `controller seed` does) before taking events")
    c.add_argument("--new-tables", action="store_true",
                   help="do not look at the topic for tables the journal holds nothing of: they never played on it "
                        "(without it, such a table with events on the topic stops the start)")
    c.add_argument("--loglevel", default="info", choices=("debug", "info", "warning", "error"),
                   help="log level on stderr (default info)")
    c.set_defaults(run=cmd_controller, broker_role=None)
    cs = c.add_subparsers(dest="controller_action", metavar="ACTION")
    r = cs.add_parser("resend", help="send a range of a table's events again from the journal",
                      description="Mark seq FROM..TO of a table for sending again; the running controller "
                                  "sends them (the worker drops those it already has). Exit 1 when part of "
                                  "the range is no longer in the journal (past --retention-h).")
    r.add_argument("--journal", metavar="PATH", required=True, help="the controller's journal")
    r.add_argument("--table", required=True, help="the table id")
    r.add_argument("--from", dest="from_seq", type=int, required=True, help="the first seq to send again")
    r.add_argument("--to", dest="to_seq", type=int, required=True, help="the last seq to send again (inclusive)")
    r.set_defaults(run=cmd_resend)
    sd = cs.add_parser("seed", help="start a new host's journal after the tables' last seq on the topic",
                       description="On a host that replaces a dead one (its journal empty): read the last seq and ts "
                                   "of each table from table-events (read_committed, with the controller's login) "
                                   "and start the journal's numbering after them, so the tables' seq stays gapless "
                                   "across hosts (docs/operating/controller.md). Tables the journal numbers already "
                                   "are left as they are; a journal numbering a table below the topic is refused.")
    sd.add_argument("--journal", metavar="PATH", required=True, help="the new host's journal (made if missing)")
    sd.add_argument("--tables", required=True, help="the tables the controller will serve: T001[,T002...]")
    sd.add_argument("--bootstrap", help="Kafka bootstrap servers (default $CRAPS_KAFKA_BOOTSTRAP or 127.0.0.1:9092)")
    sd.add_argument("--topic", help="the table-events topic (default: $CRAPS_TOPIC_PREFIX + table-events)")
    sd.set_defaults(run=cmd_seed, broker_role="controller")
    sm = cs.add_parser("simulate", help="a simulated floor entered through controllers (the simulator as dealers)",
                       description="Run controllers for a simulated floor's tables in this process (one per "
                                   "--per-controller tables, journals and sockets in --journal-dir) and enter the "
                                   "floor's events at them in real time (or --speed times faster), as the tables' "
                                   "equipment does. Ends once every journal is forwarded.")
    sm.add_argument("--tables", type=int, default=10, help="how many tables, T001.. (default 10)")
    sm.add_argument("--hours", type=float, default=1.0, help="hours of play per table (default 1)")
    sm.add_argument("--seed", type=int, default=1, help="the random seed (default 1)")
    sm.add_argument("--bad-rate", type=float, default=0.0, help="chance per window of a bad input (default 0)")
    sm.add_argument("--speed", type=float, default=1.0, help="times faster than real time (default 1)")
    sm.add_argument("--per-controller", type=int, default=10, help="tables per controller (default 10)")
    sm.add_argument("--journal-dir", required=True, help="the controllers' journals and sockets")
    sm.add_argument("--http-port", type=int,
                    help="the first controller's HTTP port (/metrics, /status); the next ones count up from it")
    sm.add_argument("--key-file", help="the dev floor's key ring (made if missing; default $CRAPS_TABLE_KEYS)")
    sm.add_argument("--bootstrap", help="Kafka bootstrap servers (default $CRAPS_KAFKA_BOOTSTRAP or 127.0.0.1:9092)")
    sm.add_argument("--topic", help="the table-events topic (default: $CRAPS_TOPIC_PREFIX + table-events)")
    sm.add_argument("--loglevel", default="warning", choices=("debug", "info", "warning", "error"),
                    help="log level on stderr (default warning)")
    sm.set_defaults(run=cmd_simulate)
    k = cs.add_parser("key-file", help="write a key file holding only these tables' keys (for their controller's host)",
                      description="From the floor's key ring, the keys bound to none but these tables, in a new "
                                  "0600 key file for their controller's host (docs/operating/controller.md).")
    k.add_argument("--tables", required=True, help="the controller's tables: T001[,T002...]")
    k.add_argument("--ring", help="the floor's key ring (default: $CRAPS_TABLE_KEYS or .secrets/table-keys.json)")
    k.add_argument("--out", required=True, help="the key file to write (0600)")
    k.set_defaults(run=cmd_key_file)
