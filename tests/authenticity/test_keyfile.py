"""The key ring file: 0600 in a 0700 directory, refused when others can read it, never in git."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from craps_streams.authenticity import KeyRingError, TableSigner, TagCheck
from craps_streams.authenticity import keyfile
from craps_streams.rules.events import DiceThrown

ROOT = Path(__file__).resolve().parents[2]


def test_init_makes_a_private_ring_once(tmp_path):
    path = tmp_path / "secrets" / "table-keys.json"
    ring, made = keyfile.init(path, ["T001", "T002"])
    assert made and len(ring.keys) == 2
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
    again, made = keyfile.init(path, ["T009"])
    assert not made and again == ring  # never overwritten
    e = TableSigner(again).sign(DiceThrown("T002", 1, 0, 1, 1))
    assert TagCheck(keyfile.load(path)).problem(e) is None
    assert ring.keys[0].secret != ring.keys[1].secret


def test_a_ring_readable_by_others_is_refused(tmp_path):
    path = tmp_path / "table-keys.json"
    keyfile.init(path, ["T001"])
    os.chmod(path, 0o644)
    with pytest.raises(KeyRingError, match="readable by others"):
        keyfile.load(path)


def test_a_missing_or_foreign_file_is_refused(tmp_path):
    with pytest.raises(KeyRingError, match="keys init"):
        keyfile.load(tmp_path / "none.json")
    path = tmp_path / "x.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b'{"keys": []}')
    os.close(fd)
    with pytest.raises(KeyRingError, match="not a key ring"):
        keyfile.load(path)


def test_secrets_are_git_ignored():
    result = subprocess.run(["git", "check-ignore", "-q", ".secrets/table-keys.json"], cwd=ROOT)
    assert result.returncode == 0


def test_the_secret_is_never_printed():
    key = keyfile.new_key({"T1"})
    assert key.secret.hex() not in repr(key) and "secret" not in repr(key)
