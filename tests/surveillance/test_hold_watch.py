"""The hold book: money booked exactly, z as a display figure, deterministic, serializable. (The
hold_anomaly alert comes from exact tail probabilities: tests/surveillance/test_table_watch.py.)"""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.exploration import examples

from streams.rules import WagerSettled, apply, record_to_event
from streams.sim.floor import floor_events
from streams.surveillance import HoldBook, HoldWatch



def book_floor(watch, tables=6, hours=6, seed=1):
    states, books, outputs = {}, {}, []
    for r in floor_events(tables, hours, seed):
        e = record_to_event(r)
        states[e.table_id], out, _ = apply(states.get(e.table_id), e)
        outputs += out
        if states[e.table_id] is not None:
            watch.watch(books.setdefault(e.table_id, HoldBook()), states[e.table_id], out)
    return books, outputs


def test_the_book_holds_exactly_what_was_settled():
    books, outputs = book_floor(HoldWatch())
    for table, book in books.items():
        settled = [o for o in outputs if type(o) is WagerSettled and o.table_id == table]
        assert sum(line.settled for line in book.lines.values()) == len(settled)
        for (wager, paytable), line in book.lines.items():
            mine = [o for o in settled if (o.wager, o.paytable) == (wager, paytable)]
            assert line.handle_cents == sum(o.stake_cents for o in mine)
            assert line.won_cents == sum(o.won_cents for o in mine)
            assert line.house_win_cents == sum(o.stake_cents if o.outcome == "lose" else -o.won_cents
                                               for o in mine)
            decided: dict[int, int] = {}
            for o in mine:
                decided[o.seq] = decided.get(o.seq, 0) + o.stake_cents
            assert line.stake_squares == sum(v * v for v in decided.values())
            assert (line.wins, line.losses, line.pushes) == tuple(
                sum(1 for o in mine if o.outcome == k) for k in ("win", "lose", "push"))


def test_z_scores_on_a_fair_floor_centre_on_zero():
    """z stays on the book as a display figure (the alert is the exact tail's)."""
    zs = []
    for seed in (7, 10):
        books, _ = book_floor(HoldWatch(), tables=8, hours=12, seed=seed)
        zs += [line.z_score for b in books.values() for line in b.lines.values() if line.settled >= 30]
    zs.sort()
    assert abs(zs[len(zs) // 2]) < 0.5 and len(zs) > 60


@settings(max_examples=examples(15), deadline=None)
@given(seed=st.integers(0, 1000), cut=st.integers(1, 4000))
def test_a_book_restored_from_its_record_continues_identically(seed, cut):
    watch = HoldWatch()
    records = list(floor_events(2, 3, seed))
    cut = min(cut, len(records) - 1)

    def run(records, states, books):
        out = []
        for r in records:
            e = record_to_event(r)
            states[e.table_id], o, _ = apply(states.get(e.table_id), e)
            out += o
            if states[e.table_id] is not None:
                watch.watch(books.setdefault(e.table_id, HoldBook()), states[e.table_id], o)
                out += [repr(kv) for kv in sorted(books[e.table_id].lines.items())]
        return out

    states, books = {}, {}
    first = run(records[:cut], states, books)
    restored = {t: HoldBook.from_record(json.loads(json.dumps(b.to_record()))) for t, b in books.items()}
    assert {t: b.to_record() for t, b in restored.items()} == {t: b.to_record() for t, b in books.items()}
    from streams.rules import TableState
    states2 = {t: (TableState.from_record(json.loads(json.dumps(s.to_record()))) if s else None)
               for t, s in states.items()}
    live = run(records[cut:], states, books)
    again = run(records[cut:], states2, restored)
    assert [repr(o) for o in again] == [repr(o) for o in live]
    assert first is not None
