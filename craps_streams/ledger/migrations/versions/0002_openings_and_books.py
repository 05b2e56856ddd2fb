"""The tables' openings (table_openings): the Rules Submission each table opened with, read from
the table-events topic, so the report's lines carry the paytable and reading in force; the
openings_in_force view; and the report's books the ledger keeps (line_totals,
line_stakes, line_outcomes, open_decisions), booked from the settlements already written.

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa

from craps_streams.ledger.books import rebuild
from craps_streams.ledger.views import create_view_sql


def _line_keys(*extra):
    return [sa.Column('gaming_day', sa.Date(), nullable=False), sa.Column('shift', sa.String(length=32), nullable=False),
            sa.Column('table_id', sa.String(length=64), nullable=False),
            sa.Column('wager', sa.String(length=32), nullable=False),
            sa.Column('paytable', sa.String(length=64), nullable=False), *extra]


LINE = ['gaming_day', 'shift', 'table_id', 'wager', 'paytable']


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('table_openings',
    sa.Column('table_id', sa.String(length=64), nullable=False),
    sa.Column('seq', sa.BigInteger(), nullable=False),
    sa.Column('ts', sa.BigInteger(), nullable=False),
    sa.Column('table_kind', sa.String(length=64), nullable=False),
    sa.Column('rules', sa.Text(), nullable=True),
    sa.Column('source_partition', sa.Integer(), nullable=False),
    sa.Column('source_offset', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('table_id', 'seq', name=op.f('pk_table_openings'))
    )
    op.execute(create_view_sql("openings_in_force", op.get_bind().dialect))
    op.create_table('line_totals', *_line_keys(),
    sa.Column('settled', sa.BigInteger(), nullable=False),
    sa.Column('handle_cents', sa.BigInteger(), nullable=False),
    sa.Column('returned_cents', sa.BigInteger(), nullable=False),
    sa.Column('collected_cents', sa.BigInteger(), nullable=False),
    sa.Column('won_cents', sa.BigInteger(), nullable=False),
    sa.Column('wins', sa.BigInteger(), nullable=False),
    sa.Column('losses', sa.BigInteger(), nullable=False),
    sa.Column('first_seq', sa.BigInteger(), nullable=False),
    sa.Column('last_seq', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint(*LINE, name=op.f('pk_line_totals'))
    )
    op.create_table('open_decisions',
    sa.Column('table_id', sa.String(length=64), nullable=False),
    sa.Column('seq', sa.BigInteger(), nullable=False),
    sa.Column('wager', sa.String(length=32), nullable=False),
    sa.Column('paytable', sa.String(length=64), nullable=False),
    sa.Column('stake_cents', sa.BigInteger(), nullable=False),
    sa.Column('house_win_cents', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('table_id', 'seq', 'wager', 'paytable', name=op.f('pk_open_decisions'))
    )
    op.create_table('line_stakes', *_line_keys(sa.Column('stake_cents', sa.BigInteger(), nullable=False)),
    sa.Column('decisions', sa.BigInteger(), nullable=False),
    sa.Column('house_win_cents', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint(*LINE, 'stake_cents', name=op.f('pk_line_stakes'))
    )
    op.create_table('line_outcomes', *_line_keys(sa.Column('unit', sa.Integer(), nullable=False)),
    sa.Column('wagers', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint(*LINE, 'unit', name=op.f('pk_line_outcomes'))
    )
    rebuild(op.get_bind())


def downgrade() -> None:
    for name in ('open_decisions', 'line_outcomes', 'line_stakes', 'line_totals'):
        op.drop_table(name)
    op.execute("DROP VIEW openings_in_force")
    op.drop_table('table_openings')
