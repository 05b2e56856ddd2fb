"""`report --from-ledger` equals `report` from the history, every CSV line, on SQLite and on a real
PostgreSQL: a floor over two gaming days whose tables reopen under another Rules Submission (other
paytables, the other Hot Roller reading), with bad inputs and an opening the worker rejects."""
from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import pytest
from sqlalchemy import select

from craps_streams.ledger import schema
from craps_streams.ledger.books import rebuild
from craps_streams.ledger.report import LedgerCalendarMismatch, Regimes, openings_in_force, report_from_ledger
from craps_streams.ledger.store import Ledger, open_engine
from craps_streams.report import GamingCalendar, Period, ReportSettings, make_report
from craps_streams.report.calendar import parse_clock
from craps_streams.report.files import write_csv
from craps_streams.sim.floor import FLOOR_EPOCH_MS, floor_events, table_kind_for

from tests.conftest import ROOT
from tests.ledger.history_ledger import fill_from_history

CAL = GamingCalendar()
HOUR = 3_600_000
START = FLOOR_EPOCH_MS + 2 * 24 * HOUR  # 2026-01-02 19:00 in New York: gaming days 01-02 and 01-03
REOPENED_RULES = {"bonus_paytable": "bonus-623b.3", "hot_roller_paytable": "hot-roller-623c.1h-B",
                  "hot_roller_come_out_seven": "pay_by_table", "fire_custom": {"4": 20, "5": 150, "6": 900}}


def history_lines() -> list[str]:
    """Three tables 7 hours under the defaults, an opening refused while T002 is open, then the
    tables reopened an hour later under REOPENED_RULES for 7 hours more (each table's seqs run on)."""
    first = list(floor_events(3, 7, 5, 0.03, start_ms=START))
    second = list(floor_events(3, 7, 6, 0.03, start_ms=START + 8 * HOUR, rules=REOPENED_RULES))
    shift: dict = {}
    top_seq: dict = {}
    out = []
    for part, records in enumerate((first, second)):
        shift, top_seq = dict(top_seq), {}  # the second part's seqs run on from the first's
        refused = False
        for r in records:
            if type(r) is dict and type(r.get("seq")) is int and type(r.get("table_id")) is str:
                t = r["table_id"]
                if part == 0 and t == "T002" and r["type"] == "DiceThrown" and not refused and r["seq"] > 300:
                    refused = True
                    out.append(json.dumps({"type": "TableOpened", "table_id": t, "seq": r["seq"], "ts": r["ts"],
                                           "table_kind": table_kind_for(2), "rules": REOPENED_RULES}))
                    shift[t] = shift.get(t, 0) + 1
                r = {**r, "seq": r["seq"] + shift.get(t, 0)}
                top_seq[t] = max(top_seq.get(t, 0), r["seq"])
            out.append(r if type(r) is str else json.dumps(r))
    return out


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    path = tmp_path_factory.mktemp("history") / "floor.jsonl"
    path.write_text("\n".join(history_lines()) + "\n", encoding="utf-8")
    return str(path)


def book_rows(ledger: Ledger) -> dict:
    with ledger.engine.connect() as conn:
        return {t.name: sorted(tuple(r) for r in conn.execute(select(t).where(*(
                    [t.c.decisions != 0] if t is schema.line_stakes else []))))
                for t in schema.BOOK_TABLES}


def csv_lines(report: dict, out) -> dict:
    return {p.name: p.read_text(encoding="utf-8").splitlines() for p in write_csv(report, out)}


PERIODS = {
    "range": (Period(dt.date(2026, 1, 2), dt.date(2026, 1, 3)), None),
    "last day, month to date": (Period(dt.date(2026, 1, 3), dt.date(2026, 1, 3)), None),
    "a shift": (Period(dt.date(2026, 1, 2), dt.date(2026, 1, 2), "grave"), None),
    "two tables": (Period(dt.date(2026, 1, 2), dt.date(2026, 1, 3)), frozenset({"T001", "T003"})),
}


def test_report_from_the_ledger_equals_the_report_from_history(history, ledger_url, tmp_path):
    ledger = Ledger(open_engine(ledger_url))
    ledger.migrate()
    ledger.bind_calendar(CAL)
    # batches of 45 rows: many a decision's settlements are split between two transactions
    fill_from_history(ledger, history, CAL, batch_rows=45)
    with ledger.engine.connect() as conn:
        openings = conn.execute(select(schema.table_openings)).all()
        regimes = Regimes(openings_in_force(conn, None))
        spans = [regimes.regime_of(r.table_id, r.first_seq, r.last_seq) for r in conn.execute(select(schema.line_totals))]
    assert len(openings) == 7  # three tables twice, and the one refused
    assert None in spans and 0 not in spans  # a line under two Rules Submissions; every line under an opening
    # the books kept batch by batch are the books made again from every settlement
    kept = book_rows(ledger)
    with ledger.engine.begin() as conn:
        rebuild(conn)
    rebuilt = book_rows(ledger)
    opened = rebuilt.pop("open_decisions")
    assert rebuilt == {k: v for k, v in kept.items() if k != "open_decisions"} and len(kept["line_stakes"]) > 100
    # each table's last decision, as the batches left it
    assert len(opened) >= 3 and set(opened) <= set(kept["open_decisions"])
    for name, (period, tables) in PERIODS.items():
        settings = ReportSettings(CAL, period, tables=tables)
        expected = make_report(settings, history)
        got = report_from_ledger(ledger.engine, settings, {})
        want, have = csv_lines(expected, tmp_path / name / "history"), csv_lines(got, tmp_path / name / "ledger")
        assert sum(len(v) for v in want.values()) > 20, name
        for file in want:
            assert have[file] == want[file], (name, file)
        # the reopened tables' lines are under their own paytables and reading
        if name == "range":
            readings = {(r["wager"], r["paytable"], r["reading"]) for r in got["kinds"]}
            assert ("hot_roller", "hot-roller-623c.1h-B", "come_out_seven=pay_by_table") in readings
            assert ("hot_roller", "hot-roller-623c.1h-A", "come_out_seven=lose") in readings
        # the parts beside the CSV that the ledger holds: exceptions, Rules Submissions, handle by
        # hour, outcomes against the odds
        for part in ("rejections", "undated_rejections", "alerts", "forged_events"):
            assert got["exceptions"][part] == expected["exceptions"][part], (name, part)
        assert got["rules_in_force"] == expected["rules_in_force"], name
        assert got["plots"]["handle_by_hour"] == expected["plots"]["handle_by_hour"], name
        assert got["plots"]["outcomes"] == expected["plots"]["outcomes"], name
    assert expected["exceptions"]["rejections"]["count"] > 0


def test_the_report_refuses_another_calendar_than_the_ledgers(tmp_path):
    ledger = Ledger(open_engine(f"sqlite:///{tmp_path / 'ledger.db'}"))
    ledger.migrate()
    ledger.bind_calendar(CAL)
    other = GamingCalendar("UTC", parse_clock("06:00"), CAL.shifts)
    with pytest.raises(LedgerCalendarMismatch, match="the ledger's gaming days are computed with"):
        report_from_ledger(ledger.engine, ReportSettings(other, Period(dt.date(2026, 1, 3), dt.date(2026, 1, 3))), {})


def test_the_command_reports_from_the_ledger(history, tmp_path):
    """`craps-streams report --from-ledger URL` writes the same CSV files as `report HISTORY`."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(open_engine(url))
    ledger.migrate()
    ledger.bind_calendar(CAL)
    fill_from_history(ledger, history, CAL)
    common = ["--day", "2026-01-03", "--tz", "America/New_York", "--day-start", "06:00", "--no-html",
              "--no-progress"]
    env_cmd = [sys.executable, "-m", "craps_streams.cli", "report"]
    for args, out in (([history, "--accept-untagged"], "history"), (["--from-ledger", url], "ledger")):
        done = subprocess.run([*env_cmd, *args, *common, "--out", str(tmp_path / out)], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    for name in ("tables.csv", "kinds.csv", "shifts.csv", "floor.csv"):
        assert (tmp_path / "ledger" / name).read_text() == (tmp_path / "history" / name).read_text(), name
    provenance = json.loads((tmp_path / "ledger" / "report.json").read_text())["provenance"]
    assert provenance["history"]["kind"] == "ledger" and provenance["history"]["next_offsets"]


def test_the_command_refuses_a_ledger_that_is_not_there(tmp_path):
    done = subprocess.run([sys.executable, "-m", "craps_streams.cli", "report", "--from-ledger",
                           f"sqlite:///{tmp_path / 'none.db'}", "--day", "2026-01-03", "--out", str(tmp_path / "r")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "no ledger at" in done.stderr, done.stderr
    assert not (tmp_path / "none.db").exists() and not (tmp_path / "r" / "kinds.csv").exists()


def test_a_ledger_report_written_out_a_day_at_a_time_is_the_report_held_whole(history, ledger_url, tmp_path,
                                                                            monkeypatch):
    """The ledger's lines are read a few gaming days at a time (`LEDGER_DAYS`) and, past
    `SPILL_LINES`, written out (report/days.py): the same report as its lines held whole, and
    nothing left on disk."""
    import tempfile

    from craps_streams.ledger import report as ledger_report
    from craps_streams.report.days import LeftDays

    ledger = Ledger(open_engine(ledger_url))
    ledger.migrate()
    ledger.bind_calendar(CAL)
    fill_from_history(ledger, history, CAL, batch_rows=500)
    for name in ("range", "two tables"):
        settings = ReportSettings(CAL, PERIODS[name][0], tables=PERIODS[name][1])
        whole = report_from_ledger(ledger.engine, settings, {})
        with monkeypatch.context() as m:
            scratch = tmp_path / name
            scratch.mkdir()
            m.setattr(tempfile, "tempdir", str(scratch))
            m.setattr(ledger_report, "SPILL_LINES", 0)
            m.setattr(ledger_report, "LEDGER_DAYS", 1)
            writes = []
            real = LeftDays.write_days
            m.setattr(LeftDays, "write_days", lambda self, by_day: writes.append(len(by_day)) or real(self, by_day))
            written = report_from_ledger(ledger.engine, settings, {})
        assert len(writes) >= 2 and written == whole, name
        assert not list(scratch.iterdir())
