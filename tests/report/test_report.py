"""The report's money against the replay's settlements: gaming-day edges (the day's start, a clock
change, a table open across the boundary), a day as the sum of its shifts, and bad input kept in
the exception section, never in the money."""
from __future__ import annotations

import json
from collections import defaultdict
from datetime import date
from fractions import Fraction

import pytest

from craps_streams.report.calendar import Period
from tests.report.report_fixtures import (
    NY,
    floor,
    money,
    ms,
    report,
    settlements,
    summed,
    write,
)


def _oracle(settled, boundary_ms: int) -> dict:
    """table -> {"before"/"after": house win cents}: the settlements split by their deciding time."""
    out: dict = defaultdict(lambda: {"before": 0, "after": 0})
    for s in settled:
        win = s.stake_cents if s.outcome == "lose" else -s.won_cents
        out[s.table_id]["before" if s.ts < boundary_ms else "after"] += win
    return out


def _wins(rep) -> dict:
    return {row["table_id"]: row["house_win_cents"] for row in rep["tables"]}


def test_settlements_count_on_the_gaming_day_they_were_decided(tmp_path):
    boundary = ms("2026-01-02T06:00:00-05:00")
    records = floor(3, 3.0, boundary - 90 * 60_000)
    path = write(tmp_path / "floor.jsonl", records)
    settled = settlements(records)
    oracle = _oracle(settled, boundary)
    day1, day2 = report(path, date(2026, 1, 1)), report(path, date(2026, 1, 2))
    assert _wins(day1) == {t: v["before"] for t, v in oracle.items()}
    assert _wins(day2) == {t: v["after"] for t, v in oracle.items()}
    assert {r["table_id"] for r in day1["tables"]} == {r["table_id"] for r in day2["tables"]} == {"T001", "T002", "T003"}
    # Wagers placed before the day's start and decided after it are on the later day.
    placed_at = {(r["table_id"], r["seq"]): r["ts"] for r in records if type(r) is dict}
    across = [s for s in settled if placed_at[(s.table_id, s.placed_seq)] < boundary <= s.ts]
    assert len(across) > 5
    assert sum(r["wagers"] for r in day2["tables"]) == sum(1 for s in settled if s.ts >= boundary)
    # Month to date on the 2nd: the 1st and the 2nd; the history starts after the month's start.
    mtd = next(r for r in day2["floor"] if r["scope"] == "month_to_date" and r["wager"] == "all")
    assert money(mtd) == summed(r for d in (day1, day2) for r in d["floor"]
                                if r["scope"].startswith("day:") and r["wager"] == "all")
    assert day2["month_to_date"]["complete"] is False
    assert day2["year_to_date"]["complete"] is False


def test_a_clock_change_day_is_23_hours_and_its_boundary_is_local(tmp_path):
    # 2026-03-08: clocks go forward at 02:00 EST; the gaming day of 03-07 ends at 06:00 EDT = 10:00Z.
    boundary = ms("2026-03-08T10:00:00+00:00")
    records = floor(2, 3.0, ms("2026-03-08T08:30:00+00:00"), seed=8)
    path = write(tmp_path / "floor.jsonl", records)
    oracle = _oracle(settlements(records), boundary)
    before, after = report(path, date(2026, 3, 7)), report(path, date(2026, 3, 8))
    assert before["period"]["hours"] == 23.0 and after["period"]["hours"] == 24.0
    assert before["period"]["end"] == "2026-03-08T06:00:00-04:00"
    assert _wins(before) == {t: v["before"] for t, v in oracle.items()}
    assert _wins(after) == {t: v["after"] for t, v in oracle.items()}
    # handle by hour: 23 hours on that day
    assert len(before["plots"]["handle_by_hour"]["floor_cents"]) == 23


def test_a_day_is_the_sum_of_its_shifts(tmp_path):
    records = floor(3, 3.0, ms("2026-01-05T12:30:00-05:00"), seed=5)  # across day -> swing at 14:00
    path = write(tmp_path / "floor.jsonl", records)
    day = report(path, date(2026, 1, 5))
    shifts = {n: report(path, date(2026, 1, 5), shift=n) for n in NY.shift_names()}
    assert {r["shift"] for r in day["shifts"]} == {"day", "swing"}
    for row in day["tables"]:
        t = row["table_id"]
        assert money(row) == summed(r for s in shifts.values() for r in s["tables"] if r["table_id"] == t)
        assert money(row) == summed(r for r in day["shifts"] if r["table_id"] == t)
        assert money(row) == summed(r for r in day["kinds"] if r["table_id"] == t)
        for name, rep in shifts.items():
            mine = [r for r in day["shifts"] if r["table_id"] == t and r["shift"] == name]
            theirs = [r for r in rep["tables"] if r["table_id"] == t]
            assert summed(mine) == summed(theirs)
    total = next(r for r in day["floor"] if r["scope"] == "day:2026-01-05" and r["wager"] == "all")
    assert money(total) == summed(r for r in day["tables"])
    assert total["house_win_cents"] != 0 and total["handle_cents"] > 100_000
    # hold % from the cents
    assert total["hold_percent"] == round(100 * total["house_win_cents"] / total["handle_cents"], 4)
    json.dumps(day)  # plain data throughout


def _dirty(records: list) -> tuple[list, dict]:
    """The same floor with bad input added: forged throws (claiming an upcoming throw's seq),
    duplicates, a torn line, a malformed record, and two events of a table swapped (a gap, then its
    filling). Returns the records and how many of each were added."""
    out = list(records)
    throws = [i for i, r in enumerate(out) if type(r) is dict and r["type"] == "DiceThrown" and r["table_id"] == "T001"]
    forged = 0
    for i in sorted(throws[10::25], reverse=True):
        honest = out[i]
        out.insert(i, {**honest, "die1": 6, "die2": 6 if (honest["die1"], honest["die2"]) != (6, 6) else 5,
                       "tag": "Q" * 43})
        forged += 1
    dups = 0
    for i in (200, 120, 60):
        out.insert(i + 1, dict(out[i]))
        dups += 1
    out.insert(30, "{not json")
    out.insert(40, {"type": "DiceThrown", "table_id": "T002", "seq": 10**6, "ts": out[40]["ts"], "die1": "four"})
    # swap two consecutive T002 events after the first hour
    t2 = [i for i, r in enumerate(out) if type(r) is dict and r["table_id"] == "T002" and r.get("type") == "WagerPlaced"]
    a = t2[len(t2) // 2]
    b = next(i for i in range(a + 1, len(out)) if type(out[i]) is dict and out[i]["table_id"] == "T002")
    out[a], out[b] = out[b], out[a]
    return out, {"forged": forged, "duplicates": dups}


def test_bad_input_is_in_the_exceptions_and_never_in_the_money(tmp_path):
    records = floor(2, 2.0, ms("2026-01-05T16:00:00-05:00"), seed=9)
    dirty, added = _dirty(records)
    clean = report(write(tmp_path / "clean.jsonl", records), date(2026, 1, 5))
    bad = report(write(tmp_path / "dirty.jsonl", dirty), date(2026, 1, 5))
    for grain in ("tables", "kinds", "shifts", "floor"):
        assert [money(r) for r in bad[grain]] == [money(r) for r in clean[grain]], grain
    assert [r["p_value"] for r in bad["kinds"]] == [r["p_value"] for r in clean["kinds"]]
    ex, ok = bad["exceptions"], clean["exceptions"]
    assert ok["rejections"]["count"] == ok["forged_events"]["count"] == ok["sequence_faults"]["duplicates"] == 0
    assert ex["forged_events"]["count"] == added["forged"] > 0
    assert ex["rejections"]["by_reason"]["bad_signature"] == added["forged"]
    assert ex["alerts"]["by_kind"]["forged_event"] == added["forged"]
    assert ex["sequence_faults"]["duplicates"] == added["duplicates"]
    assert ex["sequence_faults"]["gaps"] == 1 and ex["sequence_faults"]["resumed"] == 1
    assert ex["rejections"]["by_reason"].get("malformed", 0) + ex["undated_rejections"]["by_reason"].get("malformed", 0) == 2
    assert ex["replay"]["duplicates"] == added["duplicates"]


def test_a_range_report_has_month_and_year_to_date_and_every_day(tmp_path):
    records = floor(2, 30.0, ms("2026-02-01T03:00:00-05:00"), seed=2)
    path = write(tmp_path / "floor.jsonl", records)
    rng = report(path, date(2026, 1, 31), date(2026, 2, 2))
    scopes = {r["scope"] for r in rng["floor"]}
    assert scopes == {"day:2026-01-31", "day:2026-02-01", "day:2026-02-02", "period", "month_to_date", "year_to_date"}
    row = {r["scope"]: r for r in rng["floor"] if r["wager"] == "all"}
    assert money(row["period"]) == summed(row[s] for s in scopes if s.startswith("day:"))
    # month to date (February) leaves out January 31st; year to date has all three days
    assert money(row["month_to_date"]) == summed(row[s] for s in ("day:2026-02-01", "day:2026-02-02"))
    assert money(row["year_to_date"]) == money(row["period"])
    assert Period(date(2026, 1, 31), date(2026, 2, 2)).kind == "range"
    # the Rules Submission in force per table, and the provenance
    assert set(rng["rules_in_force"]) == {"T001", "T002"}
    prov = rng["provenance"]
    assert prov["history"]["kind"] == "jsonl" and len(prov["history"]["files"][0]["sha256"]) == 64
    assert prov["key_ring"]["key_ids"] == ["k-T001", "k-T002", "k-T003", "k-T004"]
    assert prov["software"]["version"]


def test_a_range_across_the_new_year_keeps_the_old_years_days(tmp_path):
    # The year to date of 2026-01-01 begins that day, after the range does: the 31st is still the range's.
    boundary = ms("2026-01-01T06:00:00-05:00")
    records = floor(2, 4.0, boundary - 2 * 3_600_000, seed=4)
    path = write(tmp_path / "floor.jsonl", records)
    settled = settlements(records)
    rng = report(path, date(2025, 12, 31), date(2026, 1, 1))
    row = {r["scope"]: r for r in rng["floor"] if r["wager"] == "all"}
    old = sum(1 for s in settled if s.ts < boundary)
    assert old > 20 and row["day:2025-12-31"]["wagers"] == old
    assert row["period"]["wagers"] == len(settled)
    assert money(row["period"]) == summed(row[s] for s in ("day:2025-12-31", "day:2026-01-01"))
    assert money(row["year_to_date"]) == money(row["day:2026-01-01"])
    assert money(row["month_to_date"]) == money(row["day:2026-01-01"])


@pytest.mark.parametrize("numerator, handle", [
    (0, 1), (1, 3), (-7, 3), (2, 3), (123_456_789, 987_654_321), (2**60 + 1, 3 * 2**55 + 7), (-(2**70) - 3, 2**67 + 11),
    (Fraction(1, 3), 7), (Fraction(-22, 7), 13), (Fraction(2**80 + 1, 3**40), 2**61 - 1), (Fraction(5), 10),
    (10**25 + 7, 10**20 + 3), (1, 1_000_003), (3, 2),
])
def test_percent_is_the_exact_ratio_rounded(numerator, handle):
    """`percent` divides the integers themselves: the float of the exact ratio, as a Fraction gives it."""
    from craps_streams.report.figures import percent

    assert percent(numerator, handle) == round(float(Fraction(numerator) * 100 / handle), 4)
    assert percent(numerator, 0) is None
