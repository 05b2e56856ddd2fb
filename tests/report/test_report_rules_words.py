"""The report says each table's Rules Submission in words, from the rules package
(craps_streams/rules/board.py): a table opened with its own Fire Bet paytable (§ 601a.2) shows its
own pays, the others the default; the wagers are named, not coded."""
from __future__ import annotations

import html as html_text
from datetime import date

from craps_streams.authenticity import TableSigner, sign_record
from craps_streams.report import files
from craps_streams.rules.board import board_of_record
from craps_streams.sim.floor import floor_events
from tests.report.report_fixtures import RING, ms, report, write

CUSTOM = {"fire_custom": {"3": 10, "4": 50, "6": 500}}


def test_each_table_shows_its_own_paytables(tmp_path):
    signer = TableSigner(RING)
    records = []
    for r in floor_events(2, 2.0, 5, 0.0, ms("2026-01-05T15:00:00-05:00")):
        if r["type"] == "TableOpened" and r["table_id"] == "T002":
            r = {**r, "rules": CUSTOM}
        records.append(sign_record(signer, r))
    rep = report(write(tmp_path / "floor.jsonl", records), date(2026, 1, 5))
    custom, default = rep["rules_in_force"]["T002"][-1], rep["rules_in_force"]["T001"][-1]
    assert custom["board"]["paytables"]["fire"] == \
        "fewer than 3 points lose; 3 points 10 to 1; 4-5 points 50 to 1; 6 points 500 to 1"
    assert default["board"]["paytables"]["fire"] == \
        "fewer than 4 points lose; 4 points 24 to 1; 5 points 249 to 1; 6 points 999 to 1"
    assert default["board"] == board_of_record(None)
    assert default["table_kind_words"] in ("live", "hybrid", "fully automated electronic")
    page = html_text.unescape(files.render_html(rep))
    assert "3 points 10 to 1; 4-5 points 50 to 1; 6 points 500 to 1" in page
    assert "4 points 24 to 1; 5 points 249 to 1; 6 points 999 to 1" in page
    assert "the point numbers 4, 5, 6, 8, 9, 10" in " ".join(page.split())
    assert "<td>all_small</td>" not in page and "<td>All Small</td>" in page
