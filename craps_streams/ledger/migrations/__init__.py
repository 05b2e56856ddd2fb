"""The ledger's schema under Alembic: env.py and versions/ (package data; run by craps_streams.ledger.migrate)."""
