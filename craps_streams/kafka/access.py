"""Who may do what on the broker: one principal per role, least privilege by ACLs (docs/security.md).

    craps-streams access users         # upsert every role's SCRAM login (kafka.sh up does)
    craps-streams access grant         # the ACLs of the floor of $CRAPS_TOPIC_PREFIX / $CRAPS_APP_ID
    craps-streams access rotate ROLE   # a new password for ROLE, on the broker and in its config
    craps-streams access show          # every ACL on the broker

Run as the administrator (the `admin` role's client config); idempotent: granting an ACL that
exists, or upserting a login again, changes nothing a client sees.

A floor is a topic prefix (CRAPS_TOPIC_PREFIX) and the worker group's application id (CRAPS_APP_ID).
The roles differ by the END of a topic's name (`table-events` vs `settlements`), and Kafka's PREFIXED
patterns match a name's START: a PREFIXED grant on `craps.` would hand the viewer the table events
too. So topic grants are LITERAL, per floor, made by the administrator when the floor's topics are
created (craps_streams/kafka/topics.py calls grant_floor); the names the application makes up at run time are
PREFIXED: the tail's groups `craps-tail-*`, and the floor view's (faust) own topics, groups and
transactional ids `<app id>-floor-*` (craps_streams/floor/app.py names its app `<app id>-floor-<instance>`).
The worker's transactional ids are LITERAL, one per partition (`<app id>-<partition>`), so they do
not also cover the floor view's.
"""
from __future__ import annotations

import os
import re
import secrets
import time
from dataclasses import dataclass
from typing import Iterable

from craps_streams.kafka.security import ROLES, SecurityConfigError, config_path, security_settings

SCRAM_ITERATIONS = 8192
TAIL_GROUP_PREFIX = "craps-tail-"  # craps_streams/app/tail.py: one throwaway group per terminal
FLOOR_VIEW_INFIX = "-floor-"  # the floor view's faust app ids: <app id>-floor-<instance> (craps_streams/floor/app.py)
LEDGER_GROUP_SUFFIX = "-ledger"  # the ledger's consumer group: <app id>-ledger (craps_streams/ledger/service.py)


@dataclass(frozen=True)
class Grant:
    """ALLOW `operation` on a resource to a role's principal, from any host."""
    role: str
    resource: str  # TOPIC | GROUP | TRANSACTIONAL_ID
    name: str
    operation: str  # READ | WRITE | DESCRIBE | CREATE
    pattern: str = "LITERAL"  # or PREFIXED


def floor_view_prefix(app_id: str) -> str:
    """What every faust app id of the floor's view starts with (its topics, group, transactional ids)."""
    return app_id + FLOOR_VIEW_INFIX


def floor_grants(prefix: str, app_id: str) -> list[Grant]:
    """Every ACL of one floor: its topics under `prefix`, its worker group `app_id`, its floor view."""
    from craps_streams.topics import PARTITIONS

    events = prefix + "table-events"
    state = prefix + "table-state"
    outputs = [prefix + name for name in ("settlements", "layout-markers", "surveillance", "rejections")]
    floor_app_id = floor_view_prefix(app_id)
    g: list[Grant] = []

    def topic(role, names, *ops, pattern="LITERAL"):
        g.extend(Grant(role, "TOPIC", n, op, pattern) for n in names for op in ops)

    # Table controllers: write the table events (an idempotent producer needs no more since Kafka
    # 2.8, KIP-679), and read them back without a group: a new host's journal starts after its
    # tables' last seq there (craps_streams/controller/seed.py).
    topic("controller", [events], "WRITE", "DESCRIBE", "READ")
    # Settling workers: read the events in their group, write outputs and states in transactions of
    # their own ids, read the states back to recover a partition.
    topic("worker", [events], "READ", "DESCRIBE")
    topic("worker", [*outputs, state], "WRITE", "DESCRIBE")
    topic("worker", [state], "READ")
    g += [Grant("worker", "GROUP", app_id, "READ"), Grant("worker", "GROUP", app_id, "DESCRIBE")]
    g += [Grant("worker", "TRANSACTIONAL_ID", f"{app_id}-{p}", op) for p in range(PARTITIONS)
          for op in ("WRITE", "DESCRIBE")]
    # Archive: the table events it files. Audit (and replay --from-topic): the events it replays and
    # the settlements it checks.
    topic("archive", [events], "READ", "DESCRIBE")
    topic("audit", [events, prefix + "settlements"], "READ", "DESCRIBE")
    # ... and the worker group's committed offsets, the audit's cut of a live floor
    # (craps_streams/kafka/cut.py): DESCRIBE reads them, it cannot join the group or commit.
    g += [Grant("audit", "GROUP", app_id, "DESCRIBE")]
    # Viewers (tail, dashboards): the outputs, in throwaway groups of their own.
    topic("viewer", outputs, "READ", "DESCRIBE")
    g += [Grant("viewer", "GROUP", TAIL_GROUP_PREFIX, "READ", "PREFIXED")]
    # The faust read side (floor view): the outputs and states, and its own assignor, changelog
    # topics, groups and transactional ids, all named after its application ids.
    topic("floor", [*outputs, state], "READ", "DESCRIBE")
    topic("floor", [floor_app_id], "CREATE", "READ", "WRITE", "DESCRIBE", pattern="PREFIXED")
    g += [Grant("floor", "GROUP", floor_app_id, "READ", "PREFIXED"),
          Grant("floor", "GROUP", floor_app_id, "DESCRIBE", "PREFIXED"),
          Grant("floor", "TRANSACTIONAL_ID", floor_app_id, "WRITE", "PREFIXED"),
          Grant("floor", "TRANSACTIONAL_ID", floor_app_id, "DESCRIBE", "PREFIXED")]
    # The ledger: reads the outputs finance keeps (not the layout markers), in a group of its own
    # that only shares the partitions out: its positions live in its database, it commits nothing
    # to Kafka and writes nothing there.
    topic("ledger", ledger_topics(prefix), "READ", "DESCRIBE")
    g += [Grant("ledger", "GROUP", ledger_group(app_id), "READ"), Grant("ledger", "GROUP", ledger_group(app_id), "DESCRIBE")]
    return g


def ledger_topics(prefix: str) -> list[str]:
    """The topics the ledger reads: settlements, surveillance alerts, rejections, and the table
    events (for the tables' openings: the Rules Submissions the report's lines are keyed by)."""
    return [prefix + name for name in ("settlements", "surveillance", "rejections", "table-events")]


def ledger_group(app_id: str) -> str:
    return app_id + LEDGER_GROUP_SUFFIX


# ------------------------------------------------------------------ the administrator's client


def admin_client(bootstrap: str, timeout_s: float = 30.0, client_id: str = "craps-streams-admin"):
    from kafka.admin import KafkaAdminClient

    from craps_streams.kafka.settings import client_settings

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return KafkaAdminClient(**client_settings("admin", bootstrap), client_id=client_id)
        except Exception:  # NoBrokersAvailable while the broker is still starting
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.5)


def _username(role: str) -> str:
    """The role's principal. A role whose client config is not made yet (a broker started before
    the role existed: `kafka.sh secrets` then `kafka.sh users` make it) is granted under the name
    kafka.sh gives it: Kafka accepts ACLs for a principal that has no login yet."""
    try:
        return security_settings(role).get("sasl_plain_username", role)
    except SecurityConfigError:
        return {"controller": "table-controller", "floor": "floor-view"}.get(role, role)


def _usernames() -> dict[str, str]:
    return {role: _username(role) for role in ROLES}


def _acl(grant: Grant, usernames: dict[str, str]):
    from kafka.admin import ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePattern, ResourceType

    return ACL(f"User:{usernames[grant.role]}", "*", ACLOperation[grant.operation], ACLPermissionType.ALLOW,
               ResourcePattern(ResourceType[grant.resource], grant.name, ACLResourcePatternType[grant.pattern]))


def key_of_acl(acl) -> tuple:
    p = acl.resource_pattern
    return (acl.principal, acl.host, acl.operation.name, acl.permission_type.name,
            p.resource_type.name, p.resource_name, p.pattern_type.name)


def current_acls(admin) -> list:
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePatternFilter, ResourceType

    acls, error = admin.describe_acls(ACLFilter(
        principal=None, host=None, operation=ACLOperation.ANY, permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)))
    if getattr(error, "errno", 0):
        raise RuntimeError(f"describe_acls failed: {error}")
    return acls


def apply_grants(admin, grants: Iterable[Grant], timeout_s: float = 30.0) -> int:
    """Create the ACLs (idempotent) and wait until the broker's authorizer has them all (it takes
    about a second). Returns how many were new."""
    usernames = _usernames()
    wanted = {key_of_acl(a): a for a in (_acl(g, usernames) for g in grants)}
    have = {key_of_acl(a) for a in current_acls(admin)}
    missing = [a for k, a in wanted.items() if k not in have]
    if missing:
        result = admin.create_acls(missing)
        failed = result.get("failed") if isinstance(result, dict) else None
        if failed:
            raise RuntimeError(f"create_acls failed for {len(failed)} ACLs: {failed[:3]}")
    deadline = time.monotonic() + timeout_s
    while missing:
        have = {key_of_acl(a) for a in current_acls(admin)}
        if all(k in have for k in wanted):
            break
        if time.monotonic() > deadline:
            raise TimeoutError("the broker did not show the new ACLs in time")
        time.sleep(0.2)
    return len(missing)


def revoke_topics(admin, names: Iterable[str]) -> None:
    """Delete the LITERAL ACLs that name these topics (a deleted floor's), so a topic created later
    under the same name starts with no rights for anyone."""
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePatternFilter, ResourceType

    filters = [ACLFilter(principal=None, host=None, operation=ACLOperation.ANY, permission_type=ACLPermissionType.ANY,
                         resource_pattern=ResourcePatternFilter(ResourceType.TOPIC, n, ACLResourcePatternType.LITERAL))
               for n in names]
    if filters:
        admin.delete_acls(filters)


def grant_floor(admin, prefix: str, app_id: str) -> int:
    return apply_grants(admin, floor_grants(prefix, app_id))


def grant_as_admin(grants: Iterable[Grant], bootstrap: str | None = None) -> int:
    """Make `grants` as the administrator (apply_grants); nothing to grant on a plaintext bench
    broker (0)."""
    from craps_streams.kafka.settings import client_settings, default_bootstrap

    if client_settings("admin", bootstrap).get("security_protocol") == "PLAINTEXT":
        return 0
    admin = admin_client(bootstrap or default_bootstrap())
    try:
        return apply_grants(admin, grants)
    finally:
        admin.close()


def grant_application(prefix: str, app_id: str, bootstrap: str | None = None) -> int:
    """The floor's grants for one more application id on the topics of `prefix`, as the
    administrator (a benchmark's round on a fresh group and fresh transactional ids)."""
    return grant_as_admin(floor_grants(prefix, app_id), bootstrap)


def upsert_logins(admin, roles: Iterable[str] = ROLES) -> list[str]:
    """Create or update the SCRAM-SHA-512 login of each role from its client config."""
    from kafka.admin import ScramMechanism, UserScramCredentialUpsertion

    upserts, names = [], []
    for role in roles:
        s = security_settings(role)
        if s.get("security_protocol") != "SASL_SSL":
            continue
        upserts.append(UserScramCredentialUpsertion(s["sasl_plain_username"], ScramMechanism.SCRAM_SHA_512,
                                                    s["sasl_plain_password"], iterations=SCRAM_ITERATIONS))
        names.append(s["sasl_plain_username"])
    errors = {u: e for u, e in (admin.alter_user_scram_credentials(upserts) or {}).items() if e}
    if errors:
        raise RuntimeError(f"could not set the logins of {sorted(errors)}: {errors}")
    return names


_PASSWORD_FIELD = re.compile(r'(password=")((?:[^"\\]|\\.)*)(")')


def rotate_password(admin, role: str) -> None:
    """A new random password for `role`: set on the broker first, then written to the role's config.
    Clients already connected stay connected; new connections need the new password."""
    from kafka.admin import ScramMechanism, UserScramCredentialUpsertion

    path = config_path(role)
    username = security_settings(role)["sasl_plain_username"]
    password = secrets.token_urlsafe(30).replace("-", "x").replace("_", "y")
    errors = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion(username, ScramMechanism.SCRAM_SHA_512, password, iterations=SCRAM_ITERATIONS)])
    if errors and errors.get(username):
        raise RuntimeError(f"could not rotate {username}: {errors[username]}")
    text, n = _PASSWORD_FIELD.subn(lambda m: m.group(1) + password + m.group(3), path.read_text(), count=1)
    if n != 1:
        raise RuntimeError(f"{path}: no password field to replace")
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
