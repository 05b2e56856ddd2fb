"""Finance's ledger: every settlement, rejection and alert of the output topics as SQL rows, exactly once.

    schema      the tables (SQLAlchemy Core), one row per output record, keyed by its id
    migrations  the schema under Alembic (package data)
    migrate     upgrade(engine): the database brought to the newest schema
    rows        pure: a decoded output record -> its rows (gaming day and shift included)
    store       the transactional write: a batch's rows and its partitions' positions together
    views       the report's lines as SQL views
    service     the consume loop: read committed records, batch, write, report lag
    metrics     the ledger's Prometheus metrics

SQLite (a file) or PostgreSQL, through one code path. docs/operating/ledger.md.
"""
