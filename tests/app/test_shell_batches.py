"""The worker settles a batch at a time (`SettlementShell.handle_batch`, quiet runs in one native
call): the same verdicts, messages, events and stored tables as its messages one by one
(`handle`), on a floor with bad input, forged events and tables read back from their stored
records; and a batch that raises names the message, or says it raised inside a quiet run."""
from __future__ import annotations

import json
import re
from collections import Counter

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from craps_streams.app.shell import Handled, SettledBatch, SettlementShell, SettlingRaised
from craps_streams.authenticity import TableSigner, TagCheck, sign_record
from craps_streams.codec import encode_event
from craps_streams.accelerator.rules import chosen
from craps_streams.rules import event_to_record, record_to_event
from craps_streams.rules.verdict import APPLIED, REJECTED, UNDECODABLE
from craps_streams.sim.floor import floor_events
from craps_streams.surveillance import HoldBook
from craps_streams.surveillance.native_watch import watch_record
from tests.app.feeds import reordered_feed
from tests.authenticity.authenticity_keys import ring_for
from tests.exploration import examples

TABLES = [f"T{n:03d}" for n in range(1, 6)]
RING = ring_for(TABLES)


def floor_messages() -> list[bytes]:
    """A signed floor of 5 tables with torn records, a wager whose stake was raised after it was
    signed (forged) every 97 messages, and bytes that are not Avro every 211."""
    signer = TableSigner(RING)
    out = []
    for n, r in enumerate(floor_events(5, 3, seed=11, bad_rate=0.02)):
        if not isinstance(r, dict):
            out.append(r.encode())
            continue
        try:
            signed = sign_record(signer, r)
            value = encode_event(signed)
        except Exception:
            out.append(json.dumps(r).encode())  # unencodable: sent as raw bytes, like a broken feed
            continue
        if n % 97 == 0 and r.get("type") == "WagerPlaced":
            event = record_to_event(signed)
            value = encode_event(event_to_record(msgspec.structs.replace(event, amount_cents=event.amount_cents * 10)))
        out.append(value)
        if n % 211 == 0:
            out.append(b"\x00not avro " + value[:7])
    return out


def shell(stored=None) -> SettlementShell:
    return SettlementShell((stored or {}).get, tags=TagCheck(RING))


def one_by_one(s: SettlementShell, values, start=0) -> list[Handled]:
    return [s.handle(v, "t", 0, offset) for offset, v in enumerate(values, start)]


def splits(n: int, sizes) -> list[tuple[int, int]]:
    """(start, end) of each batch of `n` messages, their sizes cycling through `sizes`."""
    out, at, k = [], 0, 0
    while at < n:
        out.append((at, min(n, at + sizes[k % len(sizes)])))
        at, k = at + sizes[k % len(sizes)], k + 1
    return out


def in_batches(s: SettlementShell, values, sizes, start=0) -> list[SettledBatch]:
    return [s.handle_batch(s.items_of(messages(values[a:b], start + a), 0, {})) for a, b in splits(len(values), sizes)]


def one_by_one_batches(s: SettlementShell, values, sizes, start=0) -> list[SettledBatch]:
    """The same batches, their messages settled one by one (`handle`)."""
    handled = one_by_one(s, values, start)
    return [SettledBatch.of(handled[a:b]) for a, b in splits(len(values), sizes)]


class Message:
    def __init__(self, value: bytes, offset: int):
        self.value, self.offset, self.topic = value, offset, "t"


def messages(values, start=0) -> list[Message]:
    return [Message(v, offset) for offset, v in enumerate(values, start)]


def verdicts(batch: SettledBatch) -> Counter:
    return Counter(h.verdict for h in batch.handled) + Counter({APPLIED: batch.quiet})


def same(a: list[SettledBatch], b: list[SettledBatch]) -> None:
    """What the worker writes and counts for each batch: the same messages for each topic, in
    order; the same tables changed, in the order of their first change; the same verdicts; and
    every message that was not applied (rejected, undecodable, duplicate, held) the same Handled,
    in order (a quiet run only applies)."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert len(x) == len(y)
        assert x.records == y.records
        assert list(x.changed) == list(y.changed)
        assert verdicts(x) == verdicts(y)
        rest_x = [h for h in x.handled if h.verdict is not APPLIED]
        rest_y = [h for h in y.handled if h.verdict is not APPLIED]
        assert [(h.verdict, h.table_id, list(h.messages), h.event, list(h.outputs)) for h in rest_x] == \
            [(h.verdict, h.table_id, list(h.messages), h.event, list(h.outputs)) for h in rest_y]


def counted_quiet(s: SettlementShell) -> list[int]:
    """Wrap the shell's quiet run; -> a list that gets the count of each run's events."""
    ran: list[int] = []
    run = s.quiet

    def counting(*args):
        result = run(*args)
        ran.append(result[1])
        return result

    s.quiet = counting
    return ran


def test_a_batch_settles_as_its_messages_one_by_one():
    values = floor_messages()
    plain, batched = shell(), shell()
    ran = counted_quiet(batched) if batched.quiet is not None else []
    sizes = [1, 2, 3, 50, 500, 2000]
    a = one_by_one_batches(plain, values, sizes)
    b = in_batches(batched, values, sizes)
    same(a, b)
    assert {t: plain.stored_text(t) for t in plain.states} == {t: batched.stored_text(t) for t in batched.states}
    handled = [h for batch in a for h in batch.handled]
    assert {APPLIED, REJECTED, UNDECODABLE} <= {h.verdict for h in handled}  # each kind of answer
    assert sum(h.verdict is REJECTED and h.outputs[0].reason == "bad_signature" for h in handled) >= 3
    if chosen().native:  # the native code settled most wagers and shooter changes in runs
        quiet = sum(type(h.event).__name__ in ("WagerPlaced", "ShooterChanged") and h.verdict is APPLIED
                    for h in handled)
        assert sum(ran) > 0.9 * quiet and sum(batch.quiet for batch in b) == sum(ran)


def test_tables_read_back_from_their_records_settle_in_batches_as_one_by_one():
    values = floor_messages()
    cut = len(values) // 3
    live = shell()
    one_by_one(live, values[:cut])
    stored = {t: live.stored_text(t) for t in live.states}
    restarted = shell(stored)  # no table in memory: each is read back on its first event
    a = one_by_one_batches(live, values[cut:], [700], cut)
    b = in_batches(restarted, values[cut:], [700], cut)
    same(a, b)
    assert {t: restarted.stored_text(t) for t in restarted.states} == {t: live.stored_text(t) for t in live.states}


def test_a_batch_that_raises_names_the_item_it_raised_at():
    values = floor_messages()[:300]
    s = shell()
    items = [s.decoded(v, "t", 0, offset) for offset, v in enumerate(values)]
    throws = [i for i, e in enumerate(items) if type(e).__name__ == "DiceThrown"]
    bad = throws[5]
    settled = s.settled

    def raising(event):
        if event is items[bad]:
            raise ZeroDivisionError("a bug")
        return settled(event)

    s.settled = raising
    with pytest.raises(SettlingRaised) as raised:
        s.handle_batch(items)
    assert raised.value.index == bad and type(raised.value.error) is ZeroDivisionError


def test_a_quiet_run_that_raises_is_reported_without_an_index():
    s = shell()
    items = [s.decoded(v, "t", 0, offset) for offset, v in enumerate(floor_messages()[:300])]

    def raising(*args):
        raise RuntimeError("a wager gave outputs")

    s.quiet = raising
    with pytest.raises(SettlingRaised) as raised:
        s.handle_batch(items)
    assert raised.value.index is None and type(raised.value.error) is RuntimeError
    s.quiet = None  # event by event, as the worker settles such a batch again
    same([s.handle_batch(items)], one_by_one_batches(shell(), floor_messages()[:300], [300]))


def test_a_message_whose_settling_raised_before_is_rejected_with_its_bytes():
    values = floor_messages()[:40]
    s = shell()
    items = s.items_of(messages(values), 3, {5: ZeroDivisionError("a bug")})
    rejected = items[5]
    assert type(rejected) is Handled and rejected.verdict is UNDECODABLE
    assert rejected.outputs[0].reason == "internal_error" and rejected.outputs[0].id == "rejected/t/3/5"
    (topic, _, value), = rejected.messages
    assert values[5] in value  # the raw bytes kept in the rejection
    assert type(s.items_of(messages(values), 3, {})[5]) is not Handled  # an event otherwise
    batch = s.handle_batch(items)
    assert (b"", value) in batch.records[topic] and rejected in batch.handled


def test_a_decoder_that_raises_names_the_message():
    values = floor_messages()[:40]
    s = shell()
    fast = s.fast_decode

    def raising(value):
        if value is values[7]:
            raise KeyError("a bug in the decoder")
        return fast(value)

    s.fast_decode = raising
    with pytest.raises(SettlingRaised) as raised:
        s.items_of(messages(values), 0, {})
    assert raised.value.index == 7 and type(raised.value.error) is KeyError



def test_a_stored_record_reads_back_as_json_writes_it():
    """The stored record is written by msgspec (sorted keys, no spaces): the values
    `json.dumps(sort_keys=True)` writes, its keys in the same order, and a table read back from it
    stores the same record again."""
    s = shell()
    in_batches(s, floor_messages(), [300])
    for table_id, state in s.states.items():
        text = s.stored_text(table_id)
        book = s.books.get(table_id) or HoldBook()
        record = {"table": state.to_record(), "hold": book.to_record(), "watch": watch_record(book.watch)}
        by_json = json.dumps(record, separators=(",", ":"), sort_keys=True)
        assert json.loads(text) == json.loads(by_json)
        assert [k for k in re.findall(r'"([^"]*)":', text)] == [k for k in re.findall(r'"([^"]*)":', by_json)]
        assert " " not in text
        back = shell({table_id: text})
        assert back.state_of(table_id) is not None and back.stored_text(table_id) == text


@settings(max_examples=examples(25), deadline=None)
@given(seed=st.integers(0, 10_000), window=st.integers(1, 30), sizes=st.lists(st.integers(1, 400), min_size=1, max_size=5))
def test_a_reordered_feed_with_duplicates_settles_in_batches_as_one_by_one(seed, window, sizes):
    """Events out of order (held beyond a gap, released), sent twice, across batches of any sizes:
    the quiet runs stop at every event they do not settle, so the batches write what the events
    one by one write (no tag check here: the quiet run without one)."""
    values = [encode_event(r) for r in reordered_feed(seed, window)[1]]
    plain, batched = SettlementShell(lambda t: None), SettlementShell(lambda t: None)
    same(one_by_one_batches(plain, values, sizes), in_batches(batched, values, sizes))
    assert {t: plain.stored_text(t) for t in plain.states} == {t: batched.stored_text(t) for t in batched.states}
