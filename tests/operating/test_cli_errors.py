"""The command line's answers to what stops it: one or two lines saying what is wrong and what to
do, an exit code per kind (craps_streams/cli/errors.py, docs/operating/cli.md), a traceback only with --debug."""
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
    assert f"craps-streams {command[0]}: " in r.stderr  # one prefix style for every command
    port = r.stderr.split("no Kafka broker answers at 127.0.0.1:", 1)[1].split(":", 1)[0]
    assert port.isdigit() and f"127.0.0.1:{port}: Connection refused" in r.stderr


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
    answered(cli("simulate", "--tables", "0"), 2, "craps-streams simulate: --tables must be 1 or more, got 0")
    answered(cli("simulate", "--bad-rate", "1.5", "--speed", "0"), 2,
             "--speed must be more than 0, got 0", "--bad-rate must be in 0..1, got 1.5")
    r = answered(cli("simulate", "--hours", "-2"), 2, "--hours must be more than 0, got -2")
    assert "--tables" not in r and "--speed" not in r  # only what was wrong
    answered(cli("replay"), 2, "give a history")
    answered(cli("replay", "--since", "yesterday-ish", str(tmp_path)), 2)
    answered(cli("replay", str(tmp_path)), 2, "not an archive")


def test_every_command_answers_in_one_prefix_style(tmp_path):
    """`craps-streams <command>: ...` whatever stops it: a usage error, a missing key ring, a bad setting."""
    answered(cli("replay"), 2, "craps-streams replay: give a history")
    answered(cli("replay", "--only", "dice", str(tmp_path)), 2, "craps-streams replay: --only:")
    answered(cli("audit", "--from-topic"), 2, "craps-streams audit: --recorded")
    answered(cli("archive"), 2, "craps-streams archive: --out DIR")
    answered(cli("keys", "add", "--tables", ","), 2, "craps-streams keys add: --tables")
    answered(cli("report", str(tmp_path / "x.jsonl"), "--investigate-at", "2"), 2,
             "craps-streams report: --investigate-at", "got 2")
    answered(cli("transactions", "--abort", "nonsense"), 2, "craps-streams transactions: --abort takes")
    (tmp_path / "floor.jsonl").write_text("")
    answered(cli("replay", str(tmp_path / "floor.jsonl"), env={"CRAPS_TABLE_KEYS": str(tmp_path / "none.json")}),
             4, "craps-streams replay: no key ring at")


def test_a_setting_that_is_not_valid_is_a_usage_error():
    r = cli("odds", env={"CRAPS_WEB_PORT": "many"})
    answered(r, 2, "craps-streams odds: the setting CRAPS_WEB_PORT='many' is not valid")


def test_status_once_with_nothing_up_is_unreachable(tmp_path):
    """No worker, view or Prometheus answers: exit 5, as a command without its broker."""
    free = [free_port() for _ in range(3)]
    r = cli("status", "--once", "--plain", "--metrics-url", f"http://127.0.0.1:{free[0]}/metrics",
            "--floor-url", f"http://127.0.0.1:{free[1]}/", "--prometheus-url", f"http://127.0.0.1:{free[2]}")
    assert r.returncode == 5, (r.returncode, r.stdout, r.stderr)


def test_status_once_code_counts_the_sources():
    from types import SimpleNamespace

    from craps_streams.cli.watch import once_code

    def snap(*errors):
        return SimpleNamespace(sources=[SimpleNamespace(error=e) for e in errors])

    assert once_code(snap(None, None)) == 0
    assert once_code(snap(None, "refused")) == 1
    assert once_code(snap("refused", "refused")) == 5


def test_the_report_line_agrees_in_number():
    from craps_streams.cli.report import summary_line

    def report(flagged, tables, rejections, alerts):
        return {"title": "Gaming day", "floor": [{"wager": "all", "scope": "day", "handle_cents": 100,
                                                  "house_win_cents": 5}],
                "kinds": [{"investigate": i < flagged} for i in range(3)],
                "tables": [{"table_id": f"T{i}"} for i in range(tables)],
                "exceptions": {"rejections": {"count": rejections}, "alerts": {"count": alerts}}}

    one = summary_line(report(1, 1, 1, 1))
    assert "1 line flagged" in one and "over 1 table;" in one and "1 rejection," in one and one.endswith("1 alert")
    two = summary_line(report(2, 2, 0, 2))
    assert "2 lines flagged" in two and "over 2 tables;" in two and "0 rejections," in two and two.endswith("2 alerts")


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


def test_the_report_line_of_a_range_is_the_periods():
    from craps_streams.cli.report import summary_line

    def row(scope, handle):
        return {"wager": "all", "scope": scope, "handle_cents": handle, "house_win_cents": handle // 10}

    report = {"title": "Gaming days", "kinds": [], "tables": [{"table_id": "T001"}],
              "floor": [row("day:2025-12-31", 100), row("day:2026-01-01", 300), row("period", 400),
                        row("month_to_date", 300), row("year_to_date", 300)],
              "exceptions": {"rejections": {"count": 0}, "alerts": {"count": 0}}}
    assert "handle $4.00, house win $0.40" in summary_line(report)
