"""The ledger's schema check at start: a database at Alembic's head is found so without Alembic."""
from __future__ import annotations

from sqlalchemy import text

from craps_streams.ledger import migrate
from craps_streams.ledger.store import open_engine


def test_head_is_alembics_head():
    """HEAD names the newest migration script: a new migration without it would be skipped."""
    assert migrate.head_revision() == migrate.HEAD


def test_a_new_database_is_migrated_and_then_found_at_head(tmp_path):
    engine = open_engine(f"sqlite:///{tmp_path / 'l.db'}")
    assert not migrate.at_head(engine)
    migrate.upgrade(engine)
    assert migrate.at_head(engine) and migrate.current_revision(engine) == migrate.HEAD
    with engine.begin() as conn:  # a database one migration behind is not at head: upgraded again
        conn.execute(text("UPDATE alembic_version SET version_num = '0001'"))
    assert not migrate.at_head(engine)
