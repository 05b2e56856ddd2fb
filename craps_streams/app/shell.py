"""A batch of Kafka messages in (or one: `handle`), the outputs to produce and the table states to
store out.

No game logic: decode, settle (craps_streams.settle.step, the step replay runs too, and its quiet runs
as the replay takes them), encode. Free of
Kafka clients so that it is tested without a broker. It never raises on bad input: an undecodable
message becomes an EventRejected with its raw bytes, topic, partition and offset, so nothing of
the floor's input is lost.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

import msgspec

from craps_streams.accelerator.rules import RulesCore, chosen
from craps_streams.codec import HEADER_LEN, CodecError, decode_event, default_codec, encode_output
from craps_streams.codec.fastread import _native_reader, _Odd, _setup
from craps_streams.codec.fastwrite import output_writer
from craps_streams.rules import (
    ContractError,
    EventRejected,
    MarkerCleared,
    MarkerPlaced,
    SurveillanceAlerted,
    TableState,
    WagerSettled,
    record_to_event,
)
from craps_streams.rules.verdict import UNDECODABLE
from craps_streams.settle.quiet import quiet_run
from craps_streams.settle.step import settle_event, undecodable_rejection
from craps_streams.surveillance import HoldBook, HoldWatch
from craps_streams.surveillance.native_watch import native_of, watch_record, with_native_watch
from craps_streams.surveillance.table_watch import TableWatch
from craps_streams.topics import Topics


def topic_of(topics: Topics) -> dict:
    """Output class -> the floor's topic it is written to."""
    return {
        WagerSettled: topics.settlements,
        MarkerPlaced: topics.layout_markers,
        MarkerCleared: topics.layout_markers,
        SurveillanceAlerted: topics.surveillance,
        EventRejected: topics.rejections,
    }


TOPIC_OF = topic_of(Topics())  # the default floor's (prefix craps.)


@dataclass(slots=True)
class Handled:
    verdict: str  # craps_streams.rules.verdict: applied, released, held, duplicate, rejected, undecodable
    table_id: str
    outputs: list = field(default_factory=list)  # core output objects
    messages: list = field(default_factory=list)  # (topic, key bytes, value bytes)
    state: TableState | None = None  # to store when not None
    event: object = None  # the decoded event, when it could be decoded


# The stored record's JSON: sorted keys, no spaces (the floor view's `page_record` reads that shape).
# msgspec rather than `json.dumps(sort_keys=True)`: the worker writes each changed table's record in
# every transaction, and msgspec writes it about 7 times faster (most of it is the surveillance's
# numbers). The text differs from json's only in how it spells a number (1e-05 as 0.00001, 1e+16 as
# 1e16) and in writing non-ASCII as UTF-8: the same values when read back (`state_from_text`,
# tests/app/test_shell_batches.py). Every number in it is finite (counts, cents, the paytables'
# house edges and deviations, dice sums, probabilities), as JSON requires.
_RECORD = msgspec.json.Encoder(order="sorted")


@dataclass(slots=True)
class SettledBatch:
    """What a batch of messages settled into (`SettlementShell.handle_batch`): what the worker
    writes in the batch's transaction and what its observers count."""

    handled: list = field(default_factory=list)  # a Handled per message but the quiet events, in order
    quiet: int = 0  # quiet events (wagers placed, shooters changed) applied: verdict applied, no outputs
    records: dict = field(default_factory=dict)  # topic -> the batch's (key, value) messages for it, in order
    changed: dict = field(default_factory=dict)  # table id -> None: the tables the batch changed, in order

    def __len__(self) -> int:
        """The batch's messages."""
        return len(self.handled) + self.quiet

    def add(self, handled: Handled) -> None:
        self.handled.append(handled)
        records = self.records
        for topic, key, value in handled.messages:
            topic_records = records.get(topic)
            if topic_records is None:
                topic_records = records[topic] = []
            topic_records.append((key, value))
        if handled.state is not None:
            self.changed[handled.table_id] = None

    @classmethod
    def of(cls, handled_list) -> "SettledBatch":
        """The batch of messages settled one by one (`SettlementShell.handle`)."""
        batch = cls()
        for handled in handled_list:
            batch.add(handled)
        return batch


def state_to_text(state: TableState, book: HoldBook | None = None) -> str:
    """What the changelog stores for a table: its state, its hold book and its surveillance (dice,
    hold tails, positions), in one record (a book may keep its surveillance natively:
    `watch_record`)."""
    book = book or HoldBook()
    record = {"table": state.to_record(), "hold": book.to_record(), "watch": watch_record(book.watch)}
    return _RECORD.encode(record).decode()


def state_from_text(text: str) -> tuple[TableState, HoldBook]:
    record = json.loads(text)
    if "table" not in record:  # stored before the hold book joined the table's record
        return TableState.from_record(record), HoldBook()
    book = HoldBook.from_record(record["hold"])
    book.watch = TableWatch.from_record(record.get("watch"))  # absent: stored before the table watch existed
    return TableState.from_record(record["table"]), book


class SettlingRaised(Exception):
    """Settling an item of a batch raised (a bug, not bad input): `index` is the item's place in
    the batch, None when it raised inside a quiet run (which of its events is not known: settle
    the batch again without the run, `SettlementShell.quiet = None`, to find it)."""

    def __init__(self, index: int | None, error: BaseException):
        super().__init__(f"item {index}: {error!r}")
        self.index = index
        self.error = error


class _Generic(Exception):
    """The fast decoder left this message to the generic path."""


def _generic(data, start, n):
    raise _Generic


def _fast_decoder():
    """`decode(value) -> event or None` straight from the Avro bytes into the core's event: the
    archive replay's decoder (craps_streams/codec/fastread.py, its native form where the native code is
    in use), one message as a block of one record. None (the generic path: `decode_event`, then
    `record_to_event`) for anything it is not sure of: another writer schema, a TableOpened, a
    check of the contract failing, bytes left over or missing. The events are the generic path's
    (tests/app/test_settlement_shell.py compares both). None when the schema's shape has no fast
    decoder. Its caches of table ids and strings are bounded (20,000 values, as the replay's)."""
    codec = default_codec()
    # The native reader may be used only by the thread that made it (PyO3 `unsendable`): one per
    # thread, made on that thread's first message.
    local = threading.local()

    def reader():
        read = getattr(local, "read", None)
        if read is None:
            plan, generated, native = _setup(codec)
            native = native and _native_reader(codec, plan)  # this thread's own, not the shared one
            read = local.read = native.decode if native else generated
        return read

    if not reader():
        return None
    header = codec._event_header

    def decode(value):
        if value.__class__ is not bytes or not value.startswith(header):
            return None
        try:
            items = (getattr(local, "read", None) or reader())(value[HEADER_LEN:], 1, 0, _generic)
        except (_Generic, _Odd, IndexError, UnicodeDecodeError):
            return None
        return None if items is None else items[0]

    return decode


_WRITERS: dict[Topics, object] = {}


def _output_writer(topics: Topics):
    """outputs -> [(topic, key, value)]: each output's message, byte for byte
    `encode_output(output_to_record(o))` (craps_streams/codec/fastwrite.py); made on first use."""
    writer = _WRITERS.get(topics)
    if writer is None:
        writer = _WRITERS[topics] = output_writer(topic_of(topics))
    return writer


class SettlementShell:
    """Holds the live states of the tables this worker owns; `load` reads a stored state (JSON text)
    when a table is not in memory yet (after a restart or a rebalance); `tags` checks every event's
    authentication tag before the core (the worker always gives one). `watch`: the surveillance
    (default thresholds unless given); `topics`: the floor's topics the outputs are written to."""

    def __init__(self, load, watch: HoldWatch | None = None, tags=None, topics: Topics = Topics(),
                 core: RulesCore | None = None):
        self.load = load
        self.topics = topics
        # The rules core that settles (craps_streams/accelerator/rules.py): the command's choice.
        self.core = core or chosen()
        self.tags = tags  # the tag check before the core (craps_streams.authenticity.TagCheck)
        # Each table's surveillance kept natively where the native code is in use, as the replay
        # keeps it: the same alerts and state (craps_streams/surveillance/native_watch.py).
        self.watch = with_native_watch(watch or HoldWatch())
        self.states: dict[str, TableState] = {}
        self.books: dict[str, HoldBook] = {}  # table id -> its hold book, beside its state
        self.fast_decode = _fast_decoder()
        self.messages = _output_writer(topics)
        # Runs of quiet events (wagers placed, shooters changed) in one native call, as the replay
        # settles them (craps_streams/settle/quiet.py); None where the native code is not in use.
        self.quiet = quiet_run(tags)

    def state_of(self, table_id: str) -> TableState | None:
        state = self.states.get(table_id)
        if state is None:
            stored = self.load(table_id)
            if stored is not None:
                state, book = state_from_text(stored)
                if book.watch is not None and self.watch.table_watch is not TableWatch:
                    book.watch = native_of(book.watch, self.watch.table_watch)  # watched natively again
                self.states[table_id], self.books[table_id] = state, book
        return state

    def stored_text(self, table_id: str) -> str:
        """The record to store for a table (its state and hold book), as of the last event."""
        return state_to_text(self.states[table_id], self.books.get(table_id))

    def handle(self, value: bytes, topic: str, partition: int, offset: int) -> Handled:
        event = self.decoded(value, topic, partition, offset)
        if type(event) is Handled:
            return event
        return self.settled(event)

    def decoded(self, value: bytes, topic: str, partition: int, offset: int):
        """The message's event, or the Handled rejection of a message that is not one."""
        event = self.fast_decode(value) if self.fast_decode is not None else None
        return event if event is not None else self.decoded_generic(value, topic, partition, offset)

    def decoded_generic(self, value: bytes, topic: str, partition: int, offset: int):
        """`decoded` by the generic path alone (`decode_event`, then the contract): for what the
        fast decoder declined."""
        try:
            return record_to_event(decode_event(value))
        except (CodecError, ContractError) as e:
            return self.undecodable(value, e, topic, partition, offset, rejections=self.topics.rejections)

    def items_of(self, messages, partition: int, failed: dict) -> list:
        """A batch of Kafka messages -> `handle_batch`'s items: each message's event (`decoded`),
        or the Handled rejection of one that is not an event, or whose settling raised before
        (`failed`: offset -> the error; rejected "internal_error" with its bytes, not applied).
        A decoder that raises (a bug) raises SettlingRaised with the message's place."""
        fast, generic, undecodable = self.fast_decode, self.decoded_generic, self.undecodable
        out = []
        append = out.append
        for i, m in enumerate(messages):
            if failed:
                error = failed.get(m.offset)
                if error is not None:
                    append(undecodable(m.value, error, m.topic, partition, m.offset, reason="internal_error",
                                          rejections=self.topics.rejections))
                    continue
            try:
                event = fast(m.value) if fast is not None else None
                append(event if event is not None else generic(m.value, m.topic, partition, m.offset))
            except Exception as e:
                raise SettlingRaised(i, e) from e
        return out

    def settled(self, event) -> Handled:
        """One decoded event through the settling step (craps_streams.settle.step)."""
        self.state_of(event.table_id)  # loaded from the changelog on first sight
        verdict, state, outputs = settle_event(self.states, self.books, self.watch, event, self.tags, self.core.apply)
        return Handled(verdict, event.table_id, outputs, self.messages(outputs), state, event)

    def handle_batch(self, items: list) -> SettledBatch:
        """A batch in offset order: `items` holds each message's event (`items_of`) or a Handled
        already (a message that is not an event, or one the worker rejects) -> what it settled
        into: each item as `settled` gives it, but each run of quiet events is settled in one
        native call (`quiet_run`: it stops, with nothing changed, at anything else, a table not
        loaded yet included, which `settled` then takes) and only counted (`SettledBatch.quiet`:
        applied, no outputs). So the messages, verdicts and tables are those of the events one by
        one (tests/app/test_shell_batches.py and the lockstep path `worker-batch` compare both)."""
        quiet, states, settled = self.quiet, self.states, self.settled
        batch = SettledBatch()
        add, changed = batch.add, batch.changed
        i, n = 0, len(items)
        while i < n:
            if quiet is not None:
                try:
                    stop, ran, untagged, _ = quiet(states, self.books, items, i)
                except Exception as e:
                    raise SettlingRaised(None, e) from e
                if ran:
                    if untagged:
                        self.tags.untagged += untagged
                    batch.quiet += ran
                    for k in range(i, stop):
                        changed[items[k].table_id] = None
                i = stop
                if i == n:
                    break
            item = items[i]
            if type(item) is not Handled:
                try:
                    item = settled(item)
                except Exception as e:
                    raise SettlingRaised(i, e) from e
            add(item)
            i += 1
        return batch

    @staticmethod
    def undecodable(value: bytes, error, topic: str, partition: int, offset: int,
                    reason: str | None = None, rejections: str = TOPIC_OF[EventRejected]) -> Handled:
        """The rejection of a message that is not an event, written with its raw bytes to
        `rejections`. `reason`: the decoder's (a ContractError's) or "undecodable"; the worker
        passes "internal_error" for a message whose settling raised (a bug)."""
        if reason is None:
            reason = error.reason if isinstance(error, ContractError) else "undecodable"
        rejection = undecodable_rejection(topic, partition, offset, reason, str(error))
        record = {
            "type": "EventRejected", "id": rejection.id, "table_id": "", "seq": 0, "ts": 0,
            "reason": rejection.reason, "message": str(error)[:1000], "event_json": None,
            "raw": bytes(value or b""), "topic": topic, "partition": partition, "offset": offset,
        }
        return Handled(UNDECODABLE, "", [rejection], [(rejections, b"", encode_output(record))], None)
