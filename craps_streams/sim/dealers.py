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
from collections import Counter
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
    _seen: set = field(default_factory=set)


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

    async def answers(reader):
        while line := await reader.readline():
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
            connections[path] = writer
            readers.append(asyncio.create_task(answers(reader)))
        return connections[path]

    wall0 = ts0 = None
    for record in records:
        ts = record.get("ts") if type(record) is dict else None
        if type(ts) is int:
            if ts0 is None:
                wall0, ts0 = time.monotonic(), ts
            delay = (ts - ts0) / 1000.0 / speed - (time.monotonic() - wall0)
            if delay > 0:
                await asyncio.sleep(delay)
        table = record.get("table_id") if type(record) is dict else None
        path = sockets.get(table) if type(table) is str else None
        writer = await connection(path or sockets[default or next(iter(sockets))])
        writer.write(entry_of(record))
        await writer.drain()
    for writer in connections.values():
        writer.write_eof()
    await asyncio.gather(*readers)
    for writer in connections.values():
        writer.close()
    return entered
