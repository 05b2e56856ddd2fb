"""The simulated floor's dealers and dice readers, entering each table's events at its controller.

A real table's equipment sends an event without `seq`, `ts`, `key_id` and `tag` (its controller
gives them) over the controller's line protocol (docs/operating/controller.md); so do these. Each
event of the simulated history is entered when its time comes (`speed` times real time), with a
request id naming its table and simulated seq, so an entry re-sent after a lost answer is never
taken twice: a controller killed and started again is waited for, and the entries it had not
answered are entered again with their request ids. The simulator's bad inputs (torn lines, malformed events) are entered too: the
controller refuses them at the input, with the reason, and they never reach the topic.
"""
from __future__ import annotations

import asyncio
import json
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Iterable

CONTROLLER_FIELDS = ("seq", "ts", "key_id", "tag")


@dataclass
class Entered:
    """What the dealers entered: events answered with a seq, per table (an entry entered twice, as
    the simulator's re-sends are, answered with the seq it already had, counted once, and in
    `repeated`), and refusals by reason."""
    acknowledged: Counter = field(default_factory=Counter)
    refused: Counter = field(default_factory=Counter)
    repeated: int = 0
    reconnects: int = 0  # times a controller went away and the dealers connected again
    reentered: int = 0  # entries entered again because their answer never came
    waits: list = field(default_factory=list)  # seconds from entering a line to its answer
    _seen: set = field(default_factory=set)

    def count(self, answer: dict) -> None:
        if "seq" in answer:
            key = (answer["table_id"], answer["seq"])
            if key in self._seen:
                self.repeated += 1
            else:
                self._seen.add(key)
                self.acknowledged[answer["table_id"]] += 1
        else:
            self.refused[answer["refused"]] += 1


class Pace:
    """When the dealers enter each record: the simulated floor's time, `speed` times real time,
    from the first stamped record on."""

    def __init__(self, speed: float, clock=time.monotonic):
        self.speed = speed
        self.clock = clock
        self.start: tuple | None = None  # (clock, ts) of the first stamped record

    def wait(self, ts) -> float:
        """Seconds to wait before entering a record stamped `ts` (0 for an unstamped one)."""
        if type(ts) is not int:
            return 0.0
        if self.start is None:
            self.start = (self.clock(), ts)
        return max(0.0, (ts - self.start[1]) / 1000.0 / self.speed - (self.clock() - self.start[0]))


def entry_of(record) -> bytes:
    """The line a dealer enters for one simulated record: the event without the controller's
    fields, with a request id; a torn line as it is."""
    if type(record) is not dict:
        return str(record).replace("\n", " ").encode("utf-8", "replace") + b"\n"
    entry = {k: v for k, v in record.items() if k not in CONTROLLER_FIELDS}
    if type(record.get("table_id")) is str and type(record.get("seq")) is int:
        entry["request_id"] = f"sim.{record['table_id'][:32]}.{record['seq']}"
    return json.dumps(entry, separators=(",", ":")).encode() + b"\n"


RETRIED = ("journal_error",)  # answers that say the entry may not be taken: entered again, as the controller asks
RETRY_S = 0.2


class _Link:
    """The dealers' connection to one controller's socket. The entries written and not yet answered
    are kept, in order; when the connection ends before their answers (the controller was killed,
    or stopped, or answered that it could not journal an entry), the dealers connect again, waiting
    up to `patience_s` for the controller to be back, and enter those entries again in the same
    order with the same request ids: the controller answers an entry it had journaled with the seq
    it already has, so nothing is entered twice and nothing is lost."""

    def __init__(self, path: str, entered: Entered, patience_s: float):
        self.path = path
        self.entered = entered
        self.patience_s = patience_s
        self.pending: deque = deque()  # (when entered, the line)
        self.writer = None
        self.opened = 0
        self.reading = None
        self.closing = False
        self.failed: BaseException | None = None  # the controller did not come back
        self._reconnecting: set = set()  # held: the event loop keeps only weak references to tasks
        self.lock = asyncio.Lock()

    async def _open(self) -> None:
        deadline = time.monotonic() + self.patience_s
        while True:
            try:
                reader, writer = await asyncio.open_unix_connection(self.path)
                break
            except OSError:  # not listening (yet, or again): the controller is starting
                if time.monotonic() > deadline:
                    raise ConnectionError(f"the controller at {self.path} did not come back in {self.patience_s:g} s") from None
                await asyncio.sleep(RETRY_S)
        if self.opened:
            self.entered.reconnects += 1
            self.entered.reentered += len(self.pending)
        self.opened += 1
        self.writer = writer
        try:
            for _, line in self.pending:
                writer.write(line)
            if self.closing:
                writer.write_eof()
            await writer.drain()
        except OSError:
            pass  # gone again: the new reader sees the end and connects once more
        self.reading = asyncio.create_task(self._answers(reader, writer))

    def _again(self, old) -> None:
        task = asyncio.create_task(self._reconnect(old))
        self._reconnecting.add(task)
        task.add_done_callback(self._reconnecting.discard)

    async def _reconnect(self, old) -> None:
        async with self.lock:
            if self.writer is not old:  # already connected again
                return
            old.close()
            await asyncio.sleep(RETRY_S)
            try:
                await self._open()
            except ConnectionError as e:
                self.failed = e

    async def _answers(self, reader, writer) -> None:
        while True:
            try:
                line = await reader.readline()
            except OSError:
                line = b""
            if not line:
                writer.close()  # entries from here on wait in `pending` for the next connection
                if self.pending:  # ended before the answers: the controller went away
                    self._again(writer)
                elif self.writer is writer:  # nothing awaited: the next entry connects again
                    self.writer = None
                return
            answer = json.loads(line)
            if answer.get("refused") in RETRIED:
                writer.close()
                self._again(writer)  # this entry and the ones after it, again
                return
            sent, _ = self.pending.popleft()  # answers come in the lines' order
            self.entered.waits.append(time.monotonic() - sent)
            self.entered.count(answer)

    async def send(self, line: bytes) -> None:
        async with self.lock:
            if self.writer is None:
                await self._open()
            self.pending.append((time.monotonic(), line))
            if self.writer.is_closing():
                return  # the connection ended: the reconnection enters it with the other pending lines
            try:
                self.writer.write(line)
                await self.writer.drain()
            except OSError:
                pass  # the reader sees the end and enters the pending lines again

    async def finish(self) -> None:
        """No more entries: wait for every answer."""
        async with self.lock:
            self.closing = True
            if self.writer is not None:
                try:
                    self.writer.write_eof()
                except OSError:
                    pass
        while self.pending or (self.reading is not None and not self.reading.done()):
            if self.failed is not None:
                raise self.failed
            await asyncio.sleep(0.05)
        if self.writer is not None:
            self.writer.close()


async def deal(records: Iterable, sockets: dict[str, str], speed: float = 1.0, default: str | None = None,
               patience_s: float = 120.0) -> Entered:
    """Enter every record at its table's controller (`sockets`: table id -> the controller's Unix
    socket), paced by the records' `ts` at `speed`; a record of no known table goes to `default`'s
    controller. A controller that goes away is waited for, up to `patience_s`, and the entries it
    had not answered entered again (`_Link`). -> what was acknowledged and refused."""
    entered = Entered()
    links: dict[str, _Link] = {}
    pace = Pace(speed)
    for record in records:
        await asyncio.sleep(pace.wait(record.get("ts") if type(record) is dict else None))
        table = record.get("table_id") if type(record) is dict else None
        path = sockets.get(table) if type(table) is str else None
        path = path or sockets[default or next(iter(sockets))]
        link = links.get(path) or links.setdefault(path, _Link(path, entered, patience_s))
        await link.send(entry_of(record))
    await asyncio.gather(*(link.finish() for link in links.values()))
    return entered
