"""The archive's index (index.json, the only source of truth) and its offset ranges."""
from __future__ import annotations

import json
import os
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator


INDEX = "index.json"
UNDECODABLE_DIR = "undecodable"
INDEX_VERSION = 1


def day_of(ts) -> str:
    """The UTC day of an epoch-ms `ts` ("2026-01-01"); "undated" when it is not a usable time."""
    if type(ts) is not int:
        return "undated"
    try:
        return datetime.fromtimestamp(ts / 1000, tz=timezone.utc).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):
        return "undated"


def load_index(out_dir) -> dict:
    path = Path(out_dir) / INDEX
    if not path.exists():
        return {"version": INDEX_VERSION, "topic": None, "partitions": {}, "files": [], "runs": []}
    index = json.loads(path.read_text())
    if index.get("version") != INDEX_VERSION:
        raise ValueError(f"{path}: index version {index.get('version')!r}, expected {INDEX_VERSION}")
    return index


def _write_json_atomically(path: Path, obj) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "w", encoding="utf-8") as fo:
        json.dump(obj, fo, indent=1, sort_keys=True)
        fo.write("\n")
        fo.flush()
        os.fsync(fo.fileno())
    os.replace(tmp, path)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _add_offset(ranges: list, offset: int) -> None:
    if ranges and ranges[-1][1] + 1 == offset:
        ranges[-1][1] = offset
    else:
        ranges.append([offset, offset])


def _offsets(ranges) -> Iterator[int]:
    for first, last in ranges:
        yield from range(first, last + 1)

