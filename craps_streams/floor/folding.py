"""The floor view's pure folding: one committed record in, the table's view state out.

No Kafka, no Faust, no clock: the Faust agents (craps_streams/floor/app.py) are a thin shell over these
functions, and the tests fold a replay's outputs through them without a broker.

A table's view is four plain JSON-able dicts, one per source topic, each kept in its own Faust table
keyed by table id:

- shooter (from `table-state`, the settling workers' changelog): the table's state and hold book
  as the floor page shows them, and the house-win series per wager kind and paytable;
- settlements: the last settlements and the observed outcome counts of each decision;
- layout (from `layout-markers`): the markers of the current hand, in the order the layout got them;
- alerts (from `surveillance`): the recent alerts.

Idempotence: every record of one table comes from one partition of its topic (the workers key and
partition every output by the table's input partition), in offset order, and read_committed. So
each dict keeps the offset of the last record it folded and ignores any record at or below it: a
redelivery after a crash or a rebalance never counts twice. Decisions are also counted once per
deciding event (`seq`), not once per wager: the wagers of one cohort share the dice.
"""
from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from functools import lru_cache

from craps_streams.odds import wager_odds
from craps_streams.odds.bonus_craps import TARGETS, all_before_seven
from craps_streams.odds.fire_bet import distinct_points_distribution
from craps_streams.odds.hot_roller import seven_distribution
from craps_streams.odds.hot_shooter import throws_distribution
from craps_streams.rules.board import board_of_record
from craps_streams.rules.bonus_craps import marked_totals
from craps_streams.rules.hot_roller import COMBINATIONS, COMBO_BIT, completed_numbers
from craps_streams.rules.hot_shooter import HOT_SHOOTER_TABLE_KINDS
from craps_streams.rules.wording import (
    WAGER_NAMES,
    cleared_words,
    detail_words,
    marker_words,
    table_kind_words,
)
from craps_streams.rules.submission import DEFAULT_RULES, rules_from_record
from craps_streams.metrics.unusual import INVESTIGATION_LEVEL, LiveMeasures, meaning, p_text

RECENT_SETTLEMENTS = 20
RECENT_ALERTS = 20
HAND_MARKERS = 60  # markers of the current hand kept (a hand rarely marks more)
SERIES_POINTS = 240  # points kept per hold line; beyond, every other old point is dropped
HAND_LENGTH_TOP = 40  # hand lengths of 40 throws or more share the last bucket
DECISION_MEMORY = 32  # recent decision keys per table: the records of one event are adjacent

# ------------------------------------------------------------------ shooter state and hold


def table_view(state, book) -> dict:
    """What the floor shows of a table: shooter, point, each side wager's markers, hold vs theory."""
    cohorts = {g: ([state.open_cohorts[g]] if state.open_cohorts[g] else []) + state.cohorts[g]
               for g in state.cohorts}
    fire = cohorts["fire"][0].points if cohorts["fire"] else ()
    bonus = marked_totals(cohorts["bonus_craps"][0].marks) if cohorts["bonus_craps"] else []
    roller = cohorts["hot_roller"][0].marks if cohorts["hot_roller"] else 0
    hold = []
    # A line stands alerted while its hold_anomaly stands: the surveillance watch's hold tail keeps
    # that flag (craps_streams/surveillance/table_watch.py), the book's own flag only in older records.
    tails = dict(book.watch.holds.items()) if book is not None and book.watch is not None else {}
    for (wager, paytable), t in sorted(book.lines.items() if book is not None else ()):
        tail = tails.get((wager, paytable))
        hold.append({"wager": wager, "paytable": paytable, "settled": t.settled,
                     "handle_cents": t.handle_cents, "house_win_cents": t.house_win_cents,
                     "expected_house_win_cents": round(t.expected_house_win_cents),
                     "std_dev_cents": round(t.std_dev_cents), "z_score": round(t.z_score, 2),
                     "alerted": bool(t.alerted or getattr(tail, "alerted", False)),
                     **_dice(tail and tail.house_win_cents, tail and tail.stakes.items())})
    return {
        "table_id": state.table_id, "kind": state.table_kind, "rules": state.rules_record, "closed": state.closed,
        "shooter": state.shooter_id, "position": state.shooter_position, "hand": state.hand,
        "point": state.point or None, "throws_this_hand": state.shooter_throws,
        "come_bets_only": state.come_bets_only, "last_seq": state.last_seq,
        "suspended": bool(state.held), "held_events": len(state.held),
        "held_seqs": sorted(state.held)[:20], "wagers_in_action": len(state.pending),
        "throws": state.throws, "last_throw_ts": state.last_throw_ts,
        "fire_points": list(fire),
        "bonus_marked": bonus,
        "hot_roller_combos": [f"{lo}-{hi}" for (lo, hi), bit in COMBO_BIT.items() if roller & bit],
        "hot_roller_numbers": completed_numbers(roller),
        "hot_shooter_throws": [c.throws for c in cohorts["hot_shooter"]],
        "hold": hold,
    }


def _dice(house_win_cents, stakes) -> dict:
    """A hold line's decisions by the dice, as `measured` reads them: their house win and how many
    decisions had each stake (the surveillance's hold tail; none when the table has no watch)."""
    if house_win_cents is None or stakes is None:
        return {"dice_house_win_cents": None, "dice_stakes": []}
    return {"dice_house_win_cents": house_win_cents, "dice_stakes": [[s, c] for s, c in sorted(stakes)]}  # as JSON has it


@lru_cache(maxsize=64)
def _rules(text: str):
    """The rules in force from the table's rules record (null: opened under the default rules)."""
    record = json.loads(text)
    return DEFAULT_RULES if record is None else rules_from_record(record)


_MEASURES = LiveMeasures()  # the lines' p, off the view's event loop


def measured(view: dict) -> dict:
    """`view` with each hold line's p (the report's measure, `craps_streams.metrics.unusual`):
    computed when a page asks, not at each fold, a changed line's off the event loop (`LiveMeasures`)."""
    if not view.get("hold"):
        return view
    rules = _rules(json.dumps(view.get("rules"), sort_keys=True))
    lines = [((view["table_id"], h["wager"], h["paytable"]), wager_odds(h["wager"], rules), dict(h["dice_stakes"]),
              h["dice_house_win_cents"]) for h in view["hold"] if h.get("dice_house_win_cents") is not None
             and h["dice_stakes"]]
    ps = _MEASURES.look(lines)
    hold = []
    for h in view["hold"]:
        p = ps.get((view["table_id"], h["wager"], h["paytable"]))
        hold.append({**h, "p_value": p} if p is None else
                    {**h, "p_value": p, "p_text": p_text(p), "investigate": p <= INVESTIGATION_LEVEL,
                     "unusual": meaning(p)})
    return {**view, "hold": hold}


def _first_cohort(table: dict, group: str) -> dict | None:
    """The cohort `table_view` reads a group's markers from: the open one, else the first in action."""
    return table["open_cohorts"][group] or (table["cohorts"][group] or [None])[0]


def view_of_record(record: dict) -> dict:
    """`table_view` of a stored table-state record (craps_streams/app/shell.py `state_to_text`, parsed),
    read straight from the record: only the fields the pages show, without rebuilding the table's
    state, its cohorts, its wagers, its held events, its hold book and its surveillance.
    tests/floor/test_floor_folding.py holds it equal to `table_view` at every state of a floor."""
    if "table" in record:
        table, lines, watch = record["table"], record["hold"], record.get("watch")
    else:  # stored before the hold book joined the table's record
        table, lines, watch = record, {}, None
    tails = watch["holds"] if watch else {}
    fire, bonus, roller = (_first_cohort(table, g) for g in ("fire", "bonus_craps", "hot_roller"))
    roller_marks = roller["marks"] if roller else 0
    shooter_cohorts = ([table["open_cohorts"]["hot_shooter"]] if table["open_cohorts"]["hot_shooter"] else []) \
        + table["cohorts"]["hot_shooter"]
    wagers = set()
    for group, cohorts in table["cohorts"].items():
        opened = table["open_cohorts"][group]
        for cohort in ([opened] if opened else []) + cohorts:
            wagers.update(w[0] for w in cohort["wagers"])
    held = sorted({e["seq"] for e in table.get("held", ())})
    hold = []
    for (wager, paytable), line in sorted((tuple(k.split("|", 1)), v) for k, v in lines.items()):
        # A HoldLine record (craps_streams/surveillance/hold_watch.py): house_edge, std_dev_per_unit, then
        # settled, wins, losses, pushes, handle, stake_squares, collected, returned, won, alerted.
        edge, unit_sd, settled, handle, stake_squares = line[0], line[1], line[2], line[6], line[7]
        house_win = line[8] - line[10]
        expected = edge * handle
        sd = unit_sd * math.sqrt(stake_squares)
        tail = tails.get(f"{wager}|{paytable}")
        hold.append({"wager": wager, "paytable": paytable, "settled": settled, "handle_cents": handle,
                     "house_win_cents": house_win, "expected_house_win_cents": round(expected),
                     "std_dev_cents": round(sd), "z_score": round((house_win - expected) / sd if sd else 0.0, 2),
                     "alerted": bool(line[11] or (tail[4] if tail is not None else False)),
                     # A HoldTail record: decisions, handle, house win, stakes, alerted.
                     **_dice(tail and tail[2], tail and ((int(k), c) for k, c in tail[3].items()))})
    return {
        "table_id": table["table_id"], "kind": table["table_kind"], "rules": table.get("rules"),
        "closed": table["closed"],
        "shooter": table["shooter_id"], "position": table["shooter_position"], "hand": table["hand"],
        "point": table["point"] or None, "throws_this_hand": table["shooter_throws"],
        "come_bets_only": table["come_bets_only"], "last_seq": table["last_seq"],
        "suspended": bool(held), "held_events": len(held),
        "held_seqs": held[:20], "wagers_in_action": len(wagers),
        "throws": table.get("throws", 0), "last_throw_ts": table.get("last_throw_ts", 0),
        "fire_points": list(fire["marks"]) if fire else [],
        "bonus_marked": marked_totals(sum(1 << t for t in bonus["marks"])) if bonus else [],
        "hot_roller_combos": [f"{lo}-{hi}" for (lo, hi), bit in COMBO_BIT.items() if roller_marks & bit],
        "hot_roller_numbers": completed_numbers(roller_marks),
        "hot_shooter_throws": [c["marks"] for c in shooter_cohorts],
        "hold": hold,
    }


def _thin(points: list) -> list:
    """Keep a long series bounded: drop every other point of its older half."""
    if len(points) <= SERIES_POINTS:
        return points
    half = len(points) // 2
    return points[:half:2] + points[half:]


_JSON = json.JSONDecoder()
_HOLD, _TABLE, _DICE, _HOLDS = '{"hold":', ',"table":', ',"watch":{"dice":', ',"holds":'


def page_record(text: str) -> dict:
    """The parts of a table-state record `view_of_record` reads: the table, its hold book and its
    surveillance's hold tails. The record is JSON with sorted keys and no spaces (`state_to_text`):
    `{"hold":..,"table":..,"watch":{"dice":[..],"holds":{..},"positions":..}}`; the dice book is
    numbers only, so the first `,"holds":` after it starts the hold tails, and the dice book and the
    position lines (most of the record) are never parsed. A record of any other shape is parsed whole."""
    if text.startswith(_HOLD):
        hold, i = _JSON.raw_decode(text, len(_HOLD))
        if text.startswith(_TABLE, i):
            table, i = _JSON.raw_decode(text, i + len(_TABLE))
            if text.startswith(_DICE, i):
                j = text.find(_HOLDS, i)
                if j > 0 and '"' not in text[i + len(_DICE):j]:
                    holds, _ = _JSON.raw_decode(text, j + len(_HOLDS))
                    return {"hold": hold, "table": table, "watch": {"holds": holds}}
    return json.loads(text)


def fold_state(shooter: dict | None, offset: int, text: str) -> dict | None:
    """Fold a `table-state` record (at `offset` of its partition). None: nothing to change."""
    if shooter is not None and offset <= shooter["offset"]:
        return None
    view = view_of_record(page_record(text))
    series = dict(shooter["series"]) if shooter else {}
    for h in view["hold"]:
        line = f"{h['wager']}|{h['paytable']}"
        points = series.get(line, [])
        if points and points[-1][1] == h["settled"]:
            continue  # nothing new settled on this line
        point = [view["last_throw_ts"], h["settled"], h["house_win_cents"], h["expected_house_win_cents"],
                 h["std_dev_cents"]]
        series[line] = _thin(points + [point])
    return {"offset": offset, "view": view, "series": series}


# ------------------------------------------------------------------ settlements and decisions

_COUNT = re.compile(r"^(points|numbers|throws)=(\d+)$")
_COME_OUT_SEVEN = re.compile(r"^come-out seven, numbers=(\d+)$")


def decision_of(record: dict) -> tuple[str, str] | None:
    """(distribution, outcome label) a settlement observes, or None when it observes none of the
    distributions (a push on a shooter change, a table closing, a surrender)."""
    wager, detail = record["wager"], record["detail"]
    m = _COUNT.match(detail)
    if wager == "fire" and m and m.group(1) == "points":
        return "fire_points", m.group(2)
    if wager == "hot_roller":
        if m and m.group(1) == "numbers":
            return "hot_roller", f"seven-out {m.group(2)}"
        c = _COME_OUT_SEVEN.match(detail)
        if c:
            return "hot_roller", "come-out 7"
    if wager == "hot_shooter" and m and m.group(1) == "throws":
        n = int(m.group(2))
        return "hand_length", str(min(n, HAND_LENGTH_TOP))
    if wager in TARGETS:
        if detail == f"{wager} complete":
            return f"bonus_{wager}", "win"
        if detail.startswith("seven with "):
            return f"bonus_{wager}", "7 first"
    return None


def new_settlements() -> dict:
    return {"offset": -1, "count": 0, "won_cents": 0, "recent": [], "observed": {}, "decisions": []}


def fold_settlement(book: dict | None, offset: int, record: dict) -> dict | None:
    """Fold a WagerSettled record. None: already folded (a redelivery)."""
    book = book or new_settlements()
    if offset <= book["offset"]:
        return None
    recent = ([{k: record[k] for k in ("id", "seq", "ts", "wager_id", "position", "wager", "outcome",
                                       "stake_cents", "won_cents", "paytable", "detail")}]
              + book["recent"])[:RECENT_SETTLEMENTS]
    observed, decisions = book["observed"], book["decisions"]
    decision = decision_of(record)
    if decision is not None:
        # One observation per deciding event and cohort result: a cohort's wagers share the dice.
        key = f"{record['seq']}|{record['wager']}|{record['detail']}"
        if key not in decisions:
            dist, label = decision
            counts = dict(observed.get(dist, {}))
            counts[label] = counts.get(label, 0) + 1
            observed = {**observed, dist: counts}
            decisions = (decisions + [key])[-DECISION_MEMORY:]
    return {"offset": offset, "count": book["count"] + 1, "won_cents": book["won_cents"] + record["won_cents"],
            "recent": recent, "observed": observed, "decisions": decisions}


# ------------------------------------------------------------------ layout markers (the hand)


def new_layout() -> dict:
    return {"offset": -1, "hand": []}


def fold_marker(layout: dict | None, offset: int, record: dict) -> dict | None:
    """Fold a MarkerPlaced / MarkerCleared record into the current hand's marker log."""
    layout = layout or new_layout()
    if offset <= layout["offset"]:
        return None
    hand = layout["hand"]
    if record["type"] == "MarkerCleared" and record["reason"] in ("seven_out", "table_closed"):
        hand = []  # the hand is over: the next marker starts the next hand's log
    entry = {"seq": record["seq"], "ts": record["ts"], "layout": record["layout"], "type": record["type"]}
    if record["type"] == "MarkerPlaced":
        entry.update(marker=record["marker"], count=record["count"])
    else:
        entry.update(reason=record["reason"])
    return {"offset": offset, "hand": (hand + [entry])[-HAND_MARKERS:]}


# ------------------------------------------------------------------ surveillance alerts


def new_alerts() -> dict:
    return {"offset": -1, "count": 0, "recent": []}


def fold_alert(alerts: dict | None, offset: int, record: dict) -> dict | None:
    alerts = alerts or new_alerts()
    if offset <= alerts["offset"]:
        return None
    entry = {k: record[k] for k in ("id", "seq", "ts", "alert", "shooter_id", "message")}
    return {"offset": offset, "count": alerts["count"] + 1, "recent": ([entry] + alerts["recent"])[:RECENT_ALERTS]}


def open_alerts(view: dict | None, alerts: dict | None) -> list[dict]:
    """The alerts still standing, judged against the table's state now: a sequence gap while the
    table is suspended, a hold anomaly while its line is below the threshold (the book's
    `alerted`), a four-point Fire Bet alert while that hand's Fire layout still shows four points
    or more. Large wins and resumptions are news, not open matters: they stay in the recent list."""
    if not alerts or view is None:
        return []
    out, seen = [], set()
    for a in alerts["recent"]:
        kind = a["alert"]
        if kind in seen:
            continue
        standing = (kind == "sequence_gap" and view["suspended"]) or \
            (kind == "hold_anomaly" and any(h["alerted"] for h in view["hold"])) or \
            (kind == "fire_bet_four_points" and len(view["fire_points"]) >= 4 and a["shooter_id"] == view["shooter"])
        if standing:
            seen.add(kind)
            out.append(a)
    return out


# ------------------------------------------------------------------ what the pages get


def floor_row(table_id: str, shooter: dict | None, settlements: dict | None, alerts: dict | None) -> dict:
    """A table's line on the floor page. Beside the open alerts it carries the last alert raised,
    open or not, and how many the table has raised, so a page that shows "no open alert" can still
    say that the table had one a moment ago."""
    view = measured(shooter["view"]) if shooter else {"table_id": table_id, "hold": [], "suspended": False}
    return {**view, "table_id": table_id, "kind_words": table_kind_words(view.get("kind")),
            "hot_shooter_offered": view.get("kind") in HOT_SHOOTER_TABLE_KINDS,
            # The layouts' numbers and the paytables' words under the table's Rules Submission
            # (§ 601a.2): the pages say no number or pay of their own.
            "board": board_of_record(view.get("rules")),
            "settled": settlements["count"] if settlements else 0,
            "last_settlement": settlements["recent"][0] if settlements and settlements["recent"] else None,
            "alerts_open": open_alerts(shooter and shooter["view"], alerts),
            "last_alert": alerts["recent"][0] if alerts and alerts["recent"] else None,
            "alerts_raised": alerts["count"] if alerts else 0}


def at_table_fields(held) -> dict:
    """A row's events held at the table from its controller's figures (a HeldAtTable,
    craps_streams/metrics/at_table.py), with the status panel's words; None when no controller
    said (none configured, or it does not answer)."""
    if held is None:
        return {"at_table": None}
    return {"at_table": {"events": held.events, "oldest_s": round(held.oldest_s, 1), "words": held.words()}}


def table_detail(table_id: str, shooter, settlements, layout, alerts) -> dict:
    """Everything the table's own page shows, the codes of its markers and settlements with their words."""
    return {**floor_row(table_id, shooter, settlements, alerts),
            "series": shooter["series"] if shooter else {},
            "recent_settlements": [{**s, "wager_words": WAGER_NAMES.get(s["wager"], s["wager"]),
                                    "detail_words": detail_words(s["detail"])}
                                   for s in (settlements["recent"] if settlements else [])],
            "observed": settlements["observed"] if settlements else {},
            "hand_markers": [{**m, "words": marker_words(m["layout"], m["marker"], m["count"])
                              if m["type"] == "MarkerPlaced" else cleared_words(m["layout"], m["reason"])}
                             for m in (layout["hand"] if layout else [])],
            "recent_alerts": alerts["recent"] if alerts else []}


def observed_floor(books) -> dict:
    """The observed counts of every table's decisions, added up."""
    total: dict[str, dict[str, int]] = {}
    for book in books:
        for dist, counts in (book or {}).get("observed", {}).items():
            t = total.setdefault(dist, {})
            for label, n in counts.items():
                t[label] = t.get(label, 0) + n
    return total


@lru_cache(maxsize=1)
def exact_distributions() -> dict[str, dict[str, float]]:
    """The exact probability of every label `decision_of` can observe (craps_streams.odds)."""
    fire = {str(k): float(p) for k, p in sorted(distinct_points_distribution().items())}
    sevens = seven_distribution()
    roller = {"come-out 7": float(sum((p for (kind, _), p in sevens.items() if kind == "come_out"), Fraction(0)))}
    for k in range(len(COMBINATIONS) + 1):  # 0 to every Hot Roller number complete
        roller[f"seven-out {k}"] = float(sevens.get(("seven_out", k), 0))
    lengths = throws_distribution(HAND_LENGTH_TOP)
    hand = {str(n): float(lengths[n]) for n in range(2, HAND_LENGTH_TOP)}
    hand[str(HAND_LENGTH_TOP)] = float(1 - sum(lengths))
    out = {"fire_points": fire, "hot_roller": roller, "hand_length": hand}
    for wager, totals in TARGETS.items():
        win = all_before_seven(totals)
        out[f"bonus_{wager}"] = {"win": float(win), "7 first": float(1 - win)}
    return out
