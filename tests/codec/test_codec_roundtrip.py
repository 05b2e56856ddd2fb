"""Every kind of table event and output survives encode -> decode; bad records are refused."""
from __future__ import annotations

import io

import fastavro
import pytest
from codec_strategies import (
    ANY_EVENT,
    EVENTS,
    OUTPUTS,
    UNKNOWN_KIND,
    expected_event,
    expected_output,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.exploration import examples

from craps_streams.codec import (
    HEADER_LEN,
    MAGIC,
    CodecError,
    decode_event,
    decode_output,
    default_codec,
    encode_event,
    encode_output,
    from_json_line,
    to_json_line,
)

SETTINGS = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])

EXAMPLES = [
    {"table_id": "T1", "seq": 1, "ts": 1_700_000_000_000, "type": "TableOpened", "table_kind": "live",
     "rules": {"fire_custom": {"4": 25, "5": 250}, "limits": {"fire": [100, 500]}, "surrender": {"fire": "push"},
               "large_win_alert_cents": 50_000}},
    {"table_id": "T1", "seq": 2, "ts": 1_700_000_000_001, "type": "ShooterChanged", "shooter_id": "p-7",
     "position": 3, "reason": "table_open"},
    {"table_id": "T1", "seq": 3, "ts": 1_700_000_000_002, "type": "WagerPlaced", "wager_id": "w-1", "position": 3,
     "wager": "fire", "amount_cents": 500},
    {"table_id": "T1", "seq": 4, "ts": 1_700_000_000_003, "type": "DiceThrown", "die1": 3, "die2": 4, "valid": True},
    {"table_id": "T1", "seq": 5, "ts": 1_700_000_000_004, "type": "WagerChangeRequested", "wager_id": "w-1",
     "amount_cents": 0},
    {"table_id": "T1", "seq": 6, "ts": 1_700_000_000_005, "type": "ComeBetsOnly", "active": True},
    {"table_id": "T1", "seq": 7, "ts": 1_700_000_000_006, "type": "TableClosed"},
]


@pytest.mark.parametrize("record", EXAMPLES, ids=lambda r: r["type"])
def test_examples_round_trip(record):
    data = encode_event(record)
    assert data[:2] == MAGIC and data[2:HEADER_LEN] == default_codec().event_schema.fingerprint
    assert decode_event(data) == record
    assert list(decode_event(data))[:4] == ["table_id", "seq", "ts", "type"]


@pytest.mark.parametrize("kind", sorted(EVENTS))
@SETTINGS
@given(data=st.data())
def test_every_kind_round_trips(kind, data):
    record = data.draw(EVENTS[kind])
    decoded = decode_event(encode_event(record))
    assert decoded == expected_event(record)
    assert decoded["type"] == kind


@SETTINGS
@given(UNKNOWN_KIND)
def test_unknown_kind_travels_for_the_rules_to_reject(record):
    assert decode_event(encode_event(record)) == expected_event(record)


@SETTINGS
@given(ANY_EVENT)
def test_flat_fast_path_writes_exactly_the_union_encoding(record):
    """The encoder writes a flat per-kind record; it must be byte for byte TableEvent's encoding."""
    c = default_codec()
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, c.event_schema.parsed, c.event_datum(record))
    assert encode_event(record)[HEADER_LEN:] == buf.getvalue()


@pytest.mark.parametrize("kind", sorted(OUTPUTS))
@SETTINGS
@given(data=st.data())
def test_every_output_round_trips(kind, data):
    record = data.draw(OUTPUTS[kind])
    decoded = decode_output(encode_output(record))
    assert decoded == expected_output(record)
    assert decoded["type"] == kind


def test_event_rejected_takes_the_event_itself():
    """The core's EventRejected has `event` (a dict); the wire has event_json (its JSON text)."""
    event = {"type": "DiceThrown", "table_id": "T", "seq": 9, "ts": 1, "die1": 7, "die2": 1}
    record = {"type": "EventRejected", "id": "T:9", "table_id": "T", "seq": 9, "ts": 1, "reason": "bad_die",
              "message": "die1 must be 1..6", "event": event}
    decoded = decode_output(encode_output(record))
    assert decoded["event"] == event
    assert decoded["event_json"] == to_json_line(event)
    assert decoded["raw"] is None and decoded["topic"] is None and decoded["offset"] is None
    assert decode_output(encode_output(decoded)) == decoded  # both keys, agreeing
    with pytest.raises(CodecError, match="disagree"):
        encode_output({**record, "event_json": "{}"})
    undecodable = {"type": "EventRejected", "id": "rejected/t:0:5", "table_id": "", "seq": 0, "ts": 0,
                   "reason": "undecodable", "message": "magic", "event_json": None, "raw": b"\x00garbage",
                   "topic": "craps.table-events", "partition": 0, "offset": 5}
    assert decode_output(encode_output(undecodable)) == {**undecodable, "event": None}


def test_decoders_refuse_the_other_kind_of_message():
    with pytest.raises(CodecError, match="not an output"):
        decode_output(encode_event(EXAMPLES[1]))
    out = {"type": "MarkerCleared", "id": "i", "table_id": "T", "seq": 1, "ts": 1, "layout": "fire",
           "cohort": "c", "reason": "seven_out"}
    with pytest.raises(CodecError, match="not a table event"):
        decode_event(encode_output(out))
    assert default_codec().decode(encode_output(out)) == out
    assert default_codec().decode(encode_event(EXAMPLES[1])) == EXAMPLES[1]


BAD_EVENTS = [
    ({**EXAMPLES[3], "die1": 1.5}, "die1"),  # fastavro alone would write 1
    ({**EXAMPLES[3], "die1": True}, "die1"),
    ({**EXAMPLES[3], "die1": 2**31}, "die1"),  # beyond Avro int
    ({**EXAMPLES[3], "valid": "yes"}, "valid"),  # fastavro alone would write true
    ({**EXAMPLES[2], "amount_cents": 2**63}, "amount_cents"),
    ({**EXAMPLES[2], "amount_cents": "500"}, "amount_cents"),
    ({**EXAMPLES[2], "table_id": None}, "table_id"),
    ({**EXAMPLES[2], "seq": None}, "seq"),
    ({**EXAMPLES[2], "colour": "red"}, "colour"),
    ({k: v for k, v in EXAMPLES[2].items() if k != "wager"}, "wager"),
    ({k: v for k, v in EXAMPLES[2].items() if k != "ts"}, "ts"),
    ({k: v for k, v in EXAMPLES[2].items() if k != "type"}, "type"),
    ({**EXAMPLES[2], "type": 3}, "type"),
    ({**EXAMPLES[0], "rules": {"x": float("nan")}}, "rules"),
    ({**EXAMPLES[0], "rules": {"x": object()}}, "rules"),
    ({"table_id": "T", "seq": 1, "ts": 1, "type": "Mystery", "die1": 3}, "die1"),
]


@pytest.mark.parametrize("record,field", BAD_EVENTS, ids=lambda x: x if isinstance(x, str) else "")
def test_bad_events_are_refused_with_codec_error(record, field):
    with pytest.raises(CodecError, match=field):
        encode_event(record)


@pytest.mark.parametrize("record", [None, "x", 3, [("type", "TableClosed")]])
def test_non_dicts_are_refused(record):
    with pytest.raises(CodecError):
        encode_event(record)
    with pytest.raises(CodecError):
        encode_output(record)


def test_bad_outputs_are_refused():
    good = {"type": "SurveillanceAlerted", "id": "i", "table_id": "T", "seq": 1, "ts": 1, "alert": "large_win",
            "shooter_id": "p", "message": "m", "wager_ids": ["w"]}
    decode_output(encode_output(good))
    for bad in ({**good, "type": "Nope"}, {**good, "wager_ids": [1]}, {**good, "wager_ids": "w"},
                {**good, "extra": 1}, {k: v for k, v in good.items() if k != "message"},
                {k: v for k, v in good.items() if k != "type"}):
        with pytest.raises(CodecError):
            encode_output(bad)


def test_optional_output_fields_take_their_defaults():
    minimal = {"type": "SurveillanceAlerted", "id": "i", "table_id": "T", "seq": 1, "ts": 1, "alert": "a",
               "message": "m"}
    assert decode_output(encode_output(minimal)) == {**minimal, "shooter_id": "", "wager_ids": []}


# ---------------------------------------------------------------- JSON Lines


@SETTINGS
@given(st.one_of(ANY_EVENT, UNKNOWN_KIND))
def test_json_lines_round_trip_and_are_deterministic(record):
    line = to_json_line(record)
    assert "\n" not in line and line.isascii()
    assert from_json_line(line) == record
    assert from_json_line(line.encode() + b"\n") == record
    assert to_json_line(dict(reversed(list(record.items())))) == line
    assert to_json_line(from_json_line(line)) == line


def test_json_line_format():
    assert to_json_line({"b": 1, "a": [1, 2], "c": {"z": None, "y": "é"}}) == \
        '{"a":[1,2],"b":1,"c":{"y":"\\u00e9","z":null}}'
    assert to_json_line({"raw": b"\x00\xff", "ids": ("a",)}) == '{"ids":["a"],"raw":"\\u0000\\u00ff"}'


@pytest.mark.parametrize("line", ["", "[1]", "3", "{", b"\xff\xfe", "{\"a\":NaN}", "{\"a\":-Infinity}", "{}x", None, 3])
def test_bad_json_lines(line):
    with pytest.raises(CodecError):
        from_json_line(line)


def test_unserializable_records():
    for record in ({"x": float("inf")}, {"x": object()}, {"x": {1, 2}}):
        with pytest.raises(CodecError):
            to_json_line(record)


def test_module_functions_are_thread_safe():
    from concurrent.futures import ThreadPoolExecutor

    records = [{**EXAMPLES[3], "seq": i, "die1": i % 6 + 1, "table_id": f"T{i % 7}"} for i in range(4000)]

    def work(chunk):
        return [decode_event(encode_event(r)) for r in chunk]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, [records[i::8] for i in range(8)]))
    assert [r for chunk in results for r in chunk] == [r for i in range(8) for r in records[i::8]]


def test_core_dataclasses_survive_the_wire():
    """output_to_record / record_to_output and event_to_record / record_to_event of the rules
    contract compose with the codec."""
    from craps_streams.rules.contract import (
        event_to_record,
        output_to_record,
        record_to_event,
        record_to_output,
    )
    from craps_streams.rules.events import (
        EventRejected,
        MarkerCleared,
        MarkerPlaced,
        SurveillanceAlerted,
        WagerSettled,
    )

    outputs = [
        WagerSettled("w1", "T1", 3, "fire", "win", 500, 12_000, "fire-623a.5", "points=4", 40, 9, 3, "T1/40/settle/w1"),
        MarkerPlaced("m/T1/40", "T1", 40, 9, "fire", "c1", "point-6", 2),
        MarkerCleared("c/T1/41", "T1", 41, 10, "fire", "c1", "seven_out"),
        SurveillanceAlerted("a/T1/40", "T1", 40, 9, "large_win", "P7", "big", ("w1", "w2")),
        EventRejected("r/T1/42", "T1", 42, 11, "bad_die", "die1 must be 1..6",
                      {"type": "DiceThrown", "table_id": "T1", "seq": 42, "ts": 11, "die1": 7, "die2": 1}),
    ]
    for o in outputs:
        assert record_to_output(decode_output(encode_output(output_to_record(o)))) == o
    for record in EXAMPLES:
        event = record_to_event(record)
        assert record_to_event(decode_event(encode_event(event_to_record(event)))) == event
