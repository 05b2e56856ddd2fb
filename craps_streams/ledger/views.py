"""The report's lines as SQL views over the ledger's settlements, one definition for both databases.

    report_lines  per gaming day, shift, table, wager kind and paytable: the money the report books
                  (craps_streams.rules.hold.HoldLine: settled, handle, stakes returned and collected,
                  amounts won, wins/losses/pushes, house win), in cents

The gaming day and shift are columns of `settlements` (craps_streams/ledger/rows.py computed them
with the ledger's calendar), so a view is a plain GROUP BY on either database. A day is the sum of
its shifts, a table the sum of its kinds: finance sums these lines as it needs.
"""
from __future__ import annotations

from sqlalchemy import case, func, select
from sqlalchemy.engine import Dialect

from craps_streams.ledger.schema import settlements as s


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

VIEWS = {"report_lines": report_lines}


def create_view_sql(name: str, dialect: Dialect) -> str:
    """CREATE VIEW for `name`, compiled for the database at hand (the migrations run it)."""
    body = VIEWS[name].compile(dialect=dialect, compile_kwargs={"literal_binds": True})
    return f"CREATE VIEW {name} AS {body}"
