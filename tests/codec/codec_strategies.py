"""Hypothesis strategies for table events and outputs as plain dicts (the codec's records)."""
from __future__ import annotations

import json

from hypothesis import strategies as st

INT = st.integers(-(2**31), 2**31 - 1)
LONG = st.integers(-(2**63), 2**63 - 1)
TEXT = st.text(max_size=20)
SMALL_INT = st.integers(0, 20)

WAGERS = ("fire", "all_small", "all_tall", "all_or_nothing", "hot_roller", "hot_shooter")
# realistic values most of the time, anything at all sometimes (strings are not enums on the wire)
WAGER = st.one_of(st.sampled_from(WAGERS), TEXT)
TABLE_KIND = st.one_of(st.sampled_from(("live", "hybrid", "fully_automated")), TEXT)
REASON = st.one_of(st.sampled_from(("table_open", "seven_out", "voluntary", "compulsory")), TEXT)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)

RULES = st.fixed_dictionaries({}, optional={
    "fire_paytable": st.sampled_from(("standard", "fire-623a.5")),
    "fire_custom": st.dictionaries(st.sampled_from("123456"), st.integers(1, 5000), min_size=1),
    "bonus_paytable": st.sampled_from(("standard", "alternate", "bonus-623a.5h")),
    "hot_roller_paytable": st.sampled_from(("A", "B")),
    "hot_shooter_paytable": st.just("standard"),
    "hot_roller_come_out_seven": st.sampled_from(("lose", "pay_by_table")),
    "surrender": st.dictionaries(st.sampled_from(WAGERS), st.sampled_from(("carry", "push"))),
    "limits": st.dictionaries(st.sampled_from(WAGERS),
                              st.tuples(st.integers(0, 10**6), st.integers(0, 10**7)).map(list)),
    "large_win_alert_cents": st.integers(0, 10**9),
})


# The authentication fields (schema v2): optional, null by default.
TAGS = {"key_id": st.one_of(st.none(), TEXT), "tag": st.one_of(st.none(), TEXT)}


def _common(kind: str):
    return st.fixed_dictionaries({"table_id": TEXT, "seq": LONG, "ts": LONG, "type": st.just(kind)},
                                 optional=TAGS)


def _event(kind: str, body: dict, optional: dict | None = None):
    return st.tuples(_common(kind), st.fixed_dictionaries(body, optional=optional or {})).map(
        lambda t: {**t[0], **t[1]})


EVENTS = {
    "TableOpened": _event("TableOpened", {"table_kind": TABLE_KIND},
                          {"rules": st.one_of(st.none(), RULES, JSON)}),
    "ShooterChanged": _event("ShooterChanged", {"shooter_id": TEXT, "position": INT, "reason": REASON}),
    "DiceThrown": _event("DiceThrown", {"die1": INT, "die2": INT}, {"valid": st.booleans()}),
    "WagerPlaced": _event("WagerPlaced", {"wager_id": TEXT, "position": INT, "wager": WAGER,
                                          "amount_cents": LONG}),
    "WagerChangeRequested": _event("WagerChangeRequested", {"wager_id": TEXT, "amount_cents": LONG}),
    "ComeBetsOnly": _event("ComeBetsOnly", {"active": st.booleans()}),
    "TableClosed": _event("TableClosed", {}),
}
# a kind the schema does not know travels with a null body and is rejected by the rules downstream
UNKNOWN_KIND = st.text(max_size=20).filter(lambda k: k not in EVENTS).flatmap(_common)
ANY_EVENT = st.one_of(*EVENTS.values())

_ID = {"id": TEXT, "table_id": TEXT, "seq": LONG, "ts": LONG}
OUTPUTS = {
    "WagerSettled": st.fixed_dictionaries({
        "type": st.just("WagerSettled"), **_ID, "wager_id": TEXT, "position": INT, "wager": WAGER,
        "outcome": st.sampled_from(("win", "lose", "push")), "stake_cents": LONG, "won_cents": LONG,
        "paytable": TEXT, "detail": TEXT, "placed_seq": LONG}),
    "MarkerPlaced": st.fixed_dictionaries({
        "type": st.just("MarkerPlaced"), **_ID, "layout": TEXT, "cohort": TEXT, "marker": TEXT, "count": INT}),
    "MarkerCleared": st.fixed_dictionaries({
        "type": st.just("MarkerCleared"), **_ID, "layout": TEXT, "cohort": TEXT, "reason": TEXT}),
    "SurveillanceAlerted": st.fixed_dictionaries({
        "type": st.just("SurveillanceAlerted"), **_ID, "alert": TEXT, "shooter_id": TEXT, "message": TEXT,
        "wager_ids": st.one_of(st.lists(TEXT, max_size=5), st.lists(TEXT, max_size=5).map(tuple))}),
    "EventRejected": st.fixed_dictionaries({
        "type": st.just("EventRejected"), **_ID, "reason": TEXT, "message": TEXT,
        "event_json": st.one_of(st.none(), TEXT, JSON.map(lambda v: json.dumps(v, sort_keys=True))), "raw": st.one_of(st.none(), st.binary(max_size=40)),
        "topic": st.one_of(st.none(), TEXT), "partition": st.one_of(st.none(), INT),
        "offset": st.one_of(st.none(), LONG)}),
}
ANY_OUTPUT = st.one_of(*OUTPUTS.values())

DEFAULTS = {"TableOpened": {"rules": None}, "DiceThrown": {"valid": True}}


def expected_event(record: dict) -> dict:
    """What decoding the encoding of `record` gives: optional fields present with their default."""
    # An untagged event's null key_id and tag decode absent (as in JSON Lines).
    return {**DEFAULTS.get(record["type"], {}),
            **{k: v for k, v in record.items() if not (k in TAGS and v is None)}}


def expected_output(record: dict) -> dict:
    """What decoding the encoding of `record` gives (EventRejected: plus `event`, parsed event_json)."""
    out = dict(record)
    if isinstance(out.get("wager_ids"), tuple):
        out["wager_ids"] = list(out["wager_ids"])
    if out["type"] == "EventRejected":
        try:
            out["event"] = None if out["event_json"] is None else json.loads(out["event_json"])
        except ValueError:
            out["event"] = None
    return out


def wire_fields(record: dict) -> dict:
    """The fields of an output record that are on the wire (not type, not EventRejected.event)."""
    return {k: v for k, v in record.items() if k not in ("type", "event")}
