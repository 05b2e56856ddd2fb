"""The key ring file: JSON in a git-ignored secrets directory, readable by its owner only.

Location: the caller's (the settings CRAPS_TABLE_KEYS, else `<CRAPS_SECRETS_DIR or ./.secrets>/table-keys.json`:
craps_streams/settings.py). The directory is made 0700 and the file 0600 (written to a temporary file, then renamed, so a reader
never sees half a ring); a ring that group or others may read is refused, as ssh refuses such a
key, because anyone who can read it can forge any table's events.

Format (version 1):

    {"format": "craps-streams table keys", "version": 1,
     "keys": [{"key_id": "T001.k20261201.3f9a", "tables": ["T001"], "secret": "<base64url, 32 bytes>",
               "not_before": 0, "not_after": null, "created": "2026-12-01T00:30:00+00:00"}, ...]}
"""
from __future__ import annotations

import base64
import json
import os
import secrets
import stat
import uuid
from datetime import datetime, timezone
from pathlib import Path

from craps_streams.authenticity.keyring import SECRET_BYTES, KeyRing, KeyRingError, TableKey

FORMAT = "craps-streams table keys"
VERSION = 1


def new_secret() -> bytes:
    return secrets.token_bytes(SECRET_BYTES)


def new_key_id(table_label: str, at_ms: int) -> str:
    """`<table or group>.k<UTC date of at>.<random>`: readable in a rejection, unique in the ring."""
    day = datetime.fromtimestamp(max(at_ms, 0) / 1000, tz=timezone.utc).strftime("%Y%m%d")
    return f"{table_label[:40]}.k{day}.{secrets.token_hex(3)}"


def new_key(tables, at_ms: int = 0, label: str | None = None) -> TableKey:
    tables = frozenset(tables)
    label = label or (next(iter(tables)) if len(tables) == 1 else f"group{len(tables)}")
    return TableKey(new_key_id(label, at_ms), new_secret(), tables, at_ms, None,
                    datetime.now(timezone.utc).isoformat(timespec="seconds"))


def _b64(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode("ascii")


def _unb64(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def ring_to_json(ring: KeyRing) -> dict:
    return {"format": FORMAT, "version": VERSION, "keys": [
        {"key_id": k.key_id, "tables": sorted(k.tables), "secret": _b64(k.secret), "not_before": k.not_before,
         "not_after": k.not_after, "created": k.created} for k in ring.keys]}


def ring_from_json(obj) -> KeyRing:
    if type(obj) is not dict or obj.get("format") != FORMAT or obj.get("version") != VERSION:
        raise KeyRingError(f"not a key ring of format {FORMAT!r} version {VERSION}")
    keys = []
    for k in obj.get("keys", ()):
        try:
            keys.append(TableKey(k["key_id"], _unb64(k["secret"]), frozenset(k["tables"]), int(k["not_before"]),
                                 None if k.get("not_after") is None else int(k["not_after"]), k.get("created", "")))
        except (KeyError, TypeError, ValueError) as e:
            raise KeyRingError(f"a key of the ring is not readable: {type(e).__name__}: {e}") from None
    return KeyRing(tuple(keys))


def load(path: Path | str) -> KeyRing:
    """The key ring at `path`; KeyRingError if it is missing, readable
    by group or others, or not a key ring."""
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise KeyRingError(f"no key ring at {path}: make the dev floor's with `craps-streams keys init`") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyRingError(f"{path} is readable by others (mode {stat.S_IMODE(st.st_mode):o}): "
                           "chmod 600 it (anyone who reads it can forge events)")
    try:
        return ring_from_json(json.loads(path.read_text(encoding="utf-8")))
    except ValueError as e:
        raise KeyRingError(f"{path}: {e}") from None


def save(ring: KeyRing, path: Path | str) -> Path:
    """Write the ring (0600, directory 0700, atomically); the path written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fo:
            json.dump(ring_to_json(ring), fo, indent=1, sort_keys=True)
            fo.write("\n")
            fo.flush()
            os.fsync(fo.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def archive_key(path: Path | str, create: bool = False) -> bytes | None:
    """The archiver's key that seals an archive's chain head (`craps_streams.archive.chain`): 32 bytes,
    base64url in a 0600 file; None when there is none (and `create` is false). Refused, like the
    key ring, when others can read it."""
    path = Path(path)
    if not path.exists():
        if not create:
            return None
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fo:
            fo.write(_b64(new_secret()) + "\n")
    if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyRingError(f"{path} is readable by others: chmod 600 it")
    key = _unb64(path.read_text(encoding="ascii").strip())
    if len(key) < SECRET_BYTES:
        raise KeyRingError(f"{path}: an archive key of {len(key)} bytes, at least {SECRET_BYTES}")
    return key


def dev_floor_tables(n: int) -> list[str]:
    """The simulator's table ids T001, T002, ... (`craps_streams.sim.floor`)."""
    return [f"T{i:03d}" for i in range(1, n + 1)]


def init(path: Path | str, tables=None, at_ms: int = 0) -> tuple[KeyRing, bool]:
    """The ring at `path`, made if missing (one key per table, valid from `at_ms`); (ring, made)."""
    path = Path(path)
    if path.exists():
        return load(path), False
    ring = KeyRing(tuple(new_key({t}, at_ms) for t in (tables if tables is not None else dev_floor_tables(1000))))
    save(ring, path)
    return ring, True
