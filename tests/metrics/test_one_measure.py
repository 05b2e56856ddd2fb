"""One measure of how unusual a hold line is: the status panel (from the workers' metrics) and the
floor page (from the floor view's folded rows) show the report's p of each line, to the digit, with
the investigation level and the words saying what it means (craps_streams/metrics/unusual.py)."""
from __future__ import annotations

from datetime import date

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from craps_streams.app.shell import SettlementShell
from craps_streams.authenticity import TagCheck
from craps_streams.codec import encode_event, to_json_line
from craps_streams.metrics.exporter import FloorMetrics
from craps_streams.metrics.panel import snapshot_of, summary
from craps_streams.metrics.unusual import INVESTIGATION_LEVEL, meaning, p_text
from tests.floor.replayed import ReplayedFloor
from tests.report.report_fixtures import RING, floor, ms, report, write


@pytest.fixture(scope="module")
def faces(tmp_path_factory):
    records = floor(4, 4.0, ms("2026-03-10T09:00:00-04:00"), seed=11)
    path = write(tmp_path_factory.mktemp("floor") / "floor.jsonl", records)
    rep = report(path, date(2026, 3, 10))
    reported = {(r["table_id"], r["wager"], r["paytable"]): r for r in rep["kinds"]}
    shell = SettlementShell(lambda t: None, tags=TagCheck(RING))
    for i, r in enumerate(records):
        shell.handle(encode_event(r), "t", 0, i)
    metrics = FloorMetrics(tables=lambda: ((s, shell.books.get(t)) for t, s in shell.states.items()))
    text = generate_latest(metrics.registry).decode()
    exported = {(s.labels["table"], s.labels["wager"], s.labels["paytable"]): s.value
                for f in text_string_to_metric_families(text) for s in f.samples if s.name == "craps_hold_p_value"}
    view = ReplayedFloor([to_json_line(r) for r in records])
    rows = [view.row(t) for t in view.table_ids()]
    shown = {(row["table_id"], h["wager"], h["paytable"]): h for row in rows for h in row["hold"]}
    return reported, exported, shown, text, rows


def test_the_panel_and_the_floor_show_the_reports_p_of_every_line(faces):
    reported, exported, shown, _, _ = faces
    decided = {k: r for k, r in reported.items() if r["decisions"]}
    assert len(decided) >= 16 and set(exported) == set(decided)
    assert {k for k, h in shown.items() if h["p_value"] is not None} == set(decided)
    assert any(r["investigate"] for r in decided.values())  # the floor has a line the report flags
    for k, r in decided.items():
        assert exported[k] == pytest.approx(r["p_value"], rel=1e-9, abs=1e-12), k
        h = shown[k]
        assert h["p_value"] == pytest.approx(r["p_value"], rel=1e-9, abs=1e-12), k
        assert h["p_text"] == p_text(r["p_value"]) and h["investigate"] == r["investigate"], k
        assert h["unusual"] == meaning(r["p_value"]), k


def test_the_panel_names_the_least_probable_line_with_its_words(faces):
    reported, _, _, text, rows = faces
    snap = snapshot_of(1_000.0, [text], {"tables": rows})
    worst = min((r["p_value"], k) for k, r in reported.items() if r["decisions"])
    e = snap.extreme
    assert ((e.table_id, e.wager, e.paytable), e.p) == (worst[1], pytest.approx(worst[0], rel=1e-9))
    line = next(str(t) for t in summary(snap) if str(t).startswith("most unusual"))
    assert f"most unusual {e.table_id} {e.wager} ({e.paytable}) p {p_text(worst[0])} (z {e.z:+.2f}): " in line
    assert line.endswith(meaning(worst[0])) and worst[0] <= INVESTIGATION_LEVEL
    assert line.endswith(f"at or below {p_text(INVESTIGATION_LEVEL)}, investigate")


def test_a_live_look_computes_changed_lines_off_the_loop_and_catches_up(faces):
    """LiveMeasures: a look computes at once the lines it never saw; a changed line shows its last p
    while a background thread computes it; a later look has the exact p."""
    import time

    from craps_streams.metrics.unusual import LiveMeasures, line_tail
    from craps_streams.odds import wager_odds

    odds = wager_odds("fire")
    lines = [(f"L{i}", odds, {500: 40 + i}, 500 * (40 + i) - 100_000) for i in range(6)]
    live = LiveMeasures()
    first = live.look(lines)
    assert first == {k: line_tail(o, s, h).p for k, o, s, h in lines}  # never seen: all computed
    moved = [(k, o, {500: s[500] + 1}, h - 99_500) for k, o, s, h in lines]
    exact = {k: line_tail(o, s, h).p for k, o, s, h in moved}
    assert exact != first
    deadline = time.monotonic() + 10
    while (last := live.look(moved)) != exact and time.monotonic() < deadline:
        time.sleep(0.01)
    assert last == exact
