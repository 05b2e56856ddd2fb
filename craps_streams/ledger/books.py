"""The report's books, kept by the ledger as it writes settlements: what `report --from-ledger`
reads instead of every settlement (docs/operating/ledger.md).

    book(conn, settlements)  the settlements new to the ledger, booked in the same transaction
                             that writes them (so exactly once, as they are)
    rebuild(conn)            every book again from `settlements` (the migration adding them)

The rules are the report's (`craps_streams.report.books`): a settlement's money on its line
(gaming day, shift, table, wager kind, paytable: `line_totals`); the dice-decided settlements of
one table, seq, kind and paytable one decision, counted by its total stake (`line_stakes`); each
dice-decided wager by its result per unit staked (`line_outcomes`). `DICE_DECIDED` and `UNIT` are
the same rules as SQL, for `rebuild` and the report's reads.

A decision's settlements are consecutive records of one partition (one event's outputs, in the
worker's transaction), so a batch can split only the decision a table ends it with: those are kept
(`open_decisions`), and the decisions a table begins the next batch with are looked up there: one
found was booked at its part's stake, and moves to its whole stake.
"""
from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from types import SimpleNamespace

from sqlalchemy import BigInteger, case, cast, func, not_, or_, select, tuple_

from craps_streams.ledger import schema
from craps_streams.ledger.bulk import BookRows, upsert
from craps_streams.report.books import SURRENDER_DETAIL_END, TABLE_CLOSED_DETAIL, decided_by_dice, unit_result

s = schema.settlements
LINE = ("gaming_day", "shift", "table_id", "wager", "paytable")

# craps_streams.report.books.decided_by_dice and unit_result, as SQL
DICE_DECIDED = or_(s.c.outcome != "push",
                   not_(or_(s.c.detail == TABLE_CLOSED_DETAIL, s.c.detail.like("%" + SURRENDER_DETAIL_END))))
UNIT = case((s.c.outcome == "lose", 1), (s.c.outcome == "push", 0), else_=-(s.c.won_cents // s.c.stake_cents))


def total(value):
    """SUM as BIGINT, 0 over no rows (PostgreSQL sums BIGINT as NUMERIC: cents stay integers)."""
    return cast(func.coalesce(func.sum(value), 0), BigInteger)


def sum_if(condition, value):
    return total(case((condition, value), else_=0))


@lru_cache(maxsize=4096)
def _dice_unit(outcome: str, detail: str, stake_cents: int, won_cents: int) -> int | None:
    """The report's `unit_result` of a settlement `decided_by_dice`, None for one that was not;
    cached by what the two rules read (a floor's settlements take a few hundred values of it)."""
    settled = SimpleNamespace(outcome=outcome, detail=detail, stake_cents=stake_cents, won_cents=won_cents)
    return unit_result(settled) if decided_by_dice(settled) else None


def book(conn, settlements: list[dict]) -> None:
    """Book settlement rows (`craps_streams.ledger.rows`' values) new to the ledger."""
    totals: dict = {}
    partial: dict = {}  # decision -> [gaming day, shift, stake, house win]
    outcomes: dict = defaultdict(int)
    seqs: dict = {}  # table -> [its lowest, its highest seq of a decision in these settlements]
    for v in settlements:
        line = (v["gaming_day"], v["shift"], v["table_id"], v["wager"], v["paytable"])
        seq, stake, won, outcome = v["seq"], v["stake_cents"], v["won_cents"], v["outcome"]
        t = totals.get(line)
        if t is None:
            t = totals[line] = [0, 0, 0, 0, 0, 0, 0, seq, seq]
        t[0] += 1
        t[1] += stake
        if outcome == "lose":
            t[3] += stake
            t[6] += 1
        else:
            t[2] += stake
            t[4] += won
            t[5] += outcome == "win"
        t[7], t[8] = min(t[7], seq), max(t[8], seq)
        unit = _dice_unit(outcome, v["detail"], stake, won)
        if unit is not None:
            key = (v["table_id"], seq, v["wager"], v["paytable"])
            d = partial.get(key)
            if d is None:
                d = partial[key] = [v["gaming_day"], v["shift"], 0, 0]
            d[2] += stake
            d[3] += stake if outcome == "lose" else -won
            outcomes[(*line, unit)] += 1
            span = seqs.get(key[0])
            if span is None:
                seqs[key[0]] = [seq, seq]
            else:
                span[0], span[1] = min(span[0], seq), max(span[1], seq)
    names = ("settled", "handle_cents", "returned_cents", "collected_cents", "won_cents", "wins", "losses",
             "first_seq", "last_seq")
    upsert(conn, [
        BookRows(schema.line_totals, [{**dict(zip(LINE, k)), **dict(zip(names, v))} for k, v in totals.items()],
                 add=names[:7], least=("first_seq",), greatest=("last_seq",)),
        BookRows(schema.line_outcomes, [{**dict(zip(LINE, k[:5])), "unit": k[5], "wagers": n}
                                        for k, n in outcomes.items()], add=("wagers",)),
        *(_decisions(conn, partial, seqs) if partial else ())])


def _decisions(conn, partial: dict, seqs: dict) -> tuple:
    """The open decisions' and line_stakes' rows of these decisions (the open decisions read)."""
    d = schema.open_decisions
    # Only each table's first decision here may have been begun before: looked up by its table and
    # seq (the key's leading columns, a few per table), its kinds kept of what comes back.
    begun = {k for k in partial if k[1] == seqs[k[0]][0]}
    firsts = sorted({k[:2] for k in begun})
    before = {}
    for i in range(0, len(firsts), 500):
        for r in conn.execute(select(d).where(tuple_(d.c.table_id, d.c.seq).in_(firsts[i:i + 500]))):
            key = (r.table_id, r.seq, r.wager, r.paytable)
            if key in begun:
                before[key] = r
    stakes: dict = defaultdict(lambda: [0, 0])
    still_open = []
    for key, (day, shift, stake, win) in partial.items():
        line = (day, shift, key[0], key[2], key[3])
        old = before.get(key)
        if old is not None:  # the decision moves from its part's stake to its whole stake
            was = stakes[(*line, old.stake_cents)]
            was[0] -= 1
            was[1] -= old.house_win_cents
            stake += old.stake_cents
            win += old.house_win_cents
        now = stakes[(*line, stake)]
        now[0] += 1
        now[1] += win
        if key[1] == seqs[key[0]][1]:  # its table ends these settlements with it: the next may continue it
            still_open.append({"table_id": key[0], "seq": key[1], "wager": key[2], "paytable": key[3],
                               "stake_cents": stake, "house_win_cents": win})
    return (BookRows(d, still_open, replace=("stake_cents", "house_win_cents")),
            BookRows(schema.line_stakes, [{**dict(zip(LINE, k[:5])), "stake_cents": k[5], "decisions": n,
                                           "house_win_cents": w} for k, (n, w) in stakes.items()],
                     add=("decisions", "house_win_cents")))


def rebuild(conn) -> None:
    """Every book from `settlements`, replacing what the books held."""
    for table in schema.BOOK_TABLES:
        conn.execute(table.delete())
    keys = [s.c[k] for k in LINE]
    lose = s.c.outcome == "lose"
    t = schema.line_totals
    conn.execute(t.insert().from_select([c.name for c in t.columns], select(
        *keys, func.count(), total(s.c.stake_cents), sum_if(~lose, s.c.stake_cents), sum_if(lose, s.c.stake_cents),
        total(s.c.won_cents), sum_if(s.c.outcome == "win", 1), sum_if(lose, 1), func.min(s.c.seq),
        func.max(s.c.seq)).group_by(*keys)))
    lose_win = case((lose, s.c.stake_cents), else_=-s.c.won_cents)
    decision_keys = (s.c.table_id, s.c.seq, s.c.wager, s.c.paytable)
    decided = select(*keys, s.c.seq, total(s.c.stake_cents).label("stake"), total(lose_win).label("win")) \
        .where(DICE_DECIDED).group_by(*keys, s.c.seq).subquery()
    dkeys = [decided.c[k] for k in LINE]
    st = schema.line_stakes
    conn.execute(st.insert().from_select([c.name for c in st.columns], select(
        *dkeys, decided.c.stake, func.count(), total(decided.c.win)).group_by(*dkeys, decided.c.stake)))
    o = schema.line_outcomes
    conn.execute(o.insert().from_select([c.name for c in o.columns], select(
        *keys, UNIT, func.count()).where(DICE_DECIDED).group_by(*keys, UNIT)))
    # each table's last decision, which settlements still to come may continue
    last = select(s.c.table_id, func.max(s.c.seq)).where(DICE_DECIDED).group_by(s.c.table_id)
    d = schema.open_decisions
    conn.execute(d.insert().from_select([c.name for c in d.columns], select(
        *decision_keys, total(s.c.stake_cents), total(lose_win))
        .where(DICE_DECIDED, tuple_(s.c.table_id, s.c.seq).in_(last)).group_by(*decision_keys)))
