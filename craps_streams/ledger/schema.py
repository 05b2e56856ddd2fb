"""The ledger's tables (SQLAlchemy Core): one row per output record, keyed by the output's id.

The same tables on SQLite and PostgreSQL; the migrations (craps_streams/ledger/migrations) create
them, this module is what the code reads and writes through. Money is integer cents (BIGINT).

    settlements        one row per WagerSettled (the settlements topic), with its gaming day and
                       shift in the casino's calendar, computed when written (calendar below)
    rejections         one row per EventRejected (the rejections topic), raw bytes kept
    alerts             one row per SurveillanceAlerted (the surveillance topic)
    alert_wagers       the wagers an alert names, one row each
    table_openings     one row per TableOpened of the table-events topic: the Rules Submission a
                       table opened with (the rules, as sent), so the report's lines can be keyed by
                       the paytable and reading in force (an opening the worker rejected has a
                       rejections row of the same table and seq, and is not in force)
    line_totals        the report's books, kept by the ledger as it writes settlements (in the
    line_stakes        same transaction, from the rows new to it): per gaming day, shift, table,
    line_outcomes      wager kind and paytable, the money (line_totals, with the seqs it spans);
    open_decisions     the decisions by the dice (the dice-decided settlements of one table, seq,
                       kind and paytable) of each total stake (line_stakes); the wagers of each
                       result per unit staked (line_outcomes); the decisions a batch ended with,
                       which the next may continue (open_decisions)
    consumed_offsets   per topic partition, the next offset to read: written in the same
                       transaction as the rows the records before it made
    calendar           the one calendar the gaming days were computed with (zone, day start, shifts)

Every record row keeps where it came from (source_partition, source_offset), so an auditor can
fetch the Kafka record behind any row.
"""
from __future__ import annotations

from sqlalchemy import (BigInteger, Column, Date, ForeignKey, Index, Integer, LargeBinary, MetaData, String, Table,
                        Text)

metadata = MetaData(naming_convention={
    "pk": "pk_%(table_name)s", "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s"})


def _source() -> list[Column]:
    return [Column("source_partition", Integer, nullable=False), Column("source_offset", BigInteger, nullable=False)]


settlements = Table(
    "settlements", metadata,
    Column("id", String(200), primary_key=True),  # table/seq/settle/wager: the dedupe key
    Column("wager_id", String(200), nullable=False),
    Column("table_id", String(64), nullable=False),
    Column("position", Integer, nullable=False),
    Column("wager", String(32), nullable=False),
    Column("outcome", String(8), nullable=False),
    Column("stake_cents", BigInteger, nullable=False),
    Column("won_cents", BigInteger, nullable=False),
    Column("paytable", String(64), nullable=False),
    Column("detail", Text, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("ts", BigInteger, nullable=False),  # epoch ms of the deciding event
    Column("placed_seq", BigInteger, nullable=False),
    Column("gaming_day", Date, nullable=False),
    Column("shift", String(32), nullable=False),
    *_source(),
    Index(None, "gaming_day", "shift", "table_id"),
    Index(None, "table_id", "ts"),
    Index(None, "wager_id"),
)

rejections = Table(
    "rejections", metadata,
    Column("id", String(200), primary_key=True),
    Column("table_id", String(64), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("ts", BigInteger, nullable=False),
    Column("reason", String(64), nullable=False),
    Column("message", Text, nullable=False),
    Column("event_json", Text),
    Column("raw", LargeBinary),
    Column("topic", String(255)),
    Column("partition", Integer),
    Column("offset", BigInteger),
    *_source(),
    Index(None, "reason", "ts"),
)

alerts = Table(
    "alerts", metadata,
    Column("id", String(200), primary_key=True),
    Column("table_id", String(64), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("ts", BigInteger, nullable=False),
    Column("alert", String(64), nullable=False),
    Column("shooter_id", String(64), nullable=False),
    Column("message", Text, nullable=False),
    *_source(),
    Index(None, "alert", "ts"),
)

alert_wagers = Table(
    "alert_wagers", metadata,
    Column("alert_id", String(200), ForeignKey("alerts.id"), primary_key=True),
    Column("wager_id", String(200), primary_key=True),
)

table_openings = Table(
    "table_openings", metadata,
    Column("table_id", String(64), primary_key=True),
    Column("seq", BigInteger, primary_key=True),
    Column("ts", BigInteger, nullable=False),
    Column("table_kind", String(64), nullable=False),
    Column("rules", Text),  # the TableOpened's rules object as JSON text; NULL: docs/rules.md's defaults
    *_source(),
)

def _line_keys(*extra: Column) -> list[Column]:
    return [Column("gaming_day", Date, primary_key=True), Column("shift", String(32), primary_key=True),
            Column("table_id", String(64), primary_key=True), Column("wager", String(32), primary_key=True),
            Column("paytable", String(64), primary_key=True), *extra]


line_totals = Table(
    "line_totals", metadata,
    *_line_keys(),
    Column("settled", BigInteger, nullable=False),
    Column("handle_cents", BigInteger, nullable=False),
    Column("returned_cents", BigInteger, nullable=False),
    Column("collected_cents", BigInteger, nullable=False),
    Column("won_cents", BigInteger, nullable=False),
    Column("wins", BigInteger, nullable=False),
    Column("losses", BigInteger, nullable=False),
    Column("first_seq", BigInteger, nullable=False),  # the seqs its settlements span: the rules in force
    Column("last_seq", BigInteger, nullable=False),
)

open_decisions = Table(
    "open_decisions", metadata,
    Column("table_id", String(64), primary_key=True),
    Column("seq", BigInteger, primary_key=True),
    Column("wager", String(32), primary_key=True),
    Column("paytable", String(64), primary_key=True),
    Column("stake_cents", BigInteger, nullable=False),
    Column("house_win_cents", BigInteger, nullable=False),
)

line_stakes = Table(
    "line_stakes", metadata,
    *_line_keys(Column("stake_cents", BigInteger, primary_key=True)),
    Column("decisions", BigInteger, nullable=False),
    Column("house_win_cents", BigInteger, nullable=False),
)

line_outcomes = Table(
    "line_outcomes", metadata,
    *_line_keys(Column("unit", Integer, primary_key=True)),  # the house's win per unit staked
    Column("wagers", BigInteger, nullable=False),
)

BOOK_TABLES = (line_totals, line_stakes, line_outcomes, open_decisions)

consumed_offsets = Table(
    "consumed_offsets", metadata,
    Column("topic", String(255), primary_key=True),
    Column("partition", Integer, primary_key=True),
    Column("next_offset", BigInteger, nullable=False),
)

calendar = Table(
    "calendar", metadata,
    Column("id", Integer, primary_key=True),  # always 1: one calendar per ledger
    Column("zone", String(64), nullable=False),
    Column("day_start", String(5), nullable=False),  # HH:MM, local
    Column("shifts", String(255), nullable=False),  # name=HH:MM,... as `report --shifts` takes them
)

# The record tables in the order a batch writes them (alerts before the wagers they name).
RECORD_TABLES = (settlements, rejections, alerts, alert_wagers, table_openings)
