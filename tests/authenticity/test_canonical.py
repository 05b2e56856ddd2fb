"""The canonical bytes: as defined (the general path), identical whatever the wire, injective."""
from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from craps_streams.authenticity.canonical import OWN_FIELDS, canonical_bytes, canonical_bytes_general
from craps_streams.codec import decode_event, encode_event, from_json_line, to_json_line
from craps_streams.rules import event_to_record, record_to_event
from craps_streams.rules.events import (
    ComeBetsOnly,
    DiceThrown,
    ShooterChanged,
    TableClosed,
    TableOpened,
    WagerChangeRequested,
    WagerPlaced,
)
from tests.authenticity.authenticity_events import ANY_TAGGED_EVENT, tagged_events


def test_definition_by_example():
    e = WagerPlaced("T001", 7, 1_767_225_600_000, "T001-w3", 4, "fire", 500, key_id="k1", tag="x" * 43)
    assert canonical_bytes(e) == \
        b'["craps-event-v1","k1","WagerPlaced","T001",7,1767225600000,"T001-w3",4,"fire",500]'
    # valid defaults to true and is covered; the tag is not
    assert canonical_bytes(DiceThrown("T1", 2, 3, 4, 5, key_id="k")) == \
        b'["craps-event-v1","k","DiceThrown","T1",2,3,4,5,true]'
    opened = record_to_event({"type": "TableOpened", "table_id": "T1", "seq": 1, "ts": 0, "table_kind": "live",
                              "rules": {"surrender": {"fire": "push"}, "hot_roller_paytable": "B"}, "key_id": "k"})
    assert canonical_bytes(opened) == (b'["craps-event-v1","k","TableOpened","T1",1,0,"live",'
                                       b'{"hot_roller_paytable":"B","surrender":{"fire":"push"}}]')


@settings(max_examples=150, deadline=None)
@given(ANY_TAGGED_EVENT)
def test_generated_formatter_is_the_definition(event):
    assert canonical_bytes(event) == canonical_bytes_general(event)


@settings(max_examples=150, deadline=None)
@given(ANY_TAGGED_EVENT)
def test_the_same_bytes_from_json_lines_and_avro(event):
    """A tag made on the JSON Lines event verifies on its Avro copy and back: archive -> replay."""
    record = event_to_record(event)
    via_json = record_to_event(from_json_line(to_json_line(record)))
    via_avro = record_to_event(decode_event(encode_event(record)))
    assert via_json == via_avro == event
    assert canonical_bytes(via_json) == canonical_bytes(via_avro) == canonical_bytes(event)


@settings(max_examples=150, deadline=None)
@given(st.tuples(ANY_TAGGED_EVENT, ANY_TAGGED_EVENT))
def test_different_events_have_different_bytes(pair):
    a, b = pair
    if event_to_record(a) | {"tag": None} != event_to_record(b) | {"tag": None}:
        assert canonical_bytes(a) != canonical_bytes(b)


def test_untagged_and_odd_values_take_the_general_path():
    e = DiceThrown("T1", 1, 2, 3, 4)  # no key id
    assert canonical_bytes(e) == b'["craps-event-v1",null,"DiceThrown","T1",1,2,3,4,true]'
    assert type(tagged_events) and canonical_bytes(TableOpened("T1", 1, 0, "live", None)) == \
        b'["craps-event-v1",null,"TableOpened","T1",1,0,"live",null]'


# Every string a kind carries, each spelt with one odd character: every ASCII character (the
# controls, DEL, quotes, backslash), and some beyond ASCII. Built directly (not through the
# contract, which refuses most of them in ids), so the formatter meets each in every string field.
_ODD = [chr(c) for c in range(128)] + ["é", "\u2028", "\U0001f3b2", "٣", "\ud800"]


def _with_odd_strings():
    base = {
        ShooterChanged: ShooterChanged("T1", 2, 3, "S1", 4, "voluntary", key_id="k", tag="t"),
        DiceThrown: DiceThrown("T1", 2, 3, 4, 5, False, key_id="k", tag="t"),
        WagerPlaced: WagerPlaced("T1", 2, 3, "w1", 4, "fire", 500, key_id="k", tag="t"),
        WagerChangeRequested: WagerChangeRequested("T1", 2, 3, "w1", -7, key_id="k", tag="t"),
        ComeBetsOnly: ComeBetsOnly("T1", 2, 3, True, key_id="k", tag="t"),
        TableClosed: TableClosed("T1", 2, 3, key_id="k", tag="t"),
    }
    for cls, event in base.items():
        for name in ("key_id", *(n for n in OWN_FIELDS[cls] if type(getattr(event, n)) is str), "table_id"):
            for c in _ODD:
                yield msgspec.structs.replace(event, **{name: f"a{c}b"})


def test_the_fast_formatter_is_the_definition_on_every_character():
    """The generated formatter (msgspec's JSON where it is ASCII) against json.dumps, the
    definition: every ASCII character and some beyond, in every string field of every kind."""
    n = 0
    for event in _with_odd_strings():
        assert canonical_bytes(event) == canonical_bytes_general(event), event
        n += 1
    # key_id and table_id in each of the six kinds; shooter_id, reason, wager_id (twice) and wager
    assert n == (6 * 2 + 5) * len(_ODD)


def test_extreme_numbers_on_the_fast_path():
    for v in (0, -1, 2**63 - 1, -(2**63), 2**64, -(2**70), True):
        for event in (DiceThrown("T1", 2, 3, v, 5, key_id="k"), WagerPlaced("T1", 2, 3, "w", 1, "fire", v, key_id="k")):
            assert canonical_bytes(event) == canonical_bytes_general(event)
