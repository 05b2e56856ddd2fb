"""The pure mapping from decoded output records to ledger rows."""
from __future__ import annotations

from datetime import date, time

from craps_streams.codec import decode_output, encode_output
from craps_streams.ledger.rows import rows_of
from craps_streams.report.calendar import GamingCalendar

CAL = GamingCalendar("America/New_York", time(6, 0))
# 2026-03-08 05:59:59 EST (before the day start: gaming day 03-07) and 2026-03-08 06:00 EDT
# (the spring-forward day: the clock jumped at 02:00).
BEFORE_START = 1772963999000
AFTER_START_DST = 1772964000000


def settled(ts: int, **kw) -> dict:
    return decode_output(encode_output({
        "type": "WagerSettled", "id": f"T001/9/settle/w{ts}", "wager_id": f"w{ts}", "table_id": "T001", "position": 3,
        "wager": "fire", "outcome": "win", "stake_cents": 500, "won_cents": 12_000, "paytable": "fire-623a.5",
        "detail": "points=4", "seq": 9, "ts": ts, "placed_seq": 2, **kw}))


def test_a_settlement_is_one_row_on_the_reports_gaming_day_and_shift():
    [before] = rows_of(settled(BEFORE_START), 3, 41, CAL)
    [after] = rows_of(settled(AFTER_START_DST), 3, 42, CAL)
    assert before.table == "settlements"
    assert (before.values["gaming_day"], before.values["shift"]) == (date(2026, 3, 7), "grave")
    assert (after.values["gaming_day"], after.values["shift"]) == (date(2026, 3, 8), "day")
    assert after.values["gaming_day"] == CAL.gaming_day(AFTER_START_DST)
    assert before.values | {"gaming_day": None, "shift": None} == {
        "id": f"T001/9/settle/w{BEFORE_START}", "wager_id": f"w{BEFORE_START}", "table_id": "T001", "position": 3,
        "wager": "fire", "outcome": "win", "stake_cents": 500, "won_cents": 12_000, "paytable": "fire-623a.5",
        "detail": "points=4", "seq": 9, "ts": BEFORE_START, "placed_seq": 2, "gaming_day": None, "shift": None,
        "source_partition": 3, "source_offset": 41}


def test_an_undecodable_rejection_keeps_its_raw_bytes_and_coordinates():
    record = decode_output(encode_output({
        "type": "EventRejected", "id": "rejected/t.table-events/2/17", "table_id": "", "seq": 0, "ts": 0,
        "reason": "undecodable", "message": "not Avro", "raw": b"\x00\xffgarbage", "topic": "t.table-events",
        "partition": 2, "offset": 17}))
    [row] = rows_of(record, 2, 5, CAL)
    assert row.table == "rejections"
    assert row.values["raw"] == b"\x00\xffgarbage" and type(row.values["raw"]) is bytes
    assert (row.values["topic"], row.values["partition"], row.values["offset"]) == ("t.table-events", 2, 17)
    assert row.values["event_json"] is None


def test_an_alert_is_a_row_and_one_row_per_wager_it_names_once():
    record = decode_output(encode_output({
        "type": "SurveillanceAlerted", "id": "T002/40/alert/large_win", "table_id": "T002", "seq": 40, "ts": 5,
        "alert": "large_win", "shooter_id": "P7", "message": "won $6,000", "wager_ids": ["w1", "w2", "w1"]}))
    alert, *wagers = rows_of(record, 0, 8, CAL)
    assert alert.table == "alerts" and alert.values["shooter_id"] == "P7"
    assert [(w.table, w.values) for w in wagers] == [
        ("alert_wagers", {"alert_id": "T002/40/alert/large_win", "wager_id": "w1"}),
        ("alert_wagers", {"alert_id": "T002/40/alert/large_win", "wager_id": "w2"})]


def test_layout_markers_make_no_rows():
    record = decode_output(encode_output({
        "type": "MarkerPlaced", "id": "T1/3/marker/point-6", "table_id": "T1", "seq": 3, "ts": 1, "layout": "fire",
        "cohort": "c", "marker": "point-6", "count": 1}))
    assert rows_of(record, 0, 0, CAL) == []


def test_the_shift_is_the_calendars_at_every_boundary():
    from datetime import time as clock

    from craps_streams.ledger.rows import shift_of

    cal = GamingCalendar("America/New_York", clock(6, 0),
                         (("day", clock(6, 0)), ("swing", clock(14, 0)), ("grave", clock(22, 0))))
    # Around both 2026 clock changes, on every whole hour (a shift starts on one) and 20 minutes
    # past, and a millisecond either side.
    for start in (1772798400000, 1793296800000):  # whole UTC hours: 2026-03-06 12:00, 2026-10-30 14:00
        assert start % 3_600_000 == 0
        for ts in range(start, start + 3 * 86_400_000, 1_200_000):
            for t in (ts - 1, ts, ts + 1):
                day = cal.gaming_day(t)
                assert shift_of(cal, t, day) == cal.shift_of(t, day), t


def test_the_gaming_day_by_spans_is_the_calendars_across_clock_changes():
    """`gaming_day_of` finds a day by the span of the day found last: the calendar's day for every
    instant around both 2026 clock changes and every day start, read forward, backward and
    jumping between days, for calendars whose day starts at and off the hour of the change."""
    from craps_streams.ledger.rows import gaming_day_of

    for calendar in (CAL, GamingCalendar("America/New_York", time(2, 0), (("early", time(2, 0)), ("late", time(14, 0)))),
                     GamingCalendar("Europe/London", time(1, 30), (("one", time(1, 30)),))):
        instants = []
        for around in (1772949600000, 1793512800000):  # 2026-03-08 and 2026-11-01, 06:00 UTC
            for day in range(-2, 3):
                start, _ = calendar.day_bounds(calendar.gaming_day(around + day * 86_400_000))
                instants += [start - 1, start, start + 1]
            instants += range(around - 2 * 86_400_000, around + 2 * 86_400_000, 419_000)
        jumping = instants[::2] + instants[::-3] + instants[1::5]
        for ts in instants + instants[::-1] + jumping:
            assert gaming_day_of(calendar, ts) == calendar.gaming_day(ts), (calendar, ts)
