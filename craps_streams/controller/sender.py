"""Store and forward: the journal's held events to the table-events topic, in journal order,
through the Kafka adapter's idempotent producer (acks=all); each group the broker acknowledged is
marked sent in the journal.

A group the broker did not acknowledge (away, cut off, a timeout) is sent again from its first
event, by a fresh producer once the broker answers: while it is away the table keeps working and
the journal grows; when it is back the journal drains in order. Anything that reaches the topic
twice (acknowledged by the broker but not yet marked when the controller died, or a re-send) is a
duplicate the worker counts and drops by its seq (craps_streams/rules/sequence.py).
"""
from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

from craps_streams.controller.journal import Journal
from craps_streams.controller.metrics import ControllerMetrics
from craps_streams.kafka.producers import DeliveryError, deliver, start_producer, table_producer
from craps_streams.kafka.security import SecurityConfigError

log = logging.getLogger("craps_streams.controller.sender")

GROUP = 1000  # events per send: at most this many in flight before the journal is marked
GAUGE_EVERY_S = 1.0
PURGE_EVERY_S = 60.0


class Sender:
    """Forwards `journal_path`'s held events to `topic`. It has a journal connection of its own,
    whose marks are committed without their own fsync (synchronous=NORMAL): a mark lost in a power
    cut only sends its events again, a duplicate the worker drops; the writer's next commit syncs
    the WAL with the marks in it."""

    def __init__(self, journal_path, tables, topic: str, metrics: ControllerMetrics, bootstrap: str | None = None,
                 retention_s: float = 7 * 86400, request_timeout_ms: int = 10_000, backoff_max_s: float = 5.0):
        self.journal = Journal(journal_path, sync_full=False)
        self.tables = tuple(sorted(tables))
        self.topic = topic
        self.metrics = metrics
        self.bootstrap = bootstrap
        self.retention_s = retention_s
        self.request_timeout_ms = request_timeout_ms
        self.backoff_max_s = backoff_max_s
        self.held: dict = {}  # Journal.held(), refreshed every GAUGE_EVERY_S
        self.connected = False
        self._wake = asyncio.Event()
        self._ex = ThreadPoolExecutor(1, thread_name_prefix="controller-sender")

    def wake(self) -> None:
        """New events were journaled: send them now rather than at the next poll."""
        self._wake.set()

    async def _db(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self._ex, fn, *args)

    async def resend(self, table_id: str, from_seq: int, to_seq: int) -> tuple[int, list[int]]:
        """`Journal.resend` on the sender's connection, then send them."""
        marked = await self._db(self.journal.resend, table_id, from_seq, to_seq)
        self.wake()
        return marked

    def _link(self, up: bool) -> None:
        self.connected = up
        self.metrics.broker.set(1 if up else 0)

    async def _watch(self) -> None:
        """The held events' gauges every GAUGE_EVERY_S and the retention's purge every
        PURGE_EVERY_S, whatever the sender is waiting for (a broker away for minutes)."""
        purged_at = 0.0
        while True:
            try:
                self.held = await self._db(self.journal.held)
                self.metrics.show_held(self.tables, self.held, time.time_ns())
                if time.monotonic() - purged_at >= PURGE_EVERY_S:
                    purged_at = time.monotonic()
                    n = await self._db(self.journal.purge_sent, time.time_ns() - int(self.retention_s * 1e9))
                    if n:
                        log.info("purged %d sent events older than the retention (%.0f s)", n, self.retention_s)
            except sqlite3.Error as e:  # a full disk refuses even a delete's WAL frames: try again later
                log.error("the journal's gauges or purge failed: %s", e)
            await asyncio.sleep(GAUGE_EVERY_S)

    async def run(self) -> None:
        producer, backoff = None, 0.1
        unmarked: list[int] = []  # acknowledged by the broker, not yet marked in the journal
        watch = asyncio.create_task(self._watch())
        try:
            while True:
                if unmarked:
                    try:
                        await self._db(self.journal.mark_sent, unmarked)
                    except sqlite3.Error as e:
                        # A full disk refuses the marks' WAL frames too: sending more now would only
                        # send this group again and again. Wait, and mark it when there is room.
                        log.error("cannot mark %d forwarded events in the journal (%s); trying again", len(unmarked), e)
                        await asyncio.sleep(1.0)
                        continue
                    self.metrics.forwarded.inc(len(unmarked))
                    unmarked = []
                self._wake.clear()  # before the read: a commit after it wakes the wait below at once
                group = await self._db(self.journal.unsent, GROUP)
                if not group:
                    # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow the
                    # controller's stop (a cancel landing as the wake fires), and this loop would
                    # then run on forever.
                    try:
                        async with asyncio.timeout(0.5):
                            await self._wake.wait()
                    except TimeoutError:
                        pass
                    continue
                try:
                    if producer is None:
                        producer = table_producer(self.bootstrap, self.request_timeout_ms)
                        await start_producer(producer)
                        self._link(True)
                        log.info("connected to the broker: forwarding %d+ held events", len(group))
                    await deliver(producer, self.topic, [(h.key, h.value) for h in group])
                except (DeliveryError, SecurityConfigError) as e:  # the login's config: fixed while the table works on
                    self._link(False)
                    held, oldest = await self._db(self.journal.depth)
                    log.warning("events held at the table: %d, oldest %.0f s (%s); trying again in %.1f s", held,
                                (time.time_ns() - (oldest or time.time_ns())) / 1e9, e, backoff)
                    if producer is not None:
                        await _stopped(producer)
                    producer = None
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, self.backoff_max_s)
                    continue
                backoff = 0.1
                unmarked = [h.id for h in group]
        finally:
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
            if producer is not None:
                await _stopped(producer)
            self._link(False)
            self._ex.submit(self.journal.close)
            self._ex.shutdown(wait=True)


async def _stopped(producer) -> None:
    try:
        await asyncio.wait_for(producer.stop(), 5)
    except Exception as e:  # noqa: BLE001 - a producer that cannot stop cleanly is dropped all the same
        log.debug("producer stop: %r", e)
