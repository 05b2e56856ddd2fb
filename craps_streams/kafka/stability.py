"""How far the records a read_committed reader may see lag behind what was written: per output
partition, the high watermark (every record written) and the last stable offset (LSO: below it,
every transaction has ended; read_committed readers stop there).

While the worker settles, the two part only for the few milliseconds of a transaction in flight.
An LSO that stays put while records pile up above it means a transaction the broker never ended
(a hanging transaction, which KIP-890 exists to prevent, or a broker whose marker writes stalled):
every reader of the floor (dashboards, the
floor view, the archive, the audit) stops there while the worker's own commits still succeed.
Nothing is lost or paid twice, but nobody sees the floor. This module only measures; the watch
that turns the measurements into a stall's age is craps_streams/app/stability.py.
"""
from __future__ import annotations

import uuid
from typing import Iterable

from aiokafka import AIOKafkaConsumer, TopicPartition

from craps_streams.kafka.settings import client_settings


class StableOffsets:
    """Two group-less consumers acting for `role`: one answers the end offsets as written (high
    watermarks), the other as read_committed sees them (last stable offsets). ListOffsets needs
    Describe on the topic, which the worker's Write on its output topics implies."""

    def __init__(self, role: str = "worker", bootstrap: str | None = None):
        tag = uuid.uuid4().hex[:6]
        self._written = AIOKafkaConsumer(**client_settings(role, bootstrap), group_id=None,
                                         client_id=f"craps-{role}-hw-{tag}", enable_auto_commit=False,
                                         isolation_level="read_uncommitted")
        self._stable = AIOKafkaConsumer(**client_settings(role, bootstrap), group_id=None,
                                        client_id=f"craps-{role}-lso-{tag}", enable_auto_commit=False,
                                        isolation_level="read_committed")

    async def start(self) -> None:
        await self._written.start()
        await self._stable.start()

    async def stop(self) -> None:
        await self._written.stop()
        await self._stable.stop()

    async def offsets(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        """(topic, partition) -> (high watermark, last stable offset). The LSO is asked after
        the high watermark: a transaction ending in between can put it past that watermark, which
        reads as nothing waiting (never as a stall)."""
        tps = [TopicPartition(t, p) for t, p in partitions]
        if not tps:
            return {}
        high = await self._written.end_offsets(tps)
        stable = await self._stable.end_offsets(tps)
        return {(tp.topic, tp.partition): (high[tp], stable[tp]) for tp in tps}
