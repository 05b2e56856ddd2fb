"""The controller's intake: an event the contract refuses is refused with its reason and takes no
seq; an accepted one is signed with its table's key and encoded as the worker reads it."""
from __future__ import annotations

import pytest

from craps_streams.authenticity import TableSigner, TagCheck
from craps_streams.codec import decode_event
from craps_streams.controller.intake import Refused, admit, check
from craps_streams.rules.contract import record_to_event
from tests.authenticity.authenticity_keys import key, ring_for

TABLES = frozenset({"T001", "T002"})
THROW = {"type": "DiceThrown", "table_id": "T001", "die1": 3, "die2": 4}


@pytest.mark.parametrize("record, reason", [
    ("not an object", "malformed"),
    ([THROW], "malformed"),
    ({**THROW, "seq": 7}, "controller_field"),
    ({**THROW, "ts": 7}, "controller_field"),
    ({**THROW, "key_id": "k", "tag": "x"}, "controller_field"),
    ({**THROW, "type": "DiceRolled"}, "unknown_event_type"),
    ({**THROW, "die1": "3"}, "malformed"),
    ({**THROW, "table_id": "T001<script>"}, "invalid_id"),
    ({**THROW, "table_id": "T\u00e9"}, "invalid_id"),
    ({**THROW, "table_id": "T" * 33}, "invalid_id"),
    ({**THROW, "table_id": "T009"}, "unknown_table"),
    ({**THROW, "die3": 1}, "malformed"),
    ({"type": "WagerPlaced", "table_id": "T001", "wager_id": "w 1", "position": 1, "wager": "fire",
      "amount_cents": 500}, "invalid_id"),
    ({"type": "WagerPlaced", "table_id": "T001", "wager_id": "w1", "position": 1, "wager": "x" * 65,
      "amount_cents": 500}, "field_too_long"),
])
def test_a_bad_event_is_refused_with_its_reason(record, reason):
    with pytest.raises(Refused) as refused:
        check(record, TABLES)
    assert refused.value.reason == reason
    assert refused.value.message


def test_an_event_is_numbered_stamped_signed_and_encoded():
    ring = ring_for(TABLES)
    assert check(THROW, TABLES) == "T001"
    admitted = admit(THROW, 42, 1_700_000_000_000, TableSigner(ring))
    assert admitted.key == b"T001"
    record = decode_event(admitted.value)
    assert (record["seq"], record["ts"], record["key_id"]) == (42, 1_700_000_000_000, "k-T001")
    assert TagCheck(ring).problem(record_to_event(record)) is None


def test_rotation_by_event_time_picks_the_key_valid_at_the_stamp():
    ring = ring_for({"T001"}).rotated({"T001"}, 5_000, key("k2-T001", {"T001"}, 5_000))
    signer = TableSigner(ring)
    assert decode_event(admit(THROW, 1, 4_999, signer).value)["key_id"] == "k-T001"
    assert decode_event(admit(THROW, 2, 5_000, signer).value)["key_id"] == "k2-T001"


def test_no_key_for_the_table_at_its_time_is_a_refusal():
    signer = TableSigner(ring_for({"T001"}, start=10_000))
    with pytest.raises(Refused) as refused:
        admit(THROW, 1, 9_999, signer)
    assert refused.value.reason == "no_key"
