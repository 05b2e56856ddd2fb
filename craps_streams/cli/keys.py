"""`keys`: the table controllers' key ring (init, list, add, rotate, retire) and the archiver's key."""
from __future__ import annotations

import time
from pathlib import Path

from craps_streams.cli.errors import CommandError, EXIT_SECRETS
from craps_streams.cli.options import ARCHIVE_KEY, KEYS, Formatter, epilog


def cmd_keys(args, settings) -> int:
    from craps_streams.authenticity import KeyRingError
    from craps_streams.authenticity import keyfile
    from craps_streams.replay.sources import parse_time

    path = Path(args.path) if args.path is not None else settings.key_ring_path
    try:
        at = parse_time(getattr(args, "at", None))
        now = time.time_ns() // 1_000_000
        tables = [t.strip() for t in (getattr(args, "tables", None) or "").split(",") if t.strip()]
        if args.action == "init":
            ring, made = keyfile.init(path, tables or keyfile.dev_floor_tables(args.count),
                                      at if at is not None else 0)
            print(f"{'made' if made else 'kept the existing'} key ring {path}: {len(ring.keys)} keys")
            keyfile.archive_key(settings.archive_key_path, create=True)  # seals archive chain heads
            print(f"archive key {settings.archive_key_path} (0600)")
            return 0
        ring = keyfile.load(path)
        if args.action == "list":
            print(f"{'key id':<32} {'tables':<24} {'not_before':>15} {'not_after':>15}")
            for k in ring.keys:
                tabs = ",".join(sorted(k.tables)[:3]) + (" ..." if len(k.tables) > 3 else "")
                print(f"{k.key_id:<32} {tabs:<24} {k.not_before:>15} {str(k.not_after or '-'):>15}")
            return 0
        if args.action in ("add", "rotate") and not tables:
            raise CommandError("--tables T1,T2 (each gets a new key)")
        if args.action == "add":
            for t in tables:
                ring = ring.with_key(keyfile.new_key({t}, at if at is not None else now))
        elif args.action == "rotate":
            at = at if at is not None else now
            for t in tables:
                ring = ring.rotated({t}, at, keyfile.new_key({t}, at), grace_ms=int(args.grace_s * 1000))
        elif args.action == "retire":
            ring = ring.retired(args.key_id, at if at is not None else now)
        keyfile.save(ring, path)
    except KeyRingError as e:
        raise CommandError(str(e), EXIT_SECRETS) from None
    except ValueError as e:
        raise CommandError(str(e)) from None
    print(f"keys {args.action}: {path} now holds {len(ring.keys)} keys")
    return 0


def register(sub) -> None:
    k = sub.add_parser("keys", help="the table controllers' key ring (tags): init, add, rotate, retire, list",
                       formatter_class=Formatter,
                       description="Keys live in $CRAPS_TABLE_KEYS (default .secrets/table-keys.json, 0600, "
                                   "git-ignored). Times are event times (ISO 8601 or epoch ms).",
                       epilog=epilog(KEYS, ARCHIVE_KEY, ("secrets_dir",), notes=()))
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
