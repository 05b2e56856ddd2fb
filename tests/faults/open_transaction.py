"""A transaction left open: a worker's transactional producer writes one record to a partition and
never commits, as a worker that hangs inside a transaction. Prints "open" once the record is written,
then waits to be killed.

    python -m tests.faults.open_transaction TRANSACTIONAL_ID TOPIC PARTITION TIMEOUT_MS
"""
from __future__ import annotations

import asyncio
import sys

from craps_streams.kafka.producers import transactional_producer


async def leave_open(transactional_id: str, topic: str, partition: int, timeout_ms: int) -> None:
    producer = transactional_producer(transactional_id, timeout_ms)
    await producer.start()
    await producer.begin_transaction()
    await (await producer.send(topic, b"left open", key=b"~open", partition=partition))
    print("open", flush=True)
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(leave_open(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
