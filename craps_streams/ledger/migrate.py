"""Bring a ledger database to the newest schema: Alembic's upgrade to head, on a given engine.

The migration scripts ship inside the package (craps_streams/ledger/migrations), so an installed
craps-streams migrates without an alembic.ini or a checkout. Idempotent: a database at head is
left as it is.
"""
from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

SCRIPT_LOCATION = "craps_streams.ledger:migrations"


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    return config


def upgrade(engine: Engine) -> None:
    """Run every migration the database has not had, in one transaction."""
    config = _config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str:
    return ScriptDirectory.from_config(_config()).get_current_head()
