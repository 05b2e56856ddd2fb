"""A broker's first start on a fresh machine (a private broker with a secrets directory of its own):
the CA, the broker certificate and the roles' credentials are made, kept private (directory 0700,
files 0600) and out of git, never written to a log; the roles log in; a password rotated while the
broker runs takes effect at once for new connections."""
from __future__ import annotations

import os
import stat
import subprocess

import pytest
from kafka import KafkaProducer

from craps_streams.kafka.access import admin_client
from craps_streams.kafka.security import ROLES, security_settings
from tests.conftest import ROOT
from tests.faults.harness import PrivateBroker

pytestmark = pytest.mark.kafka


def password_of(secrets, role: str) -> str:
    text = (secrets / "clients" / f"{role}.properties").read_text()
    return text.split('password="', 1)[1].split('"', 1)[0]


def test_first_start_makes_private_secrets_and_logs_none(tmp_path, monkeypatch):
    secrets = tmp_path / "secrets"
    monkeypatch.setenv("CRAPS_SECRETS_DIR", str(secrets))
    monkeypatch.delenv("CRAPS_KAFKA_CONFIG", raising=False)
    # This test's clients log in with the private broker's secrets (what the edge hands over).
    from craps_streams.kafka import security

    monkeypatch.setattr(security, "_broker", [security.Broker(secrets_dir=secrets)])
    broker = PrivateBroker(tmp_path)
    broker.env["CRAPS_SECRETS_DIR"] = str(secrets)
    with broker:
        # Private: the directory and every file in it, the rendered broker config too.
        assert stat.S_IMODE(secrets.stat().st_mode) == 0o700
        files = [p for p in secrets.rglob("*") if p.is_file()]
        assert {p.name for p in files} >= {"ca.crt", "ca.key", "broker.pem", "broker.password", "kraft.password",
                                           *(f"{r}.properties" for r in ROLES)}
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files), \
            {p.name: oct(p.stat().st_mode) for p in files}
        data = tmp_path / "kafka-private"
        assert stat.S_IMODE((data / "server.properties").stat().st_mode) == 0o600
        # The certificate names the broker as clients reach it, and is signed by the local CA.
        cert = subprocess.run(["openssl", "x509", "-in", str(secrets / "broker.crt"), "-noout", "-ext",
                               "subjectAltName"], check=True, capture_output=True, text=True).stdout
        assert "IP Address:127.0.0.1" in cert and "DNS:localhost" in cert
        subprocess.run(["openssl", "verify", "-CAfile", str(secrets / "ca.crt"), str(secrets / "broker.crt")],
                       check=True, capture_output=True)

        # Every role logs in (a producer's metadata request needs no right but a login).
        for role in ROLES:
            p = KafkaProducer(bootstrap_servers=broker.bootstrap, **security_settings(role), max_block_ms=20000)
            p.close()

        # Rotation while the broker runs: the new password works, the old one no longer does.
        old = password_of(secrets, "viewer")
        r = subprocess.run(["bash", str(ROOT / "infra" / "kafka" / "kafka.sh"), "rotate-password", "viewer"],
                           env=broker.env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        new = password_of(secrets, "viewer")
        assert new != old and new not in r.stderr + r.stdout
        KafkaProducer(bootstrap_servers=broker.bootstrap, **security_settings("viewer"), max_block_ms=20000).close()
        with pytest.raises(Exception):
            KafkaProducer(bootstrap_servers=broker.bootstrap, max_block_ms=3000, bootstrap_timeout_ms=3000,
                          request_timeout_ms=3000, **{**security_settings("viewer"), "sasl_plain_password": old})

        # No secret in any log or file of the data directory but the 0600 config: no password, no
        # SCRAM salt (StorageTool's output is never kept).
        admin = admin_client(broker.bootstrap)
        admin.close()
        secret_values = [password_of(secrets, r) for r in ROLES] + [old] + [
            (secrets / n).read_text().strip() for n in ("broker.password", "kraft.password")]
        for path in data.rglob("*"):  # the broker's log, its metadata and topic data: no password in clear
            if not path.is_file() or path.name == "server.properties":
                continue
            text = path.read_bytes().decode("utf-8", "replace")
            leaked = [i for i, v in enumerate(secret_values) if v in text]
            assert not leaked, f"{path} holds secret #{leaked}"
            if path.parent == data:  # kafka.log and the like: not even StorageTool's salts
                assert "salt" not in text.lower(), f"{path} mentions salts"
        assert not (data / "format.log").exists()

    # Git never sees them: the directory ignores itself, and the repository ignores .secrets/.
    assert (secrets / ".gitignore").read_text().strip() == "*"
    r = subprocess.run(["git", "check-ignore", "-q", str(ROOT / ".secrets" / "ca.key")], cwd=ROOT)
    assert r.returncode == 0
    assert os.environ.get("CRAPS_SECRETS_DIR") == str(secrets)
