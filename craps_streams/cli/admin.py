"""`topics`, `transactions`, `access`: the administrator's commands (topics and ACLs, open
transactions, the roles' logins)."""
from __future__ import annotations

import sys

from craps_streams.cli.errors import CommandError
from craps_streams.cli.options import APP_ID, KAFKA, TOPICS, Formatter, add_bootstrap, epilog


def cmd_topics(args, settings) -> int:
    from craps_streams.kafka.topics import create_topics, describe_topics, internal_health, prune_runs, spec_drift

    bootstrap = settings.kafka_bootstrap
    if args.prune_runs is not None:
        deleted = prune_runs(args.prune_runs, bootstrap, args.timeout)
        print(f"deleted {len(deleted)} topics of earlier runs" + (f": {', '.join(deleted)}" if deleted else ""))
        return 0
    if not args.list:
        created = create_topics(bootstrap, timeout_s=args.timeout, floor=settings.topics, app_id=settings.app_id,
                                replication=settings.replication_factor)
        for name, status in created.items():
            print(f"{status:8} {name}")
    rc = 0
    print(f"topics on {bootstrap}:")
    for name, info in describe_topics(bootstrap, timeout_s=args.timeout).items():
        cfg = info["configs"]
        shown = " ".join(f"{k}={cfg[k]}" for k in ("cleanup.policy", "retention.ms") if k in cfg)
        drift = spec_drift(name, info, settings.topics)
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


def cmd_transactions(args, settings) -> int:
    from craps_streams.kafka.transactions import AbortRefused, abort, open_transactions

    bootstrap = settings.kafka_bootstrap
    if args.abort:
        topic, sep, partition = args.abort.rpartition(":")
        if not sep or not topic or not partition.isdigit():
            raise CommandError(f"--abort takes TOPIC:PARTITION, got {args.abort!r}")
        try:
            txn = abort(topic, int(partition), args.producer_id, args.force, bootstrap, args.timeout)
        except AbortRefused as e:
            raise CommandError(str(e), 1) from None
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


def cmd_access(args, settings) -> int:
    from craps_streams.kafka.access import (ROLES, admin_client, config_path, current_acls, grant_floor,
                                            key_of_acl, rotate_password, upsert_logins)

    if args.action == "rotate" and args.role not in ROLES:
        raise CommandError(f"ROLE: one of {', '.join(ROLES)}; got {args.role!r}")
    admin = admin_client(settings.kafka_bootstrap, timeout_s=60)
    try:
        if args.action == "users":
            # Never the passwords: only who has a login.
            print(f"logins: {', '.join(upsert_logins(admin))}", file=sys.stderr)
        elif args.action == "grant":
            prefix, app_id = args.prefix or settings.topic_prefix, args.app_id or settings.app_id
            n = grant_floor(admin, prefix, app_id)
            print(f"floor {prefix!r} (app id {app_id!r}): {n} new ACLs", file=sys.stderr)
        elif args.action == "rotate":
            rotate_password(admin, args.role)
            print(f"rotated the password of {args.role} ({config_path(args.role)})", file=sys.stderr)
        else:
            for k in sorted(key_of_acl(a) for a in current_acls(admin)):
                print(" ".join(map(str, k)))
    finally:
        admin.close()
    return 0


def register(sub) -> None:
    tp = sub.add_parser("topics", help="create the pipeline topics (idempotent) and list what the broker holds",
                        formatter_class=Formatter, epilog=epilog(KAFKA, APP_ID, TOPICS),
                        description="As the administrator: create the floor's topics that are missing and grant "
                                    "the floor's ACLs, then list the topics with their settings (exit 1 when one "
                                    "differs from its spec).")
    add_bootstrap(tp)
    tp.add_argument("--list", action="store_true", help="only print the existing topics")
    tp.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the broker (default 30)")
    tp.add_argument("--prune-runs", type=int, metavar="N",
                    help="delete the topics of earlier `make run` floors (named craps.run-<time>.*), keeping "
                         "those of the newest N runs; no other topic is touched")
    tp.set_defaults(run=cmd_topics, broker_role="admin")

    tx = sub.add_parser("transactions", help="transactions open on the partitions (readers wait behind them); "
                                             "abort a hanging one", formatter_class=Formatter,
                        epilog=epilog(KAFKA),
                        description="As the administrator: list the transactions open on the floor's partitions "
                                    "(coordinator state, age, hanging or not), or end one with an abort marker. "
                                    "A read_committed reader stops at the first open transaction of a partition "
                                    "(docs/operating/cluster.md, \"Stalled readers\").")
    add_bootstrap(tx)
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

    ac = sub.add_parser("access", help="the roles' logins and a floor's ACLs on the broker (the administrator's)",
                        formatter_class=Formatter, epilog=epilog(KAFKA, APP_ID),
                        description="As the administrator (docs/security.md): upsert every role's SCRAM login "
                                    "(users; `infra/kafka/kafka.sh up` runs it), grant a floor's ACLs (grant), give "
                                    "a role a new password on the broker and in its client config (rotate ROLE), "
                                    "or list every ACL (show).")
    ac.add_argument("action", choices=("users", "grant", "rotate", "show"), help="what to do")
    ac.add_argument("role", nargs="?", help="with rotate: the role")
    add_bootstrap(ac)
    ac.add_argument("--prefix", help="with grant: the floor's topic prefix (default $CRAPS_TOPIC_PREFIX or craps.)")
    ac.add_argument("--app-id", help="with grant: the floor's worker group (default $CRAPS_APP_ID or craps-streams)")
    # The access commands are the broker's own bootstrap (kafka.sh up): no preflight, the admin client retries.
    ac.set_defaults(run=cmd_access)
