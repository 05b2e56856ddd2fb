"""The ledger's databases for its tests: SQLite in a temporary file, and a real PostgreSQL started
once per session (tests/postgres.py): never skipped; where PostgreSQL is not installed the
PostgreSQL tests fail and say what to install."""
from __future__ import annotations

import pytest

from tests.postgres import running_postgres


@pytest.fixture(scope="session")
def postgres():
    with running_postgres() as pg:
        yield pg


_pg_databases = iter(range(1, 1_000_000))


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request, tmp_path):
    """A fresh, empty ledger database of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    pg = request.getfixturevalue("postgres")
    name = f"ledger_t{next(_pg_databases)}"
    pg.create_ledger_database(name)
    request.node.pg_finance_url = pg.url("finance", name)
    return pg.url("ledger", name)
