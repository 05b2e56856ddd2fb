"""The ledger's first tables (settlements, rejections, alerts and their wagers, consumed offsets,
the calendar) and the report_lines view.

Revision ID: 0001
Revises:
"""
from alembic import op
import sqlalchemy as sa

from craps_streams.ledger.views import create_view_sql


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('alerts',
    sa.Column('id', sa.String(length=200), nullable=False),
    sa.Column('table_id', sa.String(length=64), nullable=False),
    sa.Column('seq', sa.BigInteger(), nullable=False),
    sa.Column('ts', sa.BigInteger(), nullable=False),
    sa.Column('alert', sa.String(length=64), nullable=False),
    sa.Column('shooter_id', sa.String(length=64), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('source_partition', sa.Integer(), nullable=False),
    sa.Column('source_offset', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alerts'))
    )
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_alerts_alert_ts'), ['alert', 'ts'], unique=False)

    op.create_table('calendar',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('zone', sa.String(length=64), nullable=False),
    sa.Column('day_start', sa.String(length=5), nullable=False),
    sa.Column('shifts', sa.String(length=255), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_calendar'))
    )
    op.create_table('consumed_offsets',
    sa.Column('topic', sa.String(length=255), nullable=False),
    sa.Column('partition', sa.Integer(), nullable=False),
    sa.Column('next_offset', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('topic', 'partition', name=op.f('pk_consumed_offsets'))
    )
    op.create_table('rejections',
    sa.Column('id', sa.String(length=200), nullable=False),
    sa.Column('table_id', sa.String(length=64), nullable=False),
    sa.Column('seq', sa.BigInteger(), nullable=False),
    sa.Column('ts', sa.BigInteger(), nullable=False),
    sa.Column('reason', sa.String(length=64), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('event_json', sa.Text(), nullable=True),
    sa.Column('raw', sa.LargeBinary(), nullable=True),
    sa.Column('topic', sa.String(length=255), nullable=True),
    sa.Column('partition', sa.Integer(), nullable=True),
    sa.Column('offset', sa.BigInteger(), nullable=True),
    sa.Column('source_partition', sa.Integer(), nullable=False),
    sa.Column('source_offset', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_rejections'))
    )
    with op.batch_alter_table('rejections', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_rejections_reason_ts'), ['reason', 'ts'], unique=False)

    op.create_table('settlements',
    sa.Column('id', sa.String(length=200), nullable=False),
    sa.Column('wager_id', sa.String(length=200), nullable=False),
    sa.Column('table_id', sa.String(length=64), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('wager', sa.String(length=32), nullable=False),
    sa.Column('outcome', sa.String(length=8), nullable=False),
    sa.Column('stake_cents', sa.BigInteger(), nullable=False),
    sa.Column('won_cents', sa.BigInteger(), nullable=False),
    sa.Column('paytable', sa.String(length=64), nullable=False),
    sa.Column('detail', sa.Text(), nullable=False),
    sa.Column('seq', sa.BigInteger(), nullable=False),
    sa.Column('ts', sa.BigInteger(), nullable=False),
    sa.Column('placed_seq', sa.BigInteger(), nullable=False),
    sa.Column('gaming_day', sa.Date(), nullable=False),
    sa.Column('shift', sa.String(length=32), nullable=False),
    sa.Column('source_partition', sa.Integer(), nullable=False),
    sa.Column('source_offset', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_settlements'))
    )
    with op.batch_alter_table('settlements', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_settlements_gaming_day_shift_table_id'), ['gaming_day', 'shift', 'table_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_settlements_table_id_ts'), ['table_id', 'ts'], unique=False)
        batch_op.create_index(batch_op.f('ix_settlements_wager_id'), ['wager_id'], unique=False)

    op.create_table('alert_wagers',
    sa.Column('alert_id', sa.String(length=200), nullable=False),
    sa.Column('wager_id', sa.String(length=200), nullable=False),
    sa.ForeignKeyConstraint(['alert_id'], ['alerts.id'], name=op.f('fk_alert_wagers_alert_id_alerts')),
    sa.PrimaryKeyConstraint('alert_id', 'wager_id', name=op.f('pk_alert_wagers'))
    )
    # The view is compiled from its one definition (craps_streams/ledger/views.py) for this database;
    # a later change to it is a new migration that drops and re-creates it.
    op.execute(create_view_sql("report_lines", op.get_bind().dialect))


def downgrade() -> None:
    op.execute("DROP VIEW report_lines")
    op.drop_table('alert_wagers')
    with op.batch_alter_table('settlements', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_settlements_wager_id'))
        batch_op.drop_index(batch_op.f('ix_settlements_table_id_ts'))
        batch_op.drop_index(batch_op.f('ix_settlements_gaming_day_shift_table_id'))

    op.drop_table('settlements')
    with op.batch_alter_table('rejections', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_rejections_reason_ts'))

    op.drop_table('rejections')
    op.drop_table('consumed_offsets')
    op.drop_table('calendar')
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_alerts_alert_ts'))

    op.drop_table('alerts')
