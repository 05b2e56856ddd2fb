"""The simulated floor's dealers and dice readers, entering each table's events at its controller.

A real table's equipment sends an event without `seq`, `ts`, `key_id` and `tag` (its controller
gives them) over the controller's line protocol (docs/operating/controller.md); so do these. Each
event of the simulated history is entered when its time comes (`speed` times real time), with a
request id naming its table and simulated seq, so an entry re-sent after a lost answer is never
taken twice. The simulator's bad inputs (torn lines, malformed events) are entered too: the
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
    waits: list = field(default_factory=list)  # seconds from entering a line to its answer
    _seen: set = field(default_factory=set)


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


async def deal(records: Iterable, sockets: dict[str, str], speed: float = 1.0, default: str | None = None) -> Entered:
    """Enter every record at its table's controller (`sockets`: table id -> the controller's Unix
    socket), paced by the records' `ts` at `speed`; a record of no known table goes to `default`'s
    controller. -> what was acknowledged and refused."""
    entered = Entered()
    connections: dict[str, tuple] = {}
    readers = []

    async def answers(reader, sent: deque):
        while line := await reader.readline():
            entered.waits.append(time.monotonic() - sent.popleft())  # answers come in the lines' order
            answer = json.loads(line)
            if "seq" in answer:
                key = (answer["table_id"], answer["seq"])
                if key in entered._seen:
                    entered.repeated += 1
                else:
                    entered._seen.add(key)
                    entered.acknowledged[answer["table_id"]] += 1
            else:
                entered.refused[answer["refused"]] += 1

    async def connection(path: str):
        if path not in connections:
            reader, writer = await asyncio.open_unix_connection(path)
            connections[path] = (writer, deque())
            readers.append(asyncio.create_task(answers(reader, connections[path][1])))
        return connections[path]

    pace = Pace(speed)
    for record in records:
        await asyncio.sleep(pace.wait(record.get("ts") if type(record) is dict else None))
        table = record.get("table_id") if type(record) is dict else None
        path = sockets.get(table) if type(table) is str else None
        writer, sent = await connection(path or sockets[default or next(iter(sockets))])
        sent.append(time.monotonic())
        writer.write(entry_of(record))
        await writer.drain()
    for writer, _ in connections.values():
        writer.write_eof()
    await asyncio.gather(*readers)
    for writer, _ in connections.values():
        writer.close()
    return entered
