"""Rule versions: a table closed and opened again under a new Rules Submission. The replay settles
the earlier wagers by the paytables then in force and the later ones by the new."""
from __future__ import annotations

from craps_streams.codec import encode_event
from craps_streams.archive import ArchiveWriter
from craps_streams.replay.engine import Replay
from craps_streams.replay.sources import archive_source, feed_item
from craps_streams.rules import WagerSettled

NEW_RULES = {"bonus_paytable": "bonus-623b.3", "hot_roller_paytable": "B"}
# Every Hot Roller combination (so all six numbers complete) and 2, 3, 4, 5, 6 (All Small), no 7,
# ending with the point 6 on; then a seven-out.
THROWS = [(1, 3), (2, 2), (1, 4), (2, 3), (1, 5), (2, 4), (3, 3), (2, 6), (3, 5), (4, 4), (3, 6), (4, 5),
          (5, 5), (1, 1), (1, 2), (4, 6), (3, 4)]


def history() -> list[dict]:
    records: list[dict] = []
    ts = 1_767_225_600_000

    def add(type_, **fields):
        nonlocal ts
        ts += 15_000
        records.append({"type": type_, "table_id": "T7", "seq": len(records) + 1, "ts": ts, **fields})

    for opening, rules in ((1, None), (2, NEW_RULES)):
        add("TableOpened", table_kind="live", **({"rules": rules} if rules else {}))
        add("ShooterChanged", shooter_id=f"s{opening}", position=3, reason="table_open")
        add("WagerPlaced", wager_id=f"small-{opening}", position=3, wager="all_small", amount_cents=500)
        add("WagerPlaced", wager_id=f"roller-{opening}", position=4, wager="hot_roller", amount_cents=500)
        for d1, d2 in THROWS:
            add("DiceThrown", die1=d1, die2=d2, valid=True)
        add("ShooterChanged", shooter_id=f"s{opening}b", position=4, reason="seven_out")
        add("TableClosed")
    return records


def settle(items) -> dict[str, WagerSettled]:
    replay = Replay()
    out = {}
    for item, where in items:
        for o in feed_item(replay, item, where):
            if type(o) is WagerSettled:
                out[o.wager_id] = o
    assert replay.tally.rejected == 0, replay.tally.rejections_by_reason
    return out


def check(settled: dict[str, WagerSettled]) -> None:
    assert set(settled) == {"small-1", "roller-1", "small-2", "roller-2"}
    old_small, old_roller = settled["small-1"], settled["roller-1"]
    new_small, new_roller = settled["small-2"], settled["roller-2"]
    # before the reopening: the Rules Submission then in force (the defaults)
    assert (old_small.paytable, old_small.outcome, old_small.won_cents) == ("bonus-623a.5h", "win", 34 * 500)
    assert (old_roller.paytable, old_roller.outcome, old_roller.won_cents, old_roller.detail) == \
        ("hot-roller-623c.1h-A", "win", 200 * 500, "numbers=6")
    # after: the new one
    assert (new_small.paytable, new_small.outcome, new_small.won_cents) == ("bonus-623b.3", "win", 30 * 500)
    assert (new_roller.paytable, new_roller.outcome, new_roller.won_cents, new_roller.detail) == \
        ("hot-roller-623c.1h-B", "win", 300 * 500, "numbers=6")
    assert old_roller.seq < new_small.placed_seq


def test_replay_uses_the_rules_in_force_at_each_opening():
    check(settle((r, f"h:{n}") for n, r in enumerate(history(), 1)))


def test_the_rules_survive_the_archive(tmp_path):
    w = ArchiveWriter(tmp_path, "x.table-events")
    for offset, r in enumerate(history()):
        w.add(0, offset, encode_event(r), b"T7")
    w.commit()
    check(settle(archive_source(tmp_path)))


def test_a_slice_after_the_reopening_still_knows_the_new_rules(tmp_path):
    from craps_streams.replay.sources import Slice

    records = history()
    reopened = next(r["ts"] for r in records if r["type"] == "TableOpened" and "rules" in r)
    sl = Slice(None, reopened + 1, None)
    replay = Replay()
    kept = [o for r in records for o in feed_item(replay, r, "h") if type(o) is WagerSettled and sl.keeps(o)]
    assert {o.wager_id: o.paytable for o in kept} == {"small-2": "bonus-623b.3", "roller-2": "hot-roller-623c.1h-B"}
