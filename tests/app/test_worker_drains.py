"""The worker settles each partition in a task of its own: an event waits for
its own partition's transaction in flight, never for a slow commit on another partition, and each
partition's batches still commit one after the other, in offset order. Pure: the consumer and
the producers are recording doubles (the real broker's version: tests/pipeline and tests/faults)."""
from __future__ import annotations

import asyncio
import contextlib

from craps_streams.app import worker as worker_module
from craps_streams.app.worker import SettlingWorker
from craps_streams.authenticity import KeyRing, TagCheck
from craps_streams.kafka.consumers import TopicPartition
from craps_streams.topics import Topics

TABLE_EVENTS, SETTLEMENTS, TABLE_STATE = Topics().table_events, Topics().settlements, Topics().table_state
from tests.app.batch_shell import OneByOne


class Message:
    def __init__(self, partition: int, offset: int):
        self.partition, self.offset, self.value, self.topic, self.key = partition, offset, b"{}", TABLE_EVENTS, b""


class Consumer:
    """Hands out the scripted fetches, then nothing; both partitions assigned at start."""

    def __init__(self, fetches: list[dict[int, list[int]]]):
        self.fetches = list(fetches)
        self.listener = None
        self.paused: set[int] = set()  # partitions being taken over: their records wait in the log

    def pause(self, tp):
        self.paused.add(tp.partition)

    def resume(self, tp):
        self.paused.discard(tp.partition)

    def subscribe(self, topics, listener):
        self.listener = listener

    async def start(self):
        await self.listener.on_partitions_assigned([TopicPartition(TABLE_EVENTS, p) for p in (0, 1)])

    async def stop(self):
        pass

    async def committed(self, tp):
        return None

    def seek(self, tp, offset):
        raise AssertionError(f"no rewind expected (partition {tp.partition} to {offset})")

    async def getmany(self, timeout_ms, max_records):
        await asyncio.sleep(0.001)
        if not self.fetches:
            await asyncio.sleep(timeout_ms / 1000)
            return {}
        fetch = {p: o for p, o in self.fetches[0].items() if p not in self.paused}
        held = {p: o for p, o in self.fetches[0].items() if p in self.paused}
        if held:  # the fetches after it wait too: each partition's records stay in order
            self.fetches[0] = held
        else:
            self.fetches.pop(0)
        return {TopicPartition(TABLE_EVENTS, p): [Message(p, o) for o in offsets] for p, offsets in fetch.items()}


class Producer:
    """A transactional producer recording each commit; partition 0's first commit waits for `gate`."""

    commits: list[tuple[int, list[int]]] = []
    takeover_aborts: list[tuple[int, int]] = []  # (partition, commits made before it)
    gate: asyncio.Event

    def __init__(self, transactional_id: str, *a, **k):
        self.partition = int(transactional_id.rsplit("-", 1)[1])
        self.offsets: list[int] = []
        self.first = True

    async def start(self):
        pass

    async def stop(self):
        pass

    @contextlib.asynccontextmanager
    async def transaction(self):
        self.offsets = []
        yield
        if self.partition == 0 and self.first:
            self.first = False
            await Producer.gate.wait()  # a slow commit (a retried verification, say)
        Producer.commits.append((self.partition, self.offsets))

    async def send(self, *a, **k):
        delivered = asyncio.get_running_loop().create_future()
        delivered.set_result(None)
        return delivered

    # The takeover's aborted transaction (craps_streams.kafka.producers.abort_hanging).
    async def begin_transaction(self):
        pass

    async def abort_transaction(self):
        Producer.takeover_aborts.append((self.partition, len(Producer.commits)))

    async def send_offsets_to_transaction(self, offsets, group_id):
        (tp, end), = offsets.items()
        if not hasattr(self, "batch_start"):  # the takeover's, aborted: no batch of its own
            return
        self.offsets = list(range(self.batch_start, end))

    def note_batch(self, messages):
        self.batch_start = messages[0].offset


class Shell(OneByOne):
    def __init__(self, *a, **k):
        self.states, self.books = {}, {}

    def handle(self, value, topic, partition, offset):
        class Handled:
            messages, state, table_id = [], None, None
        return Handled()


def run_worker(monkeypatch, fetches):
    Producer.commits = []
    Producer.takeover_aborts = []
    Producer.gate = asyncio.Event()
    monkeypatch.setattr(worker_module, "group_consumer", lambda *a, **k: Consumer(fetches))
    monkeypatch.setattr(worker_module, "transactional_producer", Producer)
    monkeypatch.setattr(worker_module, "recover_partition", lambda *a: ({}, 0.0))
    monkeypatch.setattr(worker_module, "SettlementShell", Shell)
    w = SettlingWorker(bootstrap="127.0.0.1:1", tags=TagCheck(KeyRing()))
    original = w._settle_batch

    async def settle(owner, tp, messages):
        owner.producer.note_batch(messages)
        await original(owner, tp, messages)

    w._settle_batch = settle
    seen_while_gated: list[list] = []

    async def scenario():
        task = asyncio.create_task(w.run())
        for _ in range(200):  # partition 1 commits everything while partition 0's first commit waits
            await asyncio.sleep(0.005)
            if sum(len(o) for p, o in Producer.commits if p == 1) == 3:
                break
        seen_while_gated.append(list(Producer.commits))
        Producer.gate.set()
        for _ in range(200):
            await asyncio.sleep(0.005)
            if sum(len(o) for p, o in Producer.commits if p == 0) == 4:
                break
        w.stopping.set()
        await task

    asyncio.run(scenario())
    return seen_while_gated[0], Producer.commits


def test_a_slow_commit_on_one_partition_does_not_hold_another(monkeypatch):
    fetches = [{0: [0, 1], 1: [0]}, {1: [1]}, {0: [2], 1: [2]}, {0: [3]}]
    while_gated, commits = run_worker(monkeypatch, fetches)
    # While partition 0's first transaction hangs, partition 1 commits all it was given.
    assert [p for p, _ in while_gated] == [1] * len(while_gated)
    assert [o for _, b in while_gated for o in b] == [0, 1, 2]
    # Partition 0: its batches commit in order, none lost or repeated; what arrived meanwhile
    # was queued and settled after the slow commit.
    p0 = [b for p, b in commits if p == 0]
    assert p0[0] == [0, 1]
    assert [o for b in p0 for o in b] == [0, 1, 2, 3]
    assert [o for p, b in commits if p == 1 for o in b] == [0, 1, 2]
    # Each partition was taken over once, its aborted transaction before any commit of the run.
    assert sorted(Producer.takeover_aborts) == [(0, 0), (1, 0)]


def test_a_drain_that_fails_stops_the_worker_even_after_its_partition_was_released():
    w = SettlingWorker(bootstrap="127.0.0.1:1", tags=TagCheck(KeyRing()))
    owner = worker_module.PartitionOwner(0, Producer("app-0"), Shell())
    w.owners[0] = owner

    async def failing_drain(owner, tp):
        del w.owners[owner.partition]  # released while it ran (a revocation, a fence)
        raise RuntimeError("a bug in the loop")

    w._drain = failing_drain

    async def scenario():
        w._start_drain(owner, TopicPartition(TABLE_EVENTS, 0))
        await asyncio.gather(owner.drain, return_exceptions=True)
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert not w.drains
    try:
        w._raise_from_drains()
    except RuntimeError as e:
        assert str(e) == "a bug in the loop"
    else:
        raise AssertionError("the drain's error was not raised")
    w._raise_from_drains()  # raised once, then gone


class FencedProducer(Producer):
    """A producer another worker fences during the takeover's aborted transaction: its offsets
    are refused, and aiokafka then refuses the abort too (its state machine's AssertionError)."""

    async def send_offsets_to_transaction(self, offsets, group_id):
        from aiokafka.errors import ProducerFenced

        raise ProducerFenced()

    async def abort_transaction(self):
        raise AssertionError("Invalid state transition TransactionState.FATAL_ERROR -> ABORTING_TRANSACTION")


def test_a_takeover_fenced_by_another_worker_leaves_the_partition_and_keeps_the_worker(monkeypatch):
    """Two workers starting together: one's takeover of a partition is fenced by the other's (a
    rebalance under way). The worker must neither stop (as it did when the abort's error hid the
    fence) nor take the partition straight back (which would fence the other in turn)."""
    monkeypatch.setattr(worker_module, "transactional_producer", FencedProducer)
    monkeypatch.setattr(worker_module, "recover_partition", lambda *a: ({}, 0.0))
    w = SettlingWorker(bootstrap="127.0.0.1:1", tags=TagCheck(KeyRing()))
    w.assigned = {0, 1}

    async def scenario():
        await taken_over(w)
        await taken_over(w)  # at once again: held off, not retaken

    asyncio.run(scenario())
    assert w.owners == {}
    assert set(w.fenced) == {0, 1} and all(g == w.generation for g, _ in w.fenced.values())


class CutOffProducer(Producer):
    """A producer whose transaction ends under the takeover's sends (aiokafka's IllegalOperation,
    "Can't send messages while not in transaction", seen in the broker-restart scenario)."""

    async def send(self, *a, **k):
        from aiokafka.errors import IllegalOperation

        raise IllegalOperation("Can't send messages while not in transaction")


def test_a_takeover_whose_transaction_ends_under_it_is_retried_and_keeps_the_worker(monkeypatch):
    monkeypatch.setattr(worker_module, "transactional_producer", CutOffProducer)
    monkeypatch.setattr(worker_module, "recover_partition", lambda *a: ({}, 0.0))
    monkeypatch.setattr(worker_module.asyncio, "sleep", _no_wait)
    w = SettlingWorker(bootstrap="127.0.0.1:1", tags=TagCheck(KeyRing()))
    w.assigned = {0}
    asyncio.run(taken_over(w))
    assert w.owners == {} and w.fenced == {}  # not owned, not held off: retried at the next round


async def _no_wait(seconds):
    return None


async def taken_over(w) -> None:
    """own_assigned, and the takeovers it started, to their end."""
    await w.own_assigned()
    await asyncio.gather(*w.takeovers.values())


def test_a_partition_marked_event_by_event_is_taken_over_without_quiet_runs(monkeypatch):
    class QuietShell(Shell):
        quiet = "the native run"

    monkeypatch.setattr(worker_module, "transactional_producer", Producer)
    monkeypatch.setattr(worker_module, "recover_partition", lambda *a: ({}, 0.0))
    monkeypatch.setattr(worker_module, "SettlementShell", QuietShell)
    w = SettlingWorker(bootstrap="127.0.0.1:1", tags=TagCheck(KeyRing()))
    w.consumer = Consumer([])
    w.assigned = {0, 1}
    w.event_by_event = {1}  # its last batch raised inside a quiet run
    Producer.takeover_aborts = []

    async def scenario():
        for p in (0, 1):
            await w.own(TopicPartition(TABLE_EVENTS, p))

    asyncio.run(scenario())
    assert w.owners[0].shell.quiet == "the native run"
    assert w.owners[1].shell.quiet is None
