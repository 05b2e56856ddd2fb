"""The floor page in headless Chromium shows how unusual each hold line is by the report's own p
(to the report's three digits), red at or below the investigation level, and says in words what the
table's least probable line means: on a floor whose report flags a line for investigation."""
from __future__ import annotations

from datetime import date

import pytest

from craps_streams.codec import to_json_line
from craps_streams.metrics.unusual import meaning, p_text
from tests.floor.page_shots import floor_page_layouts
from tests.floor.replayed import ReplayedFloor
from tests.report.report_fixtures import floor, ms, report, write


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    work = tmp_path_factory.mktemp("floor-unusual")
    records = floor(4, 4.0, ms("2026-03-10T09:00:00-04:00"), seed=11)
    rep = report(write(work / "floor.jsonl", records), date(2026, 3, 10))
    view = ReplayedFloor([to_json_line(r) for r in records])
    return rep, view, floor_page_layouts(view, [1400], work)[1400], work


def test_each_hold_line_shows_the_reports_p_and_the_least_probable_in_words(shown):
    rep, view, page, work = shown
    assert page["errors"] == [] and page["csp"] == []
    reported = {(r["table_id"], r["wager"], r["paytable"]): r for r in rep["kinds"]}
    flagged = [k for k, r in reported.items() if r["investigate"]]
    assert flagged, "the report flags no line"
    said = []
    for card in page["cards"]:
        t = card["table_id"]
        lines = view.views[t]["hold"]
        expected = [p_text(reported[t, h["wager"], h["paytable"]]["p_value"])
                    if reported[t, h["wager"], h["paytable"]]["decisions"] else "—" for h in lines]
        assert card["p_values"] == expected, f"{t}: {work}/floor-1400.png"
        worst = min((reported[t, h["wager"], h["paytable"]] for h in lines
                     if reported[t, h["wager"], h["paytable"]]["decisions"]), key=lambda r: r["p_value"])
        words = f"p {p_text(worst['p_value'])}: {meaning(worst['p_value'])}"
        assert card["most_unusual"].endswith(words), (card["most_unusual"], words)
        said.append(card["most_unusual"])
    assert any(s.endswith("at or below 0.05, investigate") for s in said)
