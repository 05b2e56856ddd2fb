"""The controller, put together: the group-commit writer that answers the table's equipment, the
sender that forwards the journal, and the inputs (HTTP, a Unix socket, stdin).

`Controller.submit` is what every input calls: the event is checked at once (a refusal answers
without waiting for anything), then queued for the writer. The writer takes everything queued,
numbers, stamps and signs each event (intake), journals the whole group in one commit (one fsync),
and only then answers each event with its seq. Events that arrive while a commit is being synced
wait for the next group: a burst costs one fsync per group, not one per event.
"""
from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from craps_streams.controller.clock import MonotoneClock
from craps_streams.controller.intake import Refused, admit, check, request_of
from craps_streams.controller.journal import Entry, Journal, JournalError, JournalFull
from craps_streams.controller.metrics import ControllerMetrics

log = logging.getLogger("craps_streams.controller")


@dataclass(frozen=True)
class ControllerConfig:
    tables: frozenset
    journal: Path
    signer: object  # a TableSigner holding the served tables' keys
    topic: str
    bootstrap: str | None = None
    http_host: str = "127.0.0.1"
    http_port: int | None = None
    socket: Path | None = None
    stdin: bool = False
    retention_s: float = 7 * 86400
    max_pages: int | None = None
    request_timeout_ms: int = 10_000


@dataclass(frozen=True, slots=True)
class Acknowledged:
    table_id: str
    seq: int
    ts: int

    def reply(self) -> dict:
        return {"table_id": self.table_id, "seq": self.seq, "ts": self.ts}


class Controller:
    """Takes events for `tables`, journals them at `journal_path`, answers with their seq."""

    def __init__(self, tables, journal_path, signer, metrics: ControllerMetrics | None = None,
                 max_pages: int | None = None, clock: MonotoneClock | None = None):
        self.tables = frozenset(tables)
        self.journal = Journal(journal_path, max_pages=max_pages)
        self.signer = signer
        self.metrics = metrics or ControllerMetrics()
        self.clock = clock or MonotoneClock(self.journal.last_ts())
        self.clock.last = max(self.clock.last, self.journal.last_ts())
        self.on_journaled = None  # called after each group commit (the sender's wake)
        self._pending: list = []
        self._kick = asyncio.Event()
        self._ex = ThreadPoolExecutor(1, thread_name_prefix="controller-journal")

    async def submit(self, record) -> Acknowledged:
        """Journal one event from the table: its seq once it is durable. Refused (with the reason)
        for an event the controller does not take, JournalFull / JournalError when the journal
        cannot take it: in every such case the event got no seq."""
        t0 = time.perf_counter()
        try:
            record, request_id = request_of(record)
            table_id = check(record, self.tables)
        except Refused as e:
            self.metrics.refusals.labels(e.reason).inc()
            raise
        future = asyncio.get_running_loop().create_future()
        self._pending.append((record, table_id, request_id, future, t0))
        self._kick.set()
        return await future

    async def run(self) -> None:
        """The writer: forever, one group commit per round."""
        try:
            while True:
                await self._kick.wait()
                self._kick.clear()
                group, self._pending = self._pending, []
                if group:
                    await self._commit(group)
        finally:
            self._ex.submit(self.journal.close)
            self._ex.shutdown(wait=True)

    async def _commit(self, group: list) -> None:
        entries, answers, seqs, requests = [], [], {}, {}
        held_before = self.clock.held
        for record, table_id, request_id, future, t0 in group:
            if request_id is not None:
                # A retry of an entry already taken: the same answer, no second event.
                self_group = requests.get((table_id, request_id))
                if self_group is not None:  # twice in this group: answered with the first, once durable
                    self.metrics.retries.inc()
                    answers.append((future, self_group, t0))
                    continue
                earlier = self.journal.answered(table_id, request_id)
                if earlier is not None:
                    self.metrics.retries.inc()
                    _settle(future, result=Acknowledged(table_id, *earlier))
                    continue
            seq = seqs.get(table_id, self.journal.last_seq(table_id)) + 1
            ts = self.clock.stamp()
            try:
                admitted = admit(record, seq, ts, self.signer)
            except Refused as e:
                self.metrics.refusals.labels(e.reason).inc()
                _settle(future, exception=e)
                continue
            seqs[table_id] = seq
            entries.append(Entry(table_id, seq, ts, admitted.key, admitted.value, request_id))
            ack = Acknowledged(table_id, seq, ts)
            if request_id is not None:
                requests[(table_id, request_id)] = ack
            answers.append((future, ack, t0))
        if self.clock.held > held_before:
            self.metrics.clock_held.inc(self.clock.held - held_before)
            log.warning("the host's clock is behind the last stamp: %d stamps held at %d", self.clock.held - held_before,
                        self.clock.last)
        if not entries:
            return
        started = time.perf_counter()
        try:
            await asyncio.get_running_loop().run_in_executor(self._ex, self.journal.append, entries)
        except JournalError as e:
            reason = "journal_full" if isinstance(e, JournalFull) else "journal_error"
            log.error("refusing %d events: %s", len(entries), e)
            self.metrics.refusals.labels(reason).inc(len(entries))
            for future, _, _ in answers:
                _settle(future, exception=e)
            return
        except BaseException:
            # The controller stopping (or failing) mid-commit: the commit may still complete in
            # its thread, so nobody is told either way; the writer stops, and with it the controller
            # (`serve`). Entered again with its request_id, an event that was journaled gets its seq.
            for future, _, _ in answers:
                _settle(future, exception=JournalError(
                    "the controller stopped while journaling the event: it may or may not be taken; enter it "
                    "again with the same request_id to be answered with its seq"))
            raise
        done = time.perf_counter()
        self.metrics.commit.observe(done - started)
        for future, ack, t0 in answers:
            self.metrics.acknowledged.labels(ack.table_id).inc()
            self.metrics.ack.observe(done - t0)
            _settle(future, result=ack)
        if self.on_journaled is not None:
            self.on_journaled()


def _settle(future: asyncio.Future, result=None, exception=None) -> None:
    if future.done():  # the input gave up waiting (its client went away): the event is journaled all the same
        return
    if exception is not None:
        future.set_exception(exception)
    else:
        future.set_result(result)


def refusal_of(e: Exception) -> tuple[str, str]:
    """(reason, message) of an event the controller did not take."""
    if isinstance(e, Refused):
        return e.reason, e.message
    if isinstance(e, JournalFull):
        return "journal_full", f"{e}; the event was NOT taken: enter it again once space is freed"
    return "journal_error", f"{e}; the event was NOT taken"


async def serve(config: ControllerConfig, ready=None) -> None:
    """Run a controller until cancelled: the writer, the sender and the configured inputs.
    `ready(info)` is called once the inputs listen."""
    from craps_streams.controller.http import start_http
    from craps_streams.controller.lines import serve_stdin, start_socket
    from craps_streams.controller.sender import Sender

    metrics = ControllerMetrics()
    controller = Controller(config.tables, config.journal, config.signer, metrics, config.max_pages)
    sender = Sender(config.journal, config.tables, config.topic, metrics, config.bootstrap, config.retention_s,
                    config.request_timeout_ms)
    controller.on_journaled = sender.wake
    tasks = [asyncio.create_task(controller.run(), name="writer"), asyncio.create_task(sender.run(), name="sender")]
    cleanups = []
    info = {"tables": sorted(config.tables), "journal": str(config.journal)}
    try:
        if config.http_port is not None:
            runner, port = await start_http(controller, sender, config.http_host, config.http_port)
            cleanups.append(runner.cleanup)
            info["http"] = f"http://{config.http_host}:{port}"
        if config.socket is not None:
            cleanups.append((await start_socket(controller, config.socket)).close)
            info["socket"] = str(config.socket)
        if config.stdin:
            tasks.append(asyncio.create_task(serve_stdin(controller), name="stdin"))
        log.info("controller up: %s", info)
        if ready is not None:
            ready(info)
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in done:
            if t.get_name() == "stdin" and t.exception() is None:
                # stdin closed: what it sent is journaled; wait until the sender has forwarded it.
                while (await asyncio.get_running_loop().run_in_executor(None, journal_depth, config.journal))[0]:
                    await asyncio.sleep(0.2)
                return
            t.result()
    finally:
        for cleanup in reversed(cleanups):
            await cleanup()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def journal_depth(path) -> tuple:
    """`Journal.depth` of the journal at `path`, on a connection of its own."""
    j = Journal(path, sync_full=False)
    try:
        return j.depth()
    finally:
        j.close()
