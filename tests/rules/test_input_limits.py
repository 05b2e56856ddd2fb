"""Input limits of the contract (README, "The event contract"): hostile ids, oversized and binary
fields are rejections with the raw input kept, never a crash."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from craps_streams.app.shell import SettlementShell
from craps_streams.codec import decode_output, encode_event
from craps_streams.rules import ContractError, malformed, record_to_event
from craps_streams.rules.contract import ID_PATTERN, valid_id

OK = {"type": "WagerPlaced", "table_id": "T001", "seq": 3, "ts": 5, "wager_id": "T001-w1", "position": 2,
      "wager": "fire", "amount_cents": 500}
HOSTILE = ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "T1\"'", "T 1", "T\x00", "T\u00e9",
           "x" * 33, "", "T1\n", "../../etc"]


@pytest.mark.parametrize("field", ["table_id", "wager_id"])
@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_ids_are_invalid_id(field, value):
    with pytest.raises(ContractError) as e:
        record_to_event({**OK, field: value})
    assert e.value.reason in ("invalid_id", "malformed")  # "" is a missing string: malformed
    rejection = malformed({**OK, field: value}, e.value, "f:1")
    assert rejection.event == {**OK, field: value}  # the raw event kept
    if field == "table_id":
        assert rejection.table_id == ""  # not repeated outside the raw event


def test_a_hostile_shooter_id_is_invalid_id():
    with pytest.raises(ContractError, match="shooter_id") as e:
        record_to_event({"type": "ShooterChanged", "table_id": "T1", "seq": 2, "ts": 1, "position": 1,
                         "reason": "table_open", "shooter_id": "<b>x</b>"})
    assert e.value.reason == "invalid_id"


@pytest.mark.parametrize("record,reason", [
    ({**OK, "wager": "f" * 65}, "field_too_long"),
    ({**OK, "key_id": "k" * 129}, "field_too_long"),
    ({**OK, "tag": "t" * 129}, "field_too_long"),
    ({"type": "TableOpened", "table_id": "T1", "seq": 1, "ts": 0, "table_kind": "live",
      "rules": {"surrender": {"x" * 5000: "push"}}}, "field_too_long"),
    ({**OK, "seq": 2**63}, "malformed"),
    ({**OK, "ts": -1}, "malformed"),
    ({**OK, "amount_cents": 2**64}, "malformed"),
    ({**OK, "type": "X" * 10_000}, "unknown_event_type"),
])
def test_oversized_fields_are_rejected(record, reason):
    with pytest.raises(ContractError) as e:
        record_to_event(record)
    assert e.value.reason == reason and len(e.value.message) < 400


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_the_id_format(value):
    assert valid_id(value) == (0 < len(value) <= 32 and all(c.isascii() and (c.isalnum() or c in "_.-")
                                                            for c in value))
    assert ID_PATTERN == r"[A-Za-z0-9_.-]{1,32}"


def test_binary_and_oversized_messages_through_the_worker_keep_their_bytes():
    shell = SettlementShell(lambda t: None)
    for value in (b"\xff\xfe\x00binary", encode_event({**OK, "table_id": "<img src=x onerror=alert(1)>"}),
                  encode_event({**OK, "wager": "w" * 100_000})):
        h = shell.handle(value, "t", 0, 7)
        assert h.verdict in ("undecodable", "rejected")
        (topic, key, body), = h.messages
        record = decode_output(body)
        assert record["raw"] == value and record["offset"] == 7 and record["table_id"] == ""
