"""The worker's shell without a broker: decode, apply, book the hold, and what it stores per table
(state and hold book, one record) brings a restarted worker back to exactly the same place."""
from __future__ import annotations

import json

from craps_streams.app.shell import SettlementShell, state_from_text
from craps_streams.rules.verdict import APPLIED, DUPLICATE, HELD, REJECTED, RELEASED, UNDECODABLE
from craps_streams.codec import encode_event
from craps_streams.accelerator.rules import chosen
from craps_streams.rules import SurveillanceAlerted, WagerSettled
from craps_streams.sim.floor import floor_events
from craps_streams.surveillance import HoldWatch
from craps_streams.surveillance.dice_watch import DiceWatch
from craps_streams.surveillance.native_watch import as_table_watch
from craps_streams.surveillance.table_watch import TableWatch, Thresholds
from tests.conftest import SETTINGS


def messages(tables=4, hours=3, seed=2, bad_rate=0.0):
    for r in floor_events(tables, hours, seed, bad_rate=bad_rate):
        if isinstance(r, dict):
            try:
                yield encode_event(r)
            except Exception:
                yield json.dumps(r).encode()  # unencodable: sent as raw bytes, like a broken feed
        else:
            yield r.encode()


def run(shell, values, start=0):
    handled = []
    for offset, value in enumerate(values, start):
        handled.append(shell.handle(value, "t", 0, offset))
    return handled


def test_a_restarted_shell_from_stored_records_continues_identically():
    values = list(messages(bad_rate=0.02))
    cut = len(values) // 2
    live = SettlementShell(lambda t: None, HoldWatch(Thresholds(tail_alert=0.05, check_z=0.5, position_alert=0.001, dice=DiceWatch(4.0, 6.0, 6.0))))
    run(live, values[:cut])
    stored = {t: live.stored_text(t) for t in live.states}
    restarted = SettlementShell(stored.get, HoldWatch(Thresholds(tail_alert=0.05, check_z=0.5, position_alert=0.001, dice=DiceWatch(4.0, 6.0, 6.0))))
    a = run(live, values[cut:], cut)
    b = run(restarted, values[cut:], cut)
    assert [h.messages for h in b] == [h.messages for h in a]
    assert {t: restarted.stored_text(t) for t in restarted.states} == \
        {t: live.stored_text(t) for t in restarted.states}
    if chosen().native:  # the tables read back are watched natively again, as the live ones
        assert restarted.books and all(type(b.watch) is not TableWatch for b in restarted.books.values())


def test_the_native_watch_settles_and_stores_as_the_python_one():
    touchy = Thresholds(tail_alert=0.05, check_z=0.5, position_alert=0.001, dice=DiceWatch(4.0, 6.0, 6.0))
    values = list(messages(tables=5, hours=4, seed=9, bad_rate=0.02))
    default = SettlementShell(lambda t: None, HoldWatch(touchy))  # native where the native code is in use
    python = SettlementShell(lambda t: None, HoldWatch(touchy, table_watch=lambda: TableWatch()))  # kept Python
    a, b = run(default, values), run(python, values)
    assert all(type(book.watch) is TableWatch for book in python.books.values())
    if chosen().native:
        assert all(type(book.watch) is not TableWatch for book in default.books.values())
    assert any(type(o) is SurveillanceAlerted for h in b for o in h.outputs)
    assert [h.messages for h in a] == [h.messages for h in b]
    assert {t: default.stored_text(t) for t in default.states} == {t: python.stored_text(t) for t in python.states}


def test_hold_alerts_are_outputs_and_the_book_is_stored_with_the_state():
    shell = SettlementShell(lambda t: None, HoldWatch(Thresholds(tail_alert=0.05, check_z=0.5, position_alert=0.001, dice=DiceWatch(4.0, 6.0, 6.0))))
    handled = run(shell, messages(tables=6, hours=6, seed=3))
    alerts = [o for h in handled for o in h.outputs
              if type(o) is SurveillanceAlerted and o.alert in ("hold_anomaly", "position_anomaly")]
    assert alerts, "low thresholds must raise some hold and position alerts on a busy floor"
    for h in handled:
        if any(o in alerts for o in h.outputs):
            assert any(type(o) is WagerSettled for o in h.outputs)
            assert any(topic.endswith("surveillance") for topic, _, _ in h.messages)
    table = alerts[0].table_id
    state, book = state_from_text(shell.stored_text(table))
    assert state.to_record() == shell.states[table].to_record()
    assert book.to_record() == shell.books[table].to_record() and book.lines
    # The shell keeps the watch natively where the native code is in use; what it stores is the same.
    assert book.watch.to_record() == as_table_watch(shell.books[table].watch).to_record() and book.watch.dice.throws


def test_verdicts_of_a_rejected_a_duplicate_and_a_held_event():
    shell = SettlementShell(lambda t: None)
    base = {"table_id": "T9", "ts": 1}
    rec = lambda seq, type_, **f: encode_event({**base, "seq": seq, "type": type_, **f})  # noqa: E731
    shell.handle(rec(1, "TableOpened", table_kind="live"), "t", 0, 0)
    shell.handle(rec(2, "ShooterChanged", shooter_id="a", position=1, reason="table_open"), "t", 0, 1)
    h = shell.handle(rec(3, "WagerPlaced", wager_id="w", position=1, wager="fire", amount_cents=50), "t", 0, 2)
    assert h.verdict == REJECTED and h.state is not None  # the feed received seq 3: store it
    assert shell.states["T9"].received_seq == 3
    h = shell.handle(rec(5, "DiceThrown", die1=2, die2=2, valid=True), "t", 0, 3)
    assert h.verdict == HELD and h.outputs[0].alert == "sequence_gap"
    assert shell.handle(rec(5, "DiceThrown", die1=2, die2=2, valid=True), "t", 0, 4).verdict == DUPLICATE
    h = shell.handle(rec(4, "DiceThrown", die1=1, die2=3, valid=True), "t", 0, 5)
    assert h.outputs[-1].alert == "sequence_resumed" and shell.states["T9"].point == 0
    assert h.verdict == RELEASED  # applied, and the held seq 5 behind it
    h = shell.handle(rec(6, "DiceThrown", die1=3, die2=3, valid=True), "t", 0, 6)
    assert h.verdict == APPLIED and shell.states["T9"].point == 6
    h = shell.handle(b"\x00torn", "t", 0, 7)
    assert h.verdict == UNDECODABLE and h.outputs[0].id == "rejected/t/0/7" and h.state is None


def test_the_fast_decoder_gives_the_generic_paths_events_or_leaves_the_message_to_it():
    """The worker's messages read straight into events (the archive replay's decoder, one record
    at a time) equal what `decode_event` then `record_to_event` make of them; a message it is not
    sure of (a TableOpened, bytes missing or left over, another header) is left to that path."""
    from craps_streams.app.shell import _fast_decoder
    from craps_streams.authenticity import TableSigner, keyfile, sign_record
    from craps_streams.codec import HEADER_LEN, decode_event
    from craps_streams.rules import TableOpened, record_to_event

    fast = _fast_decoder()
    assert fast is not None
    signer = TableSigner(keyfile.init(SETTINGS.key_ring_path)[0])
    values = [encode_event(sign_record(signer, r)) for r in floor_events(4, 2, seed=3)]
    decoded = 0
    for value in values:
        generic = record_to_event(decode_event(value))
        event = fast(value)
        if type(generic) is TableOpened:
            assert event is None
        else:
            assert event == generic
            decoded += 1
        for odd in (value[:-1], value + b"\0", value[:HEADER_LEN + 2], value[:HEADER_LEN], b"x" + value[1:],
                    bytearray(value)):
            assert fast(odd) is None
    assert decoded > 0.95 * len(values)


def test_the_shell_settles_the_same_with_and_without_the_fast_decoder():
    values = list(messages(bad_rate=0.02))
    fast = SettlementShell(lambda t: None)
    generic = SettlementShell(lambda t: None)
    generic.fast_decode = None
    for offset, value in enumerate(values):
        a, b = fast.handle(value, "t", 0, offset), generic.handle(value, "t", 0, offset)
        assert (a.verdict, a.table_id, a.messages, a.event) == (b.verdict, b.table_id, b.messages, b.event)
        assert (a.state is None and b.state is None) or a.state.to_record() == b.state.to_record()
    assert {t: fast.stored_text(t) for t in fast.states} == {t: generic.stored_text(t) for t in generic.states}
