"""Tampering with an archive: `archive verify` and `audit` name the changed, removed, reordered or
inserted file or record (the hash chain of `craps_streams.archive.chain`)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import fastavro
import pytest

from craps_streams.codec import read_container
from craps_streams.archive import ArchiveWriter, load_index, verify
from craps_streams.archive.chain import GENESIS, verify_chain
from tests.replay.replay_fixtures import floor_lines, messages_of

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "craps.table-events"


@pytest.fixture(scope="module")
def archived(tmp_path_factory):
    """An archive of a small floor (bad input included) in two runs, and its settlements."""
    base = tmp_path_factory.mktemp("chain")
    lines = floor_lines(tables=3, hours=1.0, seed=11, bad_rate=0.03)
    (base / "floor.jsonl").write_text("\n".join(lines) + "\n")
    messages = messages_of(lines)
    out = base / "archive"
    half = len(messages) // 2
    for part in (messages[:half], messages[half:]):  # two runs: the chain spans them
        w = ArchiveWriter(out, TOPIC, codec="null")
        for p, o, k, v in part:
            w.add(p, o, v, k)
        w.commit()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    replay = subprocess.run([sys.executable, "-m", "craps_streams.cli", "replay", "--accept-untagged", str(out),
                             "--only", "settlements", "-o", str(base / "settled.jsonl"), "--no-progress"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert replay.returncode == 0, replay.stderr
    return base, out, env


@pytest.fixture
def archive(archived, tmp_path):
    base, out, env = archived
    copy = tmp_path / "archive"
    shutil.copytree(out, copy)
    return copy, base / "settled.jsonl", env


def _cli(env, *args):
    return subprocess.run([sys.executable, "-m", "craps_streams.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def _event_files(d: Path) -> list[dict]:
    return [e for e in load_index(d)["files"] if e["kind"] == "events" and e["count"] >= 3]


def _rewrite(path: Path, change) -> None:
    """Rewrite an events file with its records passed through `change(records) -> records`, as
    someone with write access to the archive would (a valid container, new bytes)."""
    with open(path, "rb") as fo:
        reader = fastavro.reader(fo)
        schema, records = reader.writer_schema, list(reader)
    with open(path, "wb") as fo:
        fastavro.writer(fo, schema, change(records), codec="null")


def _named(archive, kind: str, name: str, position: int | None = None) -> None:
    """`archive verify` and `audit` both fail and name the file (and the record position)."""
    d, settled, env = archive
    v = verify(d)
    assert not v.archive_ok
    kinds = {(f.kind, f.file, f.position) for f in v.chain.findings}
    assert any(k == kind and f == name and (position is None or p == position) for k, f, p in kinds), kinds
    result = _cli(env, "archive", "verify", str(d))
    assert result.returncode == 1
    assert f"TAMPERED {kind}: {name}" in result.stdout, result.stdout
    if position is not None:
        assert f"record {position}" in result.stdout or f"position {position}" in result.stdout
    audit = _cli(env, "audit", "--accept-untagged", "--history", str(d), "--recorded", str(settled))
    assert audit.returncode == 1
    assert f"TAMPERED {kind}: {name}" in audit.stdout, audit.stdout + audit.stderr
    # in processes (the seq walk, the audit's quick pass by partition group): the same answers
    many = _cli(env, "archive", "verify", str(d), "--jobs", "2")
    assert (many.returncode, many.stdout) == (result.returncode, result.stdout)
    many = _cli(env, "audit", "--accept-untagged", "--history", str(d), "--recorded", str(settled), "--jobs", "2")
    assert (many.returncode, many.stdout) == (audit.returncode, audit.stdout), many.stderr


def test_an_untouched_archive_is_intact(archive):
    d, settled, env = archive
    v = verify(d)
    assert v.archive_ok and v.chain.ok and v.chain.chained == len(load_index(d)["files"]) and not v.chain.unchained
    index = load_index(d)
    assert index["files"][0]["prev"] == GENESIS and index["chain_head"] == index["files"][-1]["chain"]
    result = _cli(env, "archive", "verify", str(d))
    assert result.returncode == 0 and "chain INTACT" in result.stdout
    audit = _cli(env, "audit", "--accept-untagged", "--history", str(d), "--recorded", str(settled))
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "chain INTACT" in audit.stdout and "audit CLEAN" in audit.stdout


def test_an_altered_record_is_named(archive):
    d, _, env = archive
    e = _event_files(d)[0]

    def change(records):
        records[2]["seq"] += 1000  # one field of one record
        return records
    _rewrite(d / e["path"], change)
    _named(archive, "changed_record", e["path"], 2)


def test_a_removed_record_is_named(archive):
    d, _, env = archive
    e = _event_files(d)[0]
    _rewrite(d / e["path"], lambda rs: rs[:1] + rs[2:])
    _named(archive, "removed_record", e["path"], 1)


def test_reordered_records_are_named(archive):
    d, _, env = archive
    e = _event_files(d)[0]
    _rewrite(d / e["path"], lambda rs: [rs[1], rs[0], *rs[2:]])
    _named(archive, "reordered_records", e["path"], 0)


def test_an_inserted_record_is_named(archive):
    d, _, env = archive
    e = _event_files(d)[0]
    _rewrite(d / e["path"], lambda rs: [*rs[:2], {**rs[1], "seq": rs[1]["seq"] + 500}, *rs[2:]])
    _named(archive, "inserted_record", e["path"], 2)


def test_a_removed_file_is_named(archive):
    d, _, env = archive
    e = _event_files(d)[-1]
    (d / e["path"]).unlink()
    _named(archive, "removed_file", e["path"])


def test_an_inserted_file_is_named(archive):
    d, _, env = archive
    e = _event_files(d)[0]
    extra = (d / e["path"]).with_name("p0-000000999999.avro")
    shutil.copy(d / e["path"], extra)
    _named(archive, "inserted_file", extra.relative_to(d).as_posix())


def test_a_removed_index_entry_is_named(archive):
    d, _, env = archive
    index = load_index(d)
    gone = index["files"].pop(1)
    (d / "index.json").write_text(json.dumps(index))
    _named(archive, "broken_link", index["files"][1]["path"])
    assert gone["path"]  # its file is then a file the index does not name
    assert any(f.kind == "inserted_file" and f.file == gone["path"] for f in verify(d).chain.findings)


def test_reordered_index_entries_are_named(archive):
    d, _, env = archive
    index = load_index(d)
    index["files"][0], index["files"][1] = index["files"][1], index["files"][0]
    (d / "index.json").write_text(json.dumps(index))
    _named(archive, "broken_link", index["files"][0]["path"])


def test_an_altered_index_entry_is_named(archive):
    d, _, env = archive
    index = load_index(d)
    index["files"][0]["count"] -= 1
    (d / "index.json").write_text(json.dumps(index))
    _named(archive, "changed_entry", index["files"][0]["path"])


def test_an_archive_from_before_the_chain_says_unchained(archive):
    d, _, env = archive
    index = load_index(d)
    for e in index["files"]:
        for k in ("sha256", "digests_sha256", "prev", "chain"):
            e.pop(k)
    index.pop("chain_head")
    (d / "index.json").write_text(json.dumps(index))
    v = verify(d)
    assert v.archive_ok and v.chain.chained == 0 and len(v.chain.unchained) == len(index["files"])
    result = _cli(env, "archive", "verify", str(d))
    assert result.returncode == 0
    assert "chain UNCHAINED" in result.stdout and "unchained:" in result.stdout
    # archiving more into it starts the chain after the unchained files
    w = ArchiveWriter(d, TOPIC)
    p = 0
    w.add_record(p, w.start_offset(p), {"type": "TableClosed", "table_id": "T009", "seq": 1, "ts": 1})
    w.commit()
    report = verify_chain(d, load_index(d))
    assert report.ok and report.chained == 1 and len(report.unchained) == len(index["files"])


def test_records_read_back_match_their_digests(archive):
    d, _, _ = archive
    from craps_streams.archive.chain import record_digest, sidecar_of

    for e in _event_files(d):
        want = sidecar_of(d / e["path"]).read_text().split()
        assert [record_digest(r) for r in read_container(d / e["path"])] == want


def test_a_consistent_rewrite_is_caught_by_the_seal(tmp_path):
    """Someone who rewrites a record and then every digest, the chain and the head consistently
    passes the chain alone; the seal (HMAC of the head with the archiver's key) catches it."""
    import hashlib

    from craps_streams.archive.chain import entry_chain, file_sha256, record_digest, seal, sidecar_of
    from craps_streams.authenticity import keyfile

    key_path = tmp_path / "secrets" / "archive-key"
    key = keyfile.archive_key(key_path, create=True)
    assert oct(key_path.stat().st_mode & 0o777) == "0o600"
    d = tmp_path / "sealed"
    w = ArchiveWriter(d, TOPIC, codec="null", seal_key=key)
    for p, o, k, v in messages_of(floor_lines(tables=2, hours=0.5, seed=3, bad_rate=0.0)):
        w.add(p, o, v, k)
    w.commit()
    index = load_index(d)
    assert index["chain_seal"] == seal(index["chain_head"], key)
    assert verify(d, key=key).chain.sealed == "checked" and verify(d, key=key).archive_ok

    e = next(x for x in index["files"] if x["kind"] == "events" and x["count"] > 3)
    path = d / e["path"]

    def change(records):
        records[1]["seq"] += 1000
        return records
    _rewrite(path, change)
    side = ("".join(record_digest(r) + "\n" for r in read_container(path))).encode()
    sidecar_of(path).write_bytes(side)
    e["sha256"], e["digests_sha256"] = file_sha256(path), hashlib.sha256(side).hexdigest()
    prev = "0" * 64
    for x in index["files"]:
        x["prev"] = prev
        x["chain"] = prev = entry_chain(prev, x)
    index["chain_head"] = prev
    (d / "index.json").write_text(json.dumps(index))

    assert verify(d).chain.ok  # the chain alone cannot tell
    v = verify(d, key=key)
    assert not v.archive_ok and [f.kind for f in v.chain.findings] == ["seal_mismatch"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CRAPS_ARCHIVE_KEY": str(key_path)}
    result = _cli(env, "archive", "verify", str(d))
    assert result.returncode == 1 and "TAMPERED seal_mismatch: index.json" in result.stdout
    index.pop("chain_seal")
    (d / "index.json").write_text(json.dumps(index))
    assert [f.kind for f in verify(d, key=key).chain.findings] == ["seal_missing"]
