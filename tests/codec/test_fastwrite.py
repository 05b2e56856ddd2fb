"""The outputs' direct writer (craps_streams/codec/fastwrite.py, native/src/avro_out.rs) against the plain
path, `encode_output(output_to_record(o))`: the same bytes for every output, on simulated floors
and on odd values; whatever the plain path refuses, it refuses with the same error."""
from __future__ import annotations

import json

import pytest

from craps_streams.app.shell import TOPIC_OF, SettlementShell
from craps_streams.codec import CodecError, decode_output, encode_event, encode_output
from craps_streams.codec.fastwrite import _native_writer, output_writer
from craps_streams.accelerator.rules import chosen
from craps_streams.rules import EventRejected, MarkerCleared, MarkerPlaced, SurveillanceAlerted, WagerSettled
from craps_streams.rules.contract import output_to_record
from craps_streams.rules.verdict import UNDECODABLE
from craps_streams.sim.floor import floor_events
from craps_streams.surveillance import HoldWatch
from craps_streams.surveillance.dice_watch import DiceWatch
from craps_streams.surveillance.table_watch import Thresholds

WRITERS = [pytest.param(True, id="native"), pytest.param(False, id="plain")]


def plain(outputs):
    return [(TOPIC_OF[type(o)], o.table_id.encode(), encode_output(output_to_record(o))) for o in outputs]


def floor_outputs(tables=6, hours=4, seed=11, bad_rate=0.02) -> list[list]:
    """A floor settled by the worker's shell, with thresholds low enough that every alert kind is
    raised (their wager ids are arrays of strings)."""
    touchy = Thresholds(tail_alert=0.05, check_z=0.5, position_alert=0.001, dice=DiceWatch(4.0, 6.0, 6.0))
    shell = SettlementShell(lambda t: None, HoldWatch(touchy))
    out = []
    for offset, r in enumerate(floor_events(tables, hours, seed, bad_rate=bad_rate)):
        if not isinstance(r, dict):
            continue
        try:
            value = encode_event(r)
        except CodecError:
            value = json.dumps(r).encode()
        h = shell.handle(value, "t", 0, offset)
        out.append(h)
    return out


def test_the_native_writer_is_in_use_with_the_native_core():
    assert (_native_writer(TOPIC_OF) is not None) == (chosen().native)


@pytest.mark.parametrize("native", WRITERS)
def test_a_floor_s_outputs_are_written_byte_for_byte_as_the_plain_path_writes_them(native):
    handled = floor_outputs()
    kinds = {type(o) for h in handled for o in h.outputs}
    assert {WagerSettled, MarkerPlaced, MarkerCleared, SurveillanceAlerted, EventRejected} <= kinds
    write = output_writer(TOPIC_OF, native=native)
    for h in handled:
        assert write(h.outputs) == plain(h.outputs)
        if h.verdict != UNDECODABLE:  # an undecodable message's rejection carries its raw bytes
            assert h.messages == plain(h.outputs)  # the shell's own messages too


def settled(**changes) -> WagerSettled:
    fields = dict(wager_id="w1", table_id="t1", position=3, wager="fire", outcome="win", stake_cents=500,
                  won_cents=1_000_000, paytable="fire-623a.5", detail="points=4", seq=17, ts=1_700_000_000_000,
                  placed_seq=2, id="t1/17/settle/w1")
    fields.update(changes)
    return WagerSettled(**fields)


def alerted(**changes) -> SurveillanceAlerted:
    fields = dict(id="t1/9/alert", table_id="t1", seq=9, ts=5, alert="large_win", shooter_id="s1",
                  message="a large win", wager_ids=("w1", "w2"))
    fields.update(changes)
    return SurveillanceAlerted(**fields)


ODD = [
    settled(),
    settled(table_id="täble-ñ", wager_id="w€", detail="points=4 ✓ 🎲", outcome=""),
    settled(stake_cents=(1 << 63) - 1, won_cents=-(1 << 63), seq=0, ts=-1, placed_seq=(1 << 62)),
    settled(position=(1 << 31) - 1),
    settled(position=-(1 << 31)),
    settled(detail="x" * 300),
    alerted(),
    alerted(wager_ids=()),
    alerted(wager_ids=("é", "", "w" * 200)),
    alerted(wager_ids=["w1", "w2"]),  # a list, not the tuple the core makes: the plain path writes it
    alerted(shooter_id=""),
    MarkerPlaced("t1/3/marker", "t1", 3, 4, "fire", "c1", "point-6", 2),
    MarkerCleared("t1/4/clear", "t1", 4, 5, "fire", "c1", "seven_out"),
    EventRejected("rejected/t/0/1", "t1", 1, 2, "stake_out_of_limits", "too much", {"a": 1.5}),
]


@pytest.mark.parametrize("native", WRITERS)
def test_odd_values_are_written_as_the_plain_path_writes_them(native):
    write = output_writer(TOPIC_OF, native=native)
    assert write(ODD) == plain(ODD)
    for o in ODD:
        assert write([o]) == plain([o])
        topic, key, value = write([o])[0]
        assert decode_output(value)["table_id"] == o.table_id


class Text(str):
    pass


REFUSED = [
    settled(position=1 << 31),  # beyond an Avro int
    settled(position=True),  # a bool is not an int to the codec
    settled(stake_cents=1 << 63),  # beyond an Avro long
    settled(won_cents=1.5),
    settled(wager="\ud800"),  # a lone surrogate: not UTF-8
    settled(paytable=None),
    alerted(wager_ids=("w1", 2)),
]


@pytest.mark.parametrize("native", WRITERS)
@pytest.mark.parametrize("output", REFUSED, ids=range(len(REFUSED)))
def test_what_the_plain_path_refuses_is_refused_the_same_way(native, output):
    with pytest.raises(CodecError) as plain_error:
        plain([output])
    with pytest.raises(CodecError) as error:
        output_writer(TOPIC_OF, native=native)([settled(), output])
    assert str(error.value) == str(plain_error.value)


@pytest.mark.parametrize("native", WRITERS)
def test_a_str_subclass_or_an_int_subclass_takes_the_plain_path_with_the_same_bytes(native):
    class Count(int):
        pass

    odd = [settled(wager=Text("fire")), settled(stake_cents=Count(500)), settled()]
    assert output_writer(TOPIC_OF, native=native)(odd) == plain(odd)
