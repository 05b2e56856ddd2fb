"""The floor view's folds, without a broker: a replay's outputs and states folded into table views."""
from __future__ import annotations

import json
import random
from collections import defaultdict

import pytest

from craps_streams.app.shell import state_from_text, state_to_text
from craps_streams.codec import to_json_line
from craps_streams.floor import folding
from craps_streams.replay.engine import Replay, json_lines
from craps_streams.rules import output_to_record
from craps_streams.sim.floor import floor_events

from tests.floor.replayed import replayed_views


def history(tables=4, hours=1.0, seed=5, bad_rate=0.0) -> list[str]:
    return [r if type(r) is str else to_json_line(r) for r in floor_events(tables, hours, seed, bad_rate)]


def topic_records(lines):
    """(topic, table, offset, record or state text) as the view's agents would receive them: every
    output in order, and a table-state record after each event that changed a table."""
    replay = Replay()
    offsets = defaultdict(int)
    out = []
    for record, where in json_lines(lines, "floor"):
        for o in replay.feed_record(record, where):
            r = output_to_record(o)
            if r.get("table_id"):
                topic = {"WagerSettled": "settlements", "MarkerPlaced": "markers", "MarkerCleared": "markers",
                         "SurveillanceAlerted": "alerts"}.get(r["type"])
                if topic:
                    offsets[topic, r["table_id"]] += 1
                    out.append((topic, r["table_id"], offsets[topic, r["table_id"]], r))
        table = record.get("table_id") if isinstance(record, dict) else None
        if table in replay.tables:
            offsets["state", table] += 1
            out.append(("state", table, offsets["state", table],
                        state_to_text(replay.tables[table], replay.books.get(table))))
    return out


FOLD = {"settlements": folding.fold_settlement, "markers": folding.fold_marker, "alerts": folding.fold_alert,
        "state": folding.fold_state}


def fold_all(records) -> dict:
    tables: dict[tuple, dict] = {}
    for topic, table, offset, value in records:
        new = FOLD[topic](tables.get((topic, table)), offset, value)
        if new is not None:
            tables[topic, table] = new
    return tables


def details(tables: dict) -> dict:
    ids = {t for _, t in tables}
    return {t: folding.table_detail(t, tables.get(("state", t)), tables.get(("settlements", t)),
                                    tables.get(("markers", t)), tables.get(("alerts", t))) for t in ids}


@pytest.fixture(scope="module")
def floor_lines():
    return history(tables=4, hours=1.5, seed=5, bad_rate=0.02)


@pytest.fixture(scope="module")
def floor_records(floor_lines):
    return topic_records(floor_lines)


def test_the_folded_topics_equal_the_replayed_view(floor_lines, floor_records):
    views = details(fold_all(floor_records))
    want = replayed_views(floor_lines)
    assert sorted(views) == sorted(want)
    for t in want:
        got = {k: v for k, v in views[t].items() if k != "series"}
        assert got == {k: v for k, v in want[t].items() if k != "series"}, t
    assert any(v["settled"] for v in views.values())
    assert any(v["observed"].get("fire_points") for v in views.values())


def test_a_state_record_read_directly_gives_the_view_of_the_rebuilt_state(floor_lines):
    """The fold reads a table-state record's fields straight from its JSON (`view_of_record`); at
    every state of the floor (a gap and its held events included) that is the view `table_view`
    gives of the state and hold book the record rebuilds."""
    lines = list(floor_lines)
    t2 = [i for i, x in enumerate(lines) if '"table_id":"T002"' in x.replace(" ", "")]
    del lines[t2[len(t2) // 2]]  # everything of T002 after it is held
    states = [value for topic, _, _, value in topic_records(lines) if topic == "state"]
    assert len(states) > 1000
    for text in states:
        want = folding.table_view(*state_from_text(text))
        assert folding.view_of_record(json.loads(text)) == want
        assert folding.view_of_record(folding.page_record(text)) == want
        assert len(folding.page_record(text)["watch"]) == 1  # the record's shape is the one expected
    views = [folding.view_of_record(json.loads(text)) for text in states]
    assert any(v["held_events"] for v in views) and any(v["wagers_in_action"] for v in views)
    assert any(v["fire_points"] for v in views) and any(v["bonus_marked"] for v in views)
    assert any(v["hot_roller_combos"] for v in views) and any(v["hot_shooter_throws"] for v in views)
    assert any(h["settled"] for v in views for h in v["hold"])


def test_a_state_record_of_another_shape_is_read_whole(floor_records):
    """Records stored before the hold book or the watch joined the table's record are parsed whole,
    and give the view of the state they rebuild."""
    text = next(value for topic, _, _, value in reversed(floor_records) if topic == "state")
    record = json.loads(text)
    for older in (record["table"], {**record, "watch": None}, {"hold": record["hold"], "table": record["table"]}):
        older_text = json.dumps(older, separators=(",", ":"), sort_keys=True)
        assert folding.page_record(older_text) == older
        want = folding.table_view(*state_from_text(older_text))
        assert folding.view_of_record(folding.page_record(older_text)) == want


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_redelivery_never_counts_twice(floor_records, seed):
    """At-least-once: after a crash the agents see a tail of each partition again (and a rebalance
    may replay any suffix): the view is the same as if every record had come once."""
    records = floor_records
    once = fold_all(records)
    rnd = random.Random(seed)
    redelivered = []
    i = 0
    while i < len(records):
        step = rnd.randint(1, 200)
        redelivered += records[i:i + step]
        back = rnd.randint(0, step)  # a crash: the last `back` records come again
        redelivered += records[i + step - back:i + step]
        i += step
    assert len(redelivered) > len(records)
    assert fold_all(redelivered) == once


def test_an_older_state_record_does_not_overwrite_a_newer_one(floor_lines, floor_records):
    states = [r for r in floor_records if r[0] == "state" and r[1] == "T001"]
    newest = folding.fold_state(None, states[-1][2], states[-1][3])
    assert folding.fold_state(newest, states[-2][2], states[-2][3]) is None
    assert newest["view"]["last_seq"] == replayed_views(floor_lines)["T001"]["last_seq"]


def test_a_cohort_decided_by_one_throw_is_one_observation():
    base = {"table_id": "T1", "ts": 1, "position": 1, "wager": "fire", "outcome": "lose", "stake_cents": 500,
            "won_cents": 0, "paytable": "fire-623a.5", "detail": "points=2", "seq": 40}
    book = None
    for n, wager_id in enumerate(("w1", "w2", "w3"), 1):
        book = folding.fold_settlement(book, n, {**base, "id": f"T1/40/settle/{wager_id}", "wager_id": wager_id})
    assert book["count"] == 3
    assert book["observed"] == {"fire_points": {"2": 1}}
    book = folding.fold_settlement(book, 4, {**base, "id": "T1/90/settle/w4", "wager_id": "w4", "seq": 90})
    assert book["observed"] == {"fire_points": {"2": 2}}


@pytest.mark.parametrize("wager,detail,want", [
    ("fire", "points=4", ("fire_points", "4")),
    ("fire", "shooter changed: surrendered", None),
    ("hot_roller", "numbers=2", ("hot_roller", "seven-out 2")),
    ("hot_roller", "come-out seven, numbers=1", ("hot_roller", "come-out 7")),
    ("hot_shooter", "throws=17", ("hand_length", "17")),
    ("hot_shooter", "throws=75", ("hand_length", "40")),
    ("all_small", "all_small complete", ("bonus_all_small", "win")),
    ("all_tall", "seven with 8,9 marked", ("bonus_all_tall", "7 first")),
    ("all_tall", "table closed", None),
])
def test_what_a_settlement_observes(wager, detail, want):
    assert folding.decision_of({"wager": wager, "detail": detail}) == want


def test_every_observable_label_has_an_exact_probability_and_they_sum_to_one():
    exact = folding.exact_distributions()
    for dist, probs in exact.items():
        assert sum(probs.values()) == pytest.approx(1.0, abs=1e-12), dist
        assert all(p >= 0 for p in probs.values())
    assert set(exact["fire_points"]) == {str(k) for k in range(7)}


def test_observed_fire_points_follow_the_exact_distribution():
    lines = history(tables=8, hours=4, seed=9)
    observed = folding.observed_floor(
        [v for (topic, _), v in fold_all(topic_records(lines)).items() if topic == "settlements"])
    fire = observed["fire_points"]
    n = sum(fire.values())
    assert n > 150
    exact = folding.exact_distributions()["fire_points"]
    # 0 points: the most likely outcome by far (~0.40); a loose check, the dice are the simulator's
    assert abs(fire.get("0", 0) / n - exact["0"]) < 0.08


def test_a_gap_is_an_open_alert_while_the_table_is_suspended(floor_lines):
    lines = [x for x in floor_lines]
    # Drop one event of T002 in the middle: everything after it is held.
    t2 = [i for i, x in enumerate(lines) if '"table_id":"T002"' in x.replace(" ", "")]
    del lines[t2[len(t2) // 2]]
    view = replayed_views(lines)["T002"]
    assert view["suspended"] and view["held_events"] > 0
    assert [a["alert"] for a in view["alerts_open"]] == ["sequence_gap"]
    assert replayed_views(floor_lines)["T002"]["alerts_open"] == []


def test_a_hold_anomaly_is_open_while_its_line_stands_alerted():
    """All Small paid hand after hand (tests/surveillance/test_table_watch.py): the hold_anomaly is
    raised, and the floor shows it open, its line alerted, while the watch's tail stands alerted."""
    ts0 = 1_700_000_000_000
    seq = 0

    def rec(r):
        nonlocal seq
        seq += 1
        return {"table_id": "T1", "seq": seq, "ts": ts0 + seq * 1000, **r}

    lines = [rec({"type": "TableOpened", "table_kind": "fully_automated"}),
             rec({"type": "ShooterChanged", "shooter_id": "ann", "position": 1, "reason": "table_open"})]
    for hand in range(10):
        lines.append(rec({"type": "WagerPlaced", "wager_id": f"a{hand}", "position": 2, "wager": "all_small",
                          "amount_cents": 1000}))
        for a, b in ((1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (1, 3), (1, 3), (3, 4)):
            lines.append(rec({"type": "DiceThrown", "die1": a, "die2": b, "valid": True}))
        lines.append(rec({"type": "ShooterChanged", "shooter_id": f"s{hand}", "position": 1, "reason": "seven_out"}))
    view = replayed_views([to_json_line(r) for r in lines])["T1"]
    assert [a["alert"] for a in view["recent_alerts"]].count("hold_anomaly") == 1
    assert [h["wager"] for h in view["hold"] if h["alerted"]] == ["all_small"]
    assert [a["alert"] for a in view["alerts_open"]] == ["hold_anomaly"]
