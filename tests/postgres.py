"""A PostgreSQL of the tests' own, started as `make run LEDGER=postgres` starts its own: by
infra/postgres/postgres.sh (Debian's package, loopback only, TLS on with a CA made for it and
verified by the clients, one SCRAM login per role), in a temporary directory, on a free port.

    with running_postgres() as pg:
        pg.url("ledger")       # postgresql+psycopg://ledger:...@127.0.0.1:PORT/ledger?sslmode=verify-full...

Roles: `ledger` owns the `ledger` database and writes it; `finance` may only read it.
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from tests.conftest import ROOT, free_port

POSTGRES_SH = ROOT / "infra" / "postgres" / "postgres.sh"


@dataclass
class Postgres:
    dir: pathlib.Path
    port: int

    @property
    def ca(self) -> pathlib.Path:
        return self.dir / "ca.crt"

    def sh(self, *args: str) -> str:
        # PG_FSYNC=off: a test cluster; the crash tests kill the ledger, not the machine.
        env = {**os.environ, "PG_DIR": str(self.dir), "PG_PORT": str(self.port), "PG_FSYNC": "off",
               "PG_CERT_DAYS": "2"}
        done = subprocess.run([str(POSTGRES_SH), *args], capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, f"postgres.sh {' '.join(args)}: {done.stderr or done.stdout}"
        return done.stdout

    def url(self, role: str, database: str = "ledger") -> str:
        return self.sh("url", role, database).strip()

    def ctl(self, action: str) -> None:
        """`restart` or `stop` the server (`up` starts it again)."""
        self.sh("up" if action == "start" else action)

    def psql(self, sql: str, database: str = "postgres") -> str:
        return self.sh("psql", "-d", database, "-c", sql)

    def create_ledger_database(self, name: str) -> None:
        """A database `ledger` writes and `finance` only reads (docs/operating/ledger.md, Roles)."""
        self.sh("database", name)


@contextlib.contextmanager
def running_postgres():
    # A directory of its own under /tmp: pytest's tmp_path sits under a root-only directory the
    # `postgres` user cannot enter.
    d = pathlib.Path(tempfile.mkdtemp(prefix="craps-test-pg-"))
    pg = Postgres(d, free_port())
    try:
        pg.sh("up")
        pg.create_ledger_database("ledger")
        yield pg
    finally:
        with contextlib.suppress(Exception):
            pg.sh("stop", "--immediate")
        shutil.rmtree(d, ignore_errors=True)
