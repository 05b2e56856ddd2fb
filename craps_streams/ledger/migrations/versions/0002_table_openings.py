"""The tables' openings (table_openings): the Rules Submission each table opened with, read from
the table-events topic, so the report's lines carry the paytable and reading in force; and the
openings_in_force view.

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa

from craps_streams.ledger.views import create_view_sql


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


def downgrade() -> None:
    op.execute("DROP VIEW openings_in_force")
    op.drop_table('table_openings')
