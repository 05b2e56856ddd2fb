"""A PostgreSQL of the tests' own: Debian's package, a data directory in a temporary directory,
loopback only, TLS on, one login per role (the project's way: docs/operating/ledger.md).

    with running_postgres() as pg:
        pg.url("ledger")       # postgresql+psycopg://ledger:...@127.0.0.1:PORT/ledger?sslmode=verify-full...

initdb refuses root: as root, the cluster belongs to the `postgres` user and its tools run under
runuser (the notes: journal-ledger-timeouts.md). The server's certificate is signed by a CA made
here, and clients verify it (sslmode=verify-full); pg_hba.conf accepts only hostssl with SCRAM.
Roles: `ledger` owns the `ledger` database and writes it; `finance` may only read it.
"""
from __future__ import annotations

import contextlib
import glob
import os
import pathlib
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

from tests.conftest import free_port


def bin_dir() -> pathlib.Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    assert found, "PostgreSQL is not installed (apt-get install -y postgresql; infra/setup.sh test does)"
    return pathlib.Path(found[-1]).parent


@dataclass
class Postgres:
    dir: pathlib.Path
    port: int
    passwords: dict = field(default_factory=dict)

    @property
    def ca(self) -> pathlib.Path:
        return self.dir / "ca.crt"

    def url(self, role: str, database: str = "ledger") -> str:
        return (f"postgresql+psycopg://{role}:{self.passwords[role]}@127.0.0.1:{self.port}/{database}"
                f"?sslmode=verify-full&sslrootcert={self.ca}")

    def _as_postgres(self, *args: str, **kw) -> subprocess.CompletedProcess:
        cmd = [*args] if os.geteuid() != 0 else ["runuser", "-u", "postgres", "--", *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)
        assert done.returncode == 0, f"{' '.join(args)}: {done.stderr or done.stdout}"
        return done

    def ctl(self, action: str) -> None:
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1"
        self._as_postgres(str(bin_dir() / "pg_ctl"), "-D", str(self.dir / "data"), "-o", opts,
                          "-l", str(self.dir / "log"), "-w", action)

    def psql(self, sql: str, database: str = "postgres") -> str:
        env = {**os.environ, "PGPASSWORD": self.passwords["postgres"], "PGSSLMODE": "verify-full",
               "PGSSLROOTCERT": str(self.ca)}
        done = subprocess.run([str(bin_dir() / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                               "-d", database, "-v", "ON_ERROR_STOP=1", "-qAt", "-f", "-"],
                              input=sql, capture_output=True, text=True, timeout=60, env=env)
        assert done.returncode == 0, f"psql: {done.stderr}"
        return done.stdout

    def create_ledger_database(self, name: str) -> None:
        """A database `ledger` writes and `finance` only reads (docs/operating/ledger.md, Roles)."""
        self.psql(f"CREATE DATABASE {name} OWNER ledger;\nREVOKE ALL ON DATABASE {name} FROM PUBLIC;\n"
                  f"GRANT CONNECT ON DATABASE {name} TO ledger, finance;")
        self.psql("REVOKE ALL ON SCHEMA public FROM PUBLIC; GRANT ALL ON SCHEMA public TO ledger; "
                  "GRANT USAGE ON SCHEMA public TO finance; "
                  "ALTER DEFAULT PRIVILEGES FOR ROLE ledger IN SCHEMA public GRANT SELECT ON TABLES TO finance;",
                  database=name)


def _tls(d: pathlib.Path) -> None:
    def ssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    ssl("req", "-x509", "-new", "-newkey", "rsa:2048", "-noenc", "-keyout", str(d / "ca.key"), "-out", str(d / "ca.crt"),
        "-days", "2", "-subj", "/CN=craps-streams test postgres CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    ssl("req", "-new", "-newkey", "rsa:2048", "-noenc", "-keyout", str(d / "server.key"), "-out", str(d / "server.csr"),
        "-subj", "/CN=127.0.0.1")
    (d / "ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    ssl("x509", "-req", "-in", str(d / "server.csr"), "-CA", str(d / "ca.crt"), "-CAkey", str(d / "ca.key"),
        "-CAcreateserial", "-days", "2", "-extfile", str(d / "ext"), "-out", str(d / "server.crt"))
    os.chmod(d / "server.key", 0o600)


@contextlib.contextmanager
def running_postgres():
    # A directory of its own under /tmp: pytest's tmp_path sits under a root-only directory the
    # `postgres` user cannot enter.
    d = pathlib.Path(tempfile.mkdtemp(prefix="craps-test-pg-"))
    pg = Postgres(d, free_port(), {r: secrets.token_hex(16) for r in ("postgres", "ledger", "finance")})
    (d / "pw").write_text(pg.passwords["postgres"] + "\n")
    _tls(d)
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", "postgres", str(d)], check=True)
    pg._as_postgres(str(bin_dir() / "initdb"), "-D", str(d / "data"), "-A", "scram-sha-256", "-U", "postgres",
                    f"--pwfile={d / 'pw'}", "--no-sync")
    with open(d / "data" / "postgresql.conf", "a") as conf:
        conf.write(f"ssl = on\nssl_cert_file = '{d / 'server.crt'}'\nssl_key_file = '{d / 'server.key'}'\n"
                   "fsync = off\n")  # a test cluster: the crash tests kill the ledger, not the machine
    (d / "data" / "pg_hba.conf").write_text("local all postgres scram-sha-256\n"
                                            "hostssl all all 127.0.0.1/32 scram-sha-256\n")
    pg.ctl("start")
    try:
        pg.psql(f"CREATE ROLE ledger LOGIN PASSWORD '{pg.passwords['ledger']}'; "
                f"CREATE ROLE finance LOGIN PASSWORD '{pg.passwords['finance']}';")
        pg.create_ledger_database("ledger")
        yield pg
    finally:
        with contextlib.suppress(Exception):
            pg._as_postgres(str(bin_dir() / "pg_ctl"), "-D", str(d / "data"), "-m", "immediate", "stop")
        shutil.rmtree(d, ignore_errors=True)
