"""The report's lines and the rules in force as SQL views over the ledger's rows, one definition for both databases.

    report_lines  per gaming day, shift, table, wager kind and paytable: the money the report books
                  (craps_streams.rules.hold.HoldLine: settled, handle, stakes returned and collected,
                  amounts won, wins/losses/pushes, house win), in cents

    openings_in_force  the tables' openings the worker applied: `table_openings` without a
                       rejection of the same table and seq (a settlement is under the rules of its
                       table's last one at or before its seq)

The gaming day and shift are columns of `settlements` (craps_streams/ledger/rows.py computed them
with the ledger's calendar), so a view is a plain GROUP BY on either database. A day is the sum of
its shifts, a table the sum of its kinds: finance sums these lines as it needs.
"""
from __future__ import annotations

from sqlalchemy import and_, case, exists, func, not_, select
from sqlalchemy.engine import Dialect

from craps_streams.ledger.schema import rejections as r
from craps_streams.ledger.schema import settlements as s
from craps_streams.ledger.schema import table_openings as o


def _sum_if(condition, value):
    return func.coalesce(func.sum(case((condition, value), else_=0)), 0)


def _count_if(condition):
    return _sum_if(condition, 1)


KEYS = (s.c.gaming_day, s.c.shift, s.c.table_id, s.c.wager, s.c.paytable)

report_lines = select(
    *KEYS,
    func.count().label("settled"),
    func.sum(s.c.stake_cents).label("handle_cents"),
    _sum_if(s.c.outcome != "lose", s.c.stake_cents).label("returned_cents"),
    _sum_if(s.c.outcome == "lose", s.c.stake_cents).label("collected_cents"),
    func.sum(s.c.won_cents).label("won_cents"),
    _count_if(s.c.outcome == "win").label("wins"),
    _count_if(s.c.outcome == "lose").label("losses"),
    _count_if(s.c.outcome == "push").label("pushes"),
    (_sum_if(s.c.outcome == "lose", s.c.stake_cents) - func.sum(s.c.won_cents)).label("house_win_cents"),
).group_by(*KEYS)

openings_in_force = select(o.c.table_id, o.c.seq, o.c.ts, o.c.table_kind, o.c.rules).where(
    not_(exists().where(and_(r.c.table_id == o.c.table_id, r.c.seq == o.c.seq))))

VIEWS = {"report_lines": report_lines, "openings_in_force": openings_in_force}


def create_view_sql(name: str, dialect: Dialect) -> str:
    """CREATE VIEW for `name`, compiled for the database at hand (the migrations run it)."""
    body = VIEWS[name].compile(dialect=dialect, compile_kwargs={"literal_binds": True})
    return f"CREATE VIEW {name} AS {body}"
