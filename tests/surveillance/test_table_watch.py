"""The table's surveillance through `settle_event`, as the worker and replay run it: hold_anomaly
from exact tails, position_anomaly for a past-poster, dice_bias on loaded dice, throws released by
a gap's filling counted once, the watch stored and restored, records stored before it loaded."""
from __future__ import annotations

import json
import random

from tests.exploration import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from craps_streams.app.shell import state_from_text, state_to_text
from craps_streams.odds import wager_odds
from craps_streams.rules.submission import DEFAULT_RULES
from craps_streams.rules import DiceThrown, SurveillanceAlerted, record_to_event
from craps_streams.sim.floor import Fault, floor_events
from craps_streams.surveillance import HoldWatch
from craps_streams.accelerator.rules import chosen
from craps_streams.settle.step import settle_event
from craps_streams.surveillance.dice_watch import DiceWatch
from craps_streams.surveillance.position_watch import PositionLine
from craps_streams.surveillance.position_watch import tests_of as line_tests
from craps_streams.surveillance.table_watch import Thresholds, position_tail
from craps_streams.surveillance.tails import binomial_tail, unit_distribution

TS0 = 1_700_000_000_000


class Table:
    """A dealer's log fed through settle_event."""

    def __init__(self, watch: HoldWatch, table_id="T1", kind="fully_automated"):
        self.watch, self.table_id = watch, table_id
        self.state, self.tables, self.books, self.seq, self.outputs = None, {}, {}, 0, []
        self.send({"type": "TableOpened", "table_kind": kind})

    def record(self, r: dict, seq: int | None = None) -> dict:
        if seq is None:
            self.seq += 1
            seq = self.seq
        return {"table_id": self.table_id, "seq": seq, "ts": TS0 + seq * 1000, **r}

    def send(self, r: dict, seq: int | None = None) -> list:
        event = record_to_event(self.record(r, seq))
        _, _, out = settle_event(self.tables, self.books, self.watch, event, apply=chosen().apply)
        self.state = self.tables.get(self.table_id)
        self.outputs += out
        return out

    def throw(self, a, b, valid=True):
        return self.send({"type": "DiceThrown", "die1": a, "die2": b, "valid": valid})

    def wager(self, wid, kind, cents, pos):
        return self.send({"type": "WagerPlaced", "wager_id": wid, "position": pos, "wager": kind,
                          "amount_cents": cents})

    def shooter(self, sid, pos, reason="table_open"):
        return self.send({"type": "ShooterChanged", "shooter_id": sid, "position": pos, "reason": reason})

    def alerts(self, kind):
        return [o for o in self.outputs if type(o) is SurveillanceAlerted and o.alert == kind]

    @property
    def watch_state(self):
        return self.books[self.table_id].watch


def test_four_points_every_hand_is_a_position_anomaly_not_yet_a_hold_one():
    """Twelve Fire Bets in a row paid 24 to 1: the money alone is not improbable (one six-point
    Fire at 999 to 1 pays more, p ~ 2e-3 in 12 hands: the exact tail says so), the position's
    results are (12 wins of 24 to 1 in 12 wagers, p ~ 1e-24)."""
    t = Table(HoldWatch())
    t.shooter("ann", 1)
    for hand in range(12):
        t.wager(f"f{hand}", "fire", 500, 1)
        for a, b in ((1, 3), (2, 2), (1, 4), (2, 3), (1, 5), (2, 4), (2, 6), (3, 5), (1, 3), (3, 4)):
            t.throw(a, b)  # points 4, 5, 6, 8 made, then point 4 and a seven-out: 24 to 1
        t.shooter(f"s{hand}", 1, "seven_out")
    assert not t.alerts("hold_anomaly")
    tail = t.watch_state.holds[("fire", "fire-623a.5")]
    assert tail.decisions == 12 and tail.house_win_cents == -12 * 500 * 24
    p, exact = tail.last[1], tail.last[2]
    assert 1e-4 < p < 1e-2 and exact
    alerts = t.alerts("position_anomaly")
    assert len(alerts) == 1 and "position 1" in alerts[0].message and "won 24 to 1" in alerts[0].message


def test_all_small_paid_hand_after_hand_raises_one_exact_hold_alert():
    t = Table(HoldWatch())
    t.shooter("ann", 1)
    for hand in range(10):
        t.wager(f"a{hand}", "all_small", 1000, 2)
        t.wager(f"b{hand}", "all_small", 500, 3)
        for a, b in ((1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (1, 3), (1, 3), (3, 4)):
            t.throw(a, b)  # 2 3 4 5 6 marked: paid 34 to 1; point 4 made, point 4, seven-out
        t.shooter(f"s{hand}", 1, "seven_out")
    alerts = t.alerts("hold_anomaly")
    assert len(alerts) == 1, [a.message for a in alerts]
    a = alerts[0]
    assert a.table_id == "T1" and "all_small" in a.message and "exact" in a.message
    tail = t.watch_state.holds[("all_small", "bonus-623a.5h")]
    # One decision per hand (both wagers saw the same dice); alerted once P <= 1e-9: 0.026^k.
    assert tail.decisions == 10 and tail.alerted and tail.stakes == {1500: 10}
    assert a.wager_ids and a.seq > 0


def test_a_past_poster_on_the_hot_roller_is_found_by_its_first_throws():
    """Position 5 wagers only when the next throw will not be a 7: never decided on its first throw."""
    rng = random.Random(3)
    t = Table(HoldWatch())
    t.shooter("ann", 1)
    placed = 0
    while not t.alerts("position_anomaly") and placed < 400:
        a, b = rng.randint(1, 6), rng.randint(1, 6)
        if t.state.hot_roller_window_open() and a + b != 7:
            placed += 1
            t.wager(f"h{placed}", "hot_roller", 500, 5)
        out = t.throw(a, b)
        if t.state.must_pass:
            t.shooter(f"s{t.seq}", 1, "seven_out")
        assert out is not None
    alerts = t.alerts("position_anomaly")
    assert alerts and "position 5" in alerts[0].message and "first throw" in alerts[0].message
    # (5/6)^n x 7 tests <= 1e-9 needs n >= 125 decided wagers.
    line = t.watch_state.positions[(5, "hot_roller", "hot-roller-623c.1h-A")]
    assert line.first_throw == 0 and 125 <= line.wagers < 200
    assert not t.alerts("hold_anomaly")  # he still loses money: only the position test sees him


def test_throws_released_by_a_gap_are_watched_once_in_seq_order():
    t = Table(HoldWatch(Thresholds(dice=DiceWatch(1e9, 1e9, 1e9))))
    t.shooter("ann", 1)
    base = t.seq
    t.send({"type": "DiceThrown", "die1": 6, "die2": 6, "valid": True}, base + 2)  # held
    t.send({"type": "DiceThrown", "die1": 5, "die2": 6, "valid": False}, base + 3)  # held
    assert t.watch_state.dice.throws == 0
    t.send({"type": "DiceThrown", "die1": 1, "die2": 1, "valid": True}, base + 1)  # fills the gap
    dice = t.watch_state.dice
    assert (dice.throws, dice.invalid, dice.cells[0], dice.cells[35]) == (2, 1, 1, 1)
    assert t.watch_state.last_throw_seq == base + 2 and t.watch_state.prev_throw_seq == base + 1
    # A duplicate changes nothing.
    t.send({"type": "DiceThrown", "die1": 1, "die2": 1, "valid": True}, base + 1)
    assert t.watch_state.dice.throws == 2


def test_loaded_dice_raise_dice_bias_naming_the_cells():
    rng = random.Random(2)
    t = Table(HoldWatch())
    t.shooter("ann", 1)
    n = 0
    while not t.alerts("dice_bias") and n < 20_000:
        n += 1
        a = 6 if rng.random() < 0.3 else rng.randint(1, 6)
        t.throw(a, rng.randint(1, 6))
        if t.state.must_pass:
            t.shooter(f"s{n}", 1, "seven_out")
    alert = t.alerts("dice_bias")[0]
    assert "die1_face_6" in alert.message and "cells that moved: 6-" in alert.message
    assert alert.id == f"T1/{alert.seq}/dice_bias"


def test_the_watch_is_stored_with_the_table_and_old_records_load():
    watch = HoldWatch()
    states, books = {}, {}
    records = list(floor_events(2, 2, 4))
    cut = len(records) // 2

    def run(records, states, books):
        out = []
        for r in records:
            e = record_to_event(r)
            _, _, o = settle_event(states, books, watch, e, apply=chosen().apply)
            out += o
        return out

    run(records[:cut], states, books)
    texts = {t: state_to_text(states[t], books[t]) for t in states}
    restored_states, restored_books = {}, {}
    for t, text in texts.items():
        restored_states[t], restored_books[t] = state_from_text(text)
        assert state_to_text(restored_states[t], restored_books[t]) == text
        assert json.loads(text)["watch"]["dice"][0] > 0
    a = run(records[cut:], states, books)
    b = run(records[cut:], restored_states, restored_books)
    assert [repr(o) for o in a] == [repr(o) for o in b]
    # A record stored before the table watch existed (no "watch"): a fresh watch from there on.
    old = json.loads(texts["T001"])
    del old["watch"]
    state, book = state_from_text(json.dumps(old))
    assert book.watch.dice.throws == 0 and book.lines


def test_settings_come_from_the_environment(monkeypatch):
    from craps_streams.settings import load

    for name, value in (("CRAPS_HOLD_TAIL_ALERT", "1e-6"), ("CRAPS_DICE_SEVEN_H", "9"),
                        ("CRAPS_POSITION_TAIL_ALERT", "1e-7")):
        monkeypatch.setenv(name, value)
    t = load().thresholds
    assert (t.tail_alert, t.position_alert, t.dice.seven_h) == (1e-6, 1e-7, 9.0)
    for name in ("CRAPS_HOLD_TAIL_ALERT", "CRAPS_DICE_SEVEN_H", "CRAPS_POSITION_TAIL_ALERT"):
        monkeypatch.delenv(name)
    assert load().thresholds == Thresholds() and HoldWatch().thresholds == Thresholds()
    assert DiceThrown  # the event type the dice watch reads


@settings(max_examples=examples(200), deadline=None)
@given(n=st.integers(1, 400), first=st.floats(0, 1), lost=st.floats(0, 1), wins=st.floats(0, 1),
       alert_at=st.sampled_from((1e-9, 1e-6, 1e-3, 0.05)))
@example(n=125, first=0.0, lost=0.8, wins=0.5, alert_at=1e-8)
def test_the_screen_never_skips_a_test_that_would_alert(n, first, lost, wins, alert_at):
    """position_tail with its cheap screen alerts exactly when the exact tails (all evaluated) do."""
    unit = unit_distribution(wager_odds("hot_roller", DEFAULT_RULES))
    tests = line_tests("hot_roller", unit)
    f = round(first * n / 6)
    losses = round(lost * n)
    w5 = round(wins * (n - losses))
    line = PositionLine(n, f, {1: losses, -5: w5, -10: n - losses - w5})
    screened, _ = position_tail(line, tests, alert_at)
    exact = []
    for _, p0, key, lower in tests:
        x = line.first_throw if key is None else line.results.get(key, 0)
        exact.append(binomial_tail(n, x, p0, lower))
    truth = min(1.0, len(tests) * min(exact))
    assert (screened <= alert_at) == (truth <= alert_at)
    assert screened >= truth * (1 - 1e-12)


def test_faults_change_only_their_tables_and_are_deterministic():
    fair = list(floor_events(3, 2, 9))
    faulty = list(floor_events(3, 2, 9, faults={"T002": Fault.parse("loaded-dice:4/36")}))
    assert faulty == list(floor_events(3, 2, 9, faults={"T002": Fault.parse("loaded-dice:4/36")}))
    def table(rs, t):
        return [r for r in rs if r["table_id"] == t]
    assert table(fair, "T001") == table(faulty, "T001") and table(fair, "T003") == table(faulty, "T003")
    assert table(fair, "T002") != table(faulty, "T002")
    poster = list(floor_events(1, 4, 9, faults={"T001": Fault.parse("past-posting:16")}))
    wagers = {r["seq"]: r for r in poster if r["type"] == "WagerPlaced" and r["position"] == 16
              and r["wager"] == "hot_roller"}
    assert wagers
    for r in wagers.values():  # the next valid throw after each of its wagers is never a 7
        nxt = next(x for x in poster if x["seq"] > r["seq"] and x["type"] == "DiceThrown" and x["valid"])
        assert nxt["die1"] + nxt["die2"] != 7
