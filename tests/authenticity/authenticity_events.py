"""Hypothesis strategies of contract-valid events, tagged or not."""
from __future__ import annotations

from hypothesis import strategies as st

from craps_streams.rules import record_to_event
from craps_streams.rules.contract import ID_PATTERN

ID = st.from_regex(ID_PATTERN, fullmatch=True)
TS = st.integers(0, 2**62)
SEQ = st.integers(1, 2**62)
SMALL = st.integers(-(2**31), 2**31 - 1)
TEXT = st.text(max_size=20).filter(bool)
KEY_ID = st.from_regex(r"[A-Za-z0-9_.-]{1,64}", fullmatch=True)
TAG = st.from_regex(r"[A-Za-z0-9_-]{43}", fullmatch=True)


def _record(kind: str, own: dict):
    return st.fixed_dictionaries({"type": st.just(kind), "table_id": ID, "seq": SEQ, "ts": TS, **own,
                                  "key_id": KEY_ID, "tag": TAG})


RECORDS = st.one_of(
    _record("TableOpened", {"table_kind": st.sampled_from(("live", "hybrid", "fully_automated"))}),
    _record("ShooterChanged", {"shooter_id": ID, "position": SMALL, "reason": TEXT}),
    _record("DiceThrown", {"die1": SMALL, "die2": SMALL, "valid": st.booleans()}),
    _record("WagerPlaced", {"wager_id": ID, "position": SMALL, "wager": TEXT,
                            "amount_cents": st.integers(-(2**63), 2**63 - 1)}),
    _record("WagerChangeRequested", {"wager_id": ID, "amount_cents": st.integers(-(2**63), 2**63 - 1)}),
    _record("ComeBetsOnly", {"active": st.booleans()}),
    _record("TableClosed", {}),
)
ANY_TAGGED_EVENT = RECORDS.map(record_to_event)


def tagged_events():
    return ANY_TAGGED_EVENT
