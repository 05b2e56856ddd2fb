"""The floor view a replay of the history gives: the replay's outputs and final table states folded
by craps_streams/floor/folding.py, as the view's agents fold the topics."""
from __future__ import annotations

from collections import defaultdict

from craps_streams.app.shell import state_to_text
from craps_streams.floor import folding
from craps_streams.replay.engine import Replay, json_lines
from craps_streams.rules import output_to_record

# A served view computes a changed line's p in the background, showing its last p until a later
# look (craps_streams.metrics.unusual.LiveMeasures); the views compared here are exact at every look.
folding._MEASURES.background = False

# The parts of a table's detail that depend on the history only (the hold series depends on how
# the workers batched their commits: one point per committed state record).
COMPARED = ("table_id", "kind", "closed", "shooter", "position", "hand", "point", "throws_this_hand",
            "come_bets_only", "last_seq", "suspended", "held_events", "held_seqs", "wagers_in_action",
            "throws", "last_throw_ts", "fire_points", "bonus_marked", "hot_roller_combos",
            "hot_roller_numbers", "hot_shooter_throws", "hold", "settled", "last_settlement",
            "alerts_open", "last_alert", "alerts_raised", "recent_settlements", "observed", "hand_markers", "recent_alerts")


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
        topic = {"MarkerCleared": "MarkerPlaced"}.get(kind, kind)  # markers share one topic
        offset[topic, table] += 1
        n = offset[topic, table]
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


class ReplayedFloor:
    """A floor reader (craps_streams.floor.web.FloorReader) over a replay's folded views: the pages served
    without a broker, from what the core made of a history."""

    def __init__(self, lines: list[str]):
        self.views = replayed_views(lines)

    def table_ids(self) -> list[str]:
        return sorted(self.views)

    def row(self, table_id: str):
        v = self.views.get(table_id)
        return None if v is None else {k: x for k, x in v.items()
                                        if k not in ("series", "recent_settlements", "observed", "hand_markers",
                                                     "recent_alerts")}

    def detail(self, table_id: str):
        return self.views.get(table_id)

    def observed(self) -> dict:
        return folding.observed_floor([{"observed": v["observed"]} for v in self.views.values()])
