"""Alembic's entry: migrations run on the connection craps_streams.ledger.migrate hands in."""
from __future__ import annotations

from alembic import context

from craps_streams.ledger.schema import metadata

connection = context.config.attributes["connection"]
# render_as_batch: SQLite alters a table by copying it, Alembic's batch mode does that for us.
context.configure(connection=connection, target_metadata=metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
