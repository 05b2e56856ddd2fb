"""The command line's answers to what stops it: one or two lines saying what is wrong and what to
do, an exit code per kind (craps_streams/cli.py, docs/operating/cli.md), a traceback only with --debug."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

import pytest

from craps_streams.cli import EXIT_INTERNAL, explain_error
from tests.conftest import ROOT, free_port


def cli(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "craps_streams.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def answered(r: subprocess.CompletedProcess, code: int, *words: str) -> str:
    """The command failed with `code` and one or two lines on stderr naming `words`, no traceback."""
    assert r.returncode == code, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr
    return r.stderr


BROKER_COMMANDS = [
    ("tail", "--limit", "1"),
    ("replay", "--from-topic", "--only", "none"),
    ("audit", "--from-topic", "--settlements-topic"),
    ("archive", "--out", "{tmp}/archive"),
    ("produce", "{tmp}/floor.jsonl", "--quiet"),
    ("simulate", "--live", "--tables", "1", "--hours", "0.01"),
    ("topics", "--list"),
]


@pytest.mark.parametrize("command", BROKER_COMMANDS, ids=[c[0] for c in BROKER_COMMANDS])
def test_no_broker_listening_is_one_answer_within_seconds(command, tmp_path):
    (tmp_path / "floor.jsonl").write_text("")
    args = [a.format(tmp=tmp_path) for a in command]
    started = time.monotonic()
    r = cli(*args, env={"CRAPS_KAFKA_BOOTSTRAP": f"127.0.0.1:{free_port()}"})
    assert time.monotonic() - started < 15  # kafka-python alone would retry for 30 s
    answered(r, 5, "cannot reach the Kafka broker", "Connection refused", "CRAPS_KAFKA_BOOTSTRAP")


def test_debug_adds_the_traceback():
    r = cli("tail", "--limit", "1", "--debug", env={"CRAPS_KAFKA_BOOTSTRAP": f"127.0.0.1:{free_port()}"})
    assert r.returncode == 5 and "Traceback" in r.stderr and "BrokerUnreachable" in r.stderr
    r = cli("--debug", "tail", "--limit", "1", env={"CRAPS_KAFKA_BOOTSTRAP": f"127.0.0.1:{free_port()}"})
    assert r.returncode == 5 and "Traceback" in r.stderr


def test_a_missing_secrets_directory(tmp_path):
    env = {"CRAPS_SECRETS_DIR": str(tmp_path / "no-secrets"), "CRAPS_KAFKA_CONFIG": ""}
    r = cli("tail", "--limit", "1", env=env)
    answered(r, 4, "no Kafka client config for role 'viewer'", str(tmp_path / "no-secrets"), "kafka.sh up")


def test_a_missing_key_ring(tmp_path):
    (tmp_path / "floor.jsonl").write_text("")
    r = cli("replay", str(tmp_path / "floor.jsonl"), env={"CRAPS_TABLE_KEYS": str(tmp_path / "none.json")})
    answered(r, 4, "no key ring at", "keys init")
    r = cli("keys", "list", env={"CRAPS_TABLE_KEYS": str(tmp_path / "none.json")})
    answered(r, 4, "no key ring at")


def test_unreadable_files(tmp_path):
    answered(cli("replay", str(tmp_path / "nope.jsonl")), 3, "nope.jsonl: no such file or directory")
    answered(cli("replay", str(tmp_path / "nope.avro")), 3, "nope.avro: no such file or directory")
    answered(cli("audit", "--history", str(tmp_path / "nope.jsonl"), "--recorded", str(tmp_path / "r.jsonl")),
             3, "nope.jsonl")
    (tmp_path / "floor.jsonl").write_text("")
    answered(cli("audit", "--history", str(tmp_path / "floor.jsonl"), "--recorded", str(tmp_path / "r.jsonl")),
             3, "r.jsonl: no such file or directory")
    answered(cli("simulate", "--tables", "1", "--hours", "0.01", "-o", str(tmp_path / "no" / "dir" / "x.jsonl")),
             3, "no such file or directory")
    answered(cli("archive", "verify", str(tmp_path / "no-archive")), 3, "no-archive")


def test_bad_arguments(tmp_path):
    assert cli("tail", "--limit", "many").returncode == 2
    answered(cli("simulate", "--tables", "0"), 2, "--tables >= 1")
    answered(cli("replay"), 2, "give a history")
    answered(cli("replay", "--since", "yesterday-ish", str(tmp_path)), 2)
    answered(cli("replay", str(tmp_path)), 2, "not an archive")


def test_an_unexpected_error_is_one_line_that_says_so():
    code, message = explain_error(RuntimeError("the dealer dropped the dice"))
    assert code == EXIT_INTERNAL and "internal error: RuntimeError: the dealer dropped the dice" in message
    assert "--debug" in message and len(message.splitlines()) == 2


@pytest.mark.kafka
def test_refused_credentials(kafka, tmp_path):
    """A client config whose password the broker does not know: refused, said at once."""
    from craps_streams.kafka.security import config_path, read_properties

    real = config_path("viewer")
    props = read_properties(real)
    ca = pathlib.Path(props["ssl.truststore.location"])
    ca = ca if ca.is_absolute() else (real.parent / ca).resolve()
    text = real.read_text()
    start = text.index('password="') + len('password="')
    bad = text[:start] + "not-the-password" + text[text.index('"', start):]
    bad = bad.replace(f"ssl.truststore.location={props['ssl.truststore.location']}", f"ssl.truststore.location={ca}")
    config = tmp_path / "viewer.properties"
    config.write_text(bad)
    config.chmod(0o600)
    started = time.monotonic()
    r = cli("tail", "--limit", "1", env={"CRAPS_KAFKA_CONFIG": str(config), "CRAPS_KAFKA_BOOTSTRAP": kafka})
    assert time.monotonic() - started < 15
    answered(r, 6, "the broker refused the login of role 'viewer'", str(config))
