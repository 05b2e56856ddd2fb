"""The hold book: money booked exactly, z as a display figure, deterministic, serializable. (The
hold_anomaly alert comes from exact tail probabilities: tests/surveillance/test_table_watch.py.)"""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.exploration import examples

from craps_streams.accelerator.rules import chosen
from craps_streams.rules import WagerSettled, record_to_event
from craps_streams.sim.floor import floor_events
from craps_streams.surveillance import HoldBook, HoldWatch



def book_floor(watch, tables=6, hours=6, seed=1):
    states, books, outputs = {}, {}, []
    for r in floor_events(tables, hours, seed):
        e = record_to_event(r)
        states[e.table_id], out, _ = chosen().apply(states.get(e.table_id), e)
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
            states[e.table_id], o, _ = chosen().apply(states.get(e.table_id), e)
            out += o
            if states[e.table_id] is not None:
                watch.watch(books.setdefault(e.table_id, HoldBook()), states[e.table_id], o)
                out += [repr(kv) for kv in sorted(books[e.table_id].lines.items())]
        return out

    states, books = {}, {}
    first = run(records[:cut], states, books)
    restored = {t: HoldBook.from_record(json.loads(json.dumps(b.to_record()))) for t, b in books.items()}
    assert {t: b.to_record() for t, b in restored.items()} == {t: b.to_record() for t, b in books.items()}
    from craps_streams.rules import TableState
    states2 = {t: (TableState.from_record(json.loads(json.dumps(s.to_record()))) if s else None)
               for t, s in states.items()}
    live = run(records[cut:], states, books)
    again = run(records[cut:], states2, restored)
    assert [repr(o) for o in again] == [repr(o) for o in live]
    assert first is not None


# ---------------------------------------------------------------- the booking's fast paths


_settlement = st.builds(
    lambda outcome, stake, won, seq, wager: WagerSettled(
        "w1", "T1", 1, wager, outcome, stake, won if outcome == "win" else 0, "p", "", seq, 0, 1, "id"),
    st.sampled_from(["win", "lose", "push"]), st.integers(1, 10**9), st.integers(0, 10**12),
    st.integers(1, 4), st.sampled_from(["fire", "hot_roller"]))


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(_settlement, max_size=40))
def test_a_group_is_booked_as_its_settlements_one_by_one(group):
    from craps_streams.surveillance.hold_watch import HoldLine

    one_by_one, at_once = HoldLine(), HoldLine()
    for s in group:
        one_by_one.add(s)
    assert at_once.add_all(group) == sum(s.stake_cents for s in group)
    assert at_once.to_record() == one_by_one.to_record()


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(_settlement, max_size=40))
def test_settled_groups_are_the_decisions_in_the_order_they_first_appear(outputs):
    from craps_streams.surveillance.table_watch import settled_groups

    groups = settled_groups(outputs)
    assert [s for g in groups.values() for s in g] == sorted(
        outputs, key=lambda s: list(groups).index((s.seq, s.wager, s.paytable)))
    for (seq, wager, paytable), g in groups.items():
        assert g == [s for s in outputs if (s.seq, s.wager, s.paytable) == (seq, wager, paytable)]


@pytest.mark.parametrize("table_watch", ["default", "python"])
def test_the_shared_groups_book_and_watch_as_the_outputs_alone(monkeypatch, table_watch):
    """settle_event hands the hold book and the surveillance one grouping of an event's
    settlements; without it (each grouping the outputs on its own, as before) the outputs, books
    and surveillance records are the same, on a floor with bad input and sequence gaps."""
    import craps_streams.settle.step as step
    from craps_streams.replay.engine import Replay
    from craps_streams.replay.sources import batched
    from craps_streams.surveillance.native_watch import as_table_watch
    from craps_streams.surveillance.table_watch import TableWatch

    def replay():
        # "python": the Python TableWatch, the one that takes the groups, even where the native
        # watch is the replay's default (craps_streams/replay/engine.py).
        r = Replay(None if table_watch == "default" else HoldWatch(table_watch=lambda: TableWatch()))
        items = [(rec, f"floor:{n}") for n, rec in enumerate(floor_events(8, 8, 5, bad_rate=0.05))]
        out = [o for batch in batched(items, 64) for o in r.feed_batch(batch)]
        return out, {t: (b.to_record(), as_table_watch(b.watch).to_record()) for t, b in r.books.items()}

    shared = replay()
    monkeypatch.setattr(step, "settled_groups", lambda outputs: None)
    alone = replay()
    assert shared == alone
    assert sum(type(o).__name__ == "WagerSettled" for o in shared[0]) > 1000  # the books had work
