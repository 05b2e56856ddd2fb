"""The floor view a replay of the history gives: the replay's outputs and final table states folded
by streams/floor/folding.py, as the view's agents fold the topics."""
from __future__ import annotations

from collections import defaultdict

from streams.app.shell import state_to_text
from streams.floor import folding
from streams.replay.engine import Replay, json_lines
from streams.rules import output_to_record

# The parts of a table's detail that depend on the history only (the hold series depends on how
# the workers batched their commits: one point per committed state record).
COMPARED = ("table_id", "kind", "closed", "shooter", "position", "hand", "point", "throws_this_hand",
            "come_bets_only", "last_seq", "suspended", "held_events", "held_seqs", "wagers_in_action",
            "throws", "last_throw_ts", "fire_points", "bonus_marked", "hot_roller_combos",
            "hot_roller_numbers", "hot_shooter_throws", "hold", "settled", "last_settlement",
            "alerts_open", "recent_settlements", "observed", "hand_markers", "recent_alerts")


def replayed_views(lines: list[str]) -> dict[str, dict]:
    replay = Replay()
    outputs = []
    for record, where in json_lines(lines, "floor"):
        outputs.extend(replay.feed_record(record, where))
    books, layouts, alerts = {}, {}, {}
    offset = defaultdict(int)
    for o in outputs:
        record = output_to_record(o)
        kind, table = record["type"], record.get("table_id")
        if not table:
            continue
        offset[kind, table] += 1
        n = offset[kind, table]
        if kind == "WagerSettled":
            books[table] = folding.fold_settlement(books.get(table), n, record)
        elif kind in ("MarkerPlaced", "MarkerCleared"):
            layouts[table] = folding.fold_marker(layouts.get(table), n, record)
        elif kind == "SurveillanceAlerted":
            alerts[table] = folding.fold_alert(alerts.get(table), n, record)
    views = {}
    for table, state in replay.tables.items():
        shooter = folding.fold_state(None, 0, state_to_text(state, replay.books.get(table)))
        views[table] = folding.table_detail(table, shooter, books.get(table), layouts.get(table), alerts.get(table))
    return views


def compared(detail: dict) -> dict:
    return {k: detail.get(k) for k in COMPARED}
