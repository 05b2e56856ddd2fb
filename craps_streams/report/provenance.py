"""The provenance block: what a report was made from, so its figures can be made again.

The history (its kind and where it is; an archive's hash chain head and seal and the offsets it
holds; the topic offsets read; a file's SHA-256), the event times it spans, the key ring that
authenticated its events (key ids, never secrets), the software (package version, which rules
core) and the settings (calendar, investigation level, surveillance thresholds).
"""
from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path
from typing import Callable


def software() -> dict:
    from craps_streams import __version__
    from craps_streams.accelerator.rules import chosen

    return {"package": "craps-streams", "version": __version__, "rules_core": chosen().name,
            "python": platform.python_version()}


def file_digest(path: str) -> dict:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fo:
        for chunk in iter(lambda: fo.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return {"path": str(Path(path).resolve()), "bytes": size, "sha256": h.hexdigest()}


def archive_block(path: str) -> dict:
    from craps_streams.archive import load_index  # only for an archive: a JSON Lines report never needs it

    index = load_index(path)
    return {"path": str(Path(path).resolve()), "topic": index.get("topic"),
            "chain_head": index.get("chain_head"), "chain_seal": index.get("chain_seal"),
            "files": len(index.get("files", [])),
            "next_offsets": {str(p): v.get("next_offset") for p, v in sorted(index.get("partitions", {}).items(),
                                                                             key=lambda kv: int(kv[0]))}}


def history_block(kind: str, spec: str | None, extra: list, topic: str | None, hash_files: bool = True) -> dict:
    if kind == "archive":
        return {"kind": kind, "archive": archive_block(spec)}
    if kind == "topic":
        return {"kind": kind, "topic": topic}
    files = [spec, *extra]
    if spec == "-":
        return {"kind": kind, "files": [{"path": "stdin"}]}
    return {"kind": kind, "files": [file_digest(f) if hash_files else {"path": str(Path(f).resolve())} for f in files]}


def history_block_begun(kind: str, spec: str | None, extra: list, topic: str | None) -> Callable[[], dict]:
    """`history_block`, begun now in a thread of its own; call what it returns for the block. A
    report's history files are hashed while the pass reads them: hashlib and the file's reads let
    go of the interpreter's lock, so on a second core the digest costs the report no time."""
    if kind not in ("jsonl", "avro") or spec == "-":
        return lambda: history_block(kind, spec, extra, topic)
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="history-digest")
    future = pool.submit(history_block, kind, spec, extra, topic)
    pool.shutdown(wait=False)
    return future.result


def key_ring_block(ring) -> dict:
    ids = sorted(k.key_id for k in ring.keys) if ring is not None else []
    return {"keys": len(ids), "key_ids": ids,
            "key_ids_sha256": hashlib.sha256(json.dumps(ids).encode()).hexdigest()}


def settings_block(settings, thresholds: dict | None) -> dict:
    """The report's settings (`craps_streams.report.build.ReportSettings`) and the surveillance
    thresholds set explicitly."""
    return {**settings.calendar.describe(), "investigate_at": settings.investigate_at,
            "tables": sorted(settings.tables) if settings.tables else "all", "surveillance": thresholds or {}}
