"""Bring a ledger database to the newest schema: Alembic's upgrade to head, on a given engine.

The migration scripts ship inside the package (craps_streams/ledger/migrations), so an installed
craps-streams migrates without an alembic.ini or a checkout. Idempotent: a database at head is
left as it is, and found so without Alembic (`at_head`: its import and its scripts' loading are a
tenth of a second of every ledger's start); Alembic is loaded only to migrate.
"""
from __future__ import annotations

from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine

SCRIPT_LOCATION = "craps_streams.ledger:migrations"
# The newest migration's revision; tests/ledger/test_migrate.py holds it to Alembic's head.
HEAD = "0002"


def _config():
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    return config


def at_head(engine: Engine) -> bool:
    """Whether the database's schema is the newest (its Alembic version is HEAD)."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return False
        return connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [HEAD]


def upgrade(engine: Engine) -> None:
    """Run every migration the database has not had, in one transaction."""
    if at_head(engine):
        return
    from alembic import command

    config = _config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config()).get_current_head()
