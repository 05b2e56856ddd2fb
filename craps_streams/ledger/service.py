"""The ledger's consume loop: read committed output records, turn them into rows, write each
batch with its partitions' positions, measure the lag.

The positions live in the ledger's database only (craps_streams/ledger/store.py): on every
assignment, and after any batch the database refused or failed, the reader goes back to them.
So whatever stops the loop (kill -9, the database restarted, a rebalance moving a partition to
another ledger) costs at most a re-read, never a row lost or written twice.

A record that is not a readable output (the worker writes only Avro outputs, so this is damage,
not traffic) is kept as a rejection row with its raw bytes and its coordinates, never dropped.
"""
from __future__ import annotations

import gc
import logging
import sys
import time
from dataclasses import dataclass
from functools import partial
from typing import Callable

from sqlalchemy.exc import DBAPIError

from craps_streams.codec import decode_event, decode_output
from craps_streams.codec.fastoutput import output_reader
from craps_streams.kafka.consumers import TRANSIENT, PositionedReader
from craps_streams.ledger.metrics import LedgerMetrics
from craps_streams.ledger.rows import OPENING_MARK, Row, rows_of
from craps_streams.ledger.store import Batch, Ledger, StaleBatch
from craps_streams.report.calendar import GamingCalendar

log = logging.getLogger("craps_streams.ledger")

UNREADABLE = "ledger_unreadable_output"
SWITCH_INTERVAL_S = 0.0005


@dataclass(frozen=True)
class LedgerSettings:
    topics: tuple[str, ...]  # the output topics to read (and the table-events topic, for its openings)
    group_id: str  # the group that shares their partitions among ledgers
    calendar: GamingCalendar
    instance: str = "1"  # this ledger's name in its group, the same across restarts
    bootstrap: str | None = None
    max_batch_records: int = 5000  # a poll's records at most
    write_polls: int = 4  # a write takes the polls already read, up to this many: a backlog, few commits
    poll_ms: int = 200
    lag_every_s: float = 1.0
    retry_after_s: float = 1.0
    events_topic: str | None = None  # the table-events topic among `topics`: only its openings make rows


def unreadable_row(topic: str, partition: int, offset: int, value: bytes, error: Exception) -> Row:
    return Row("rejections", {
        "id": f"{UNREADABLE}/{topic}/{partition}/{offset}", "table_id": "", "seq": 0, "ts": 0,
        "reason": UNREADABLE, "message": f"not a readable output record: {error}", "event_json": None,
        "raw": bytes(value or b""), "topic": topic, "partition": partition, "offset": offset,
        "source_partition": partition, "source_offset": offset})


def opening_rows(value: bytes, partition: int, offset: int) -> list[Row]:
    """The row of a table event that is an opening; none for any other event. An event that does
    not decode is the worker's to reject (its rejections topic keeps the raw bytes), so it makes
    no row here either."""
    if value is None or OPENING_MARK not in value:
        return []
    try:
        record = decode_event(value)
    except Exception:  # noqa: BLE001 - the worker's rejection row records it
        return []
    return rows_of(record, partition, offset, None) if record.get("type") == "TableOpened" else []


def decoded(records: list[tuple], calendar: GamingCalendar, events_topic: str | None = None,
            decode: Callable[[bytes], dict] = decode_output) -> list[tuple]:
    """One poll's records (topic, partition, offset, value[, timestamp_ms]) as (topic, partition,
    offset, rows). Of `events_topic` (the table events) only the openings are decoded; every other
    event makes no row. `decode`: `decode_output` or what gives the same records and errors
    (craps_streams/codec/fastoutput.py)."""
    made = []
    for topic, partition, offset, value, *_ in records:
        if topic == events_topic:
            rows = opening_rows(value, partition, offset)
        else:
            try:
                rows = rows_of(decode(value), partition, offset, calendar)
            except Exception as e:  # noqa: BLE001 - any damage is kept as a row, never dropped
                rows = [unreadable_row(topic, partition, offset, value, e)]
        made.append((topic, partition, offset, rows))
    return made


def batch_of_rows(made: list[tuple], after: dict[tuple[str, int], int], known: dict[tuple[str, int], int]) -> Batch:
    """Decoded records (`decoded`) as a batch: each partition's span from its known position (when
    the ledger has one) to the reader's position after the poll. A record that made no row moves
    the position all the same, as do the records the reader did not hand on (a partition may be
    in `after` with none of its records here)."""
    batch = Batch()
    run: list = []  # one partition's consecutive records (a poll gives each partition's together)
    for topic, partition, offset, rows in made:
        if run and (run[0], run[1]) == (topic, partition) and offset > run[3]:
            run[3] = offset
            run[4].extend(rows)
            continue
        if run:
            batch.extend_run(*run)
        key = (topic, partition)
        if key in known:
            batch.begin(topic, partition, known[key])
        run = [topic, partition, offset, offset, list(rows)]
    if run:
        batch.extend_run(*run)
    for key, position in after.items():
        if key in known:  # a partition none of whose records made it here (the reader's `holding`)
            batch.begin(*key, known[key])
        batch.advance(*key, position)
    return batch


def batch_of(records: list[tuple], after: dict[tuple[str, int], int], known: dict[tuple[str, int], int],
             calendar: GamingCalendar, events_topic: str | None = None) -> Batch:
    """One poll's records (topic, partition, offset, value[, timestamp_ms]) as a batch (`decoded`,
    then `batch_of_rows`)."""
    return batch_of_rows(decoded(records, calendar, events_topic), after, known)


class LedgerService:
    def __init__(self, ledger: Ledger, settings: LedgerSettings, metrics: LedgerMetrics | None = None,
                 clock: Callable[[], float] = time.time):
        self.ledger = ledger
        self.settings = settings
        self.metrics = metrics or LedgerMetrics()
        self.clock = clock
        self.known: dict[tuple[str, int], int] = {}
        # Each partition's newest record in the database, by its Kafka timestamp: how far behind
        # the ledger is in seconds (craps_ledger_behind_seconds).
        self.newest_ms: dict[tuple[str, int], int] = {}

    def _positions(self) -> dict[tuple[str, int], int]:
        self.known = self.ledger.positions()
        return self.known

    def run(self, stop: Callable[[], bool]) -> None:
        s = self.settings
        self.ledger.migrate()
        self.ledger.bind_calendar(s.calendar)
        reader = PositionedReader(list(s.topics), s.group_id, self._positions, instance=s.instance,
                                  bootstrap=s.bootstrap, max_poll_records=s.max_batch_records,
                                  read_ahead=s.write_polls,
                                  transform=partial(decoded, calendar=s.calendar, events_topic=s.events_topic,
                                                    decode=output_reader()),
                                  # of the table events only the openings make rows: the rest, most
                                  # of what the ledger reads, move the positions undecoded
                                  holding={s.events_topic: OPENING_MARK} if s.events_topic else None)
        # A batch makes thousands of short-lived objects (records, rows, parameters), which set off
        # the collector's young generation every 700 and its full pass over every module and
        # SQLAlchemy's caches, a tenth of the ledger's CPU: what the start made is set aside
        # (gc.freeze), and the young generation is collected less often (a batch holds no cycles
        # worth collecting sooner; its memory is bounded by max_batch_records x write_polls).
        gc.freeze()
        gc.set_threshold(50_000, 20, 20)
        # The reader's thread decodes the next records while this one writes. The database drivers
        # let go of the interpreter at every row's step (sqlite3) and every wait on the server
        # (psycopg); taking it back waits for the other thread's time slice, 5 ms by default, which
        # made the writes wait on the decoding: slices of 0.5 ms keep the write going.
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        next_lag = 0.0
        try:
            while not stop():
                try:
                    made, after, newest_ms = reader.poll(s.poll_ms)
                except DBAPIError as e:  # the positions of partitions just assigned, unread: they wait, paused
                    log.warning("ledger: the database is away for the positions of an assignment (%s)", e.orig)
                    self.metrics.db_errors.inc()
                    time.sleep(s.retry_after_s)
                    continue
                except TRANSIENT as e:  # nothing read is lost: the positions are the database's
                    log.warning("ledger: no records read (%s); reading again", e)
                    time.sleep(s.retry_after_s)
                    continue
                if after:  # records read (perhaps none handed on: their positions move all the same)
                    made, after, newest_ms = self._with_ready(reader, made, after, newest_ms)
                    try:
                        batch = batch_of_rows(made, after, self.known)
                    except ValueError as e:  # records from behind the ledger's positions: read again from them
                        log.warning("ledger: %s; reading again from the database's positions", e)
                        reader.reseek()
                        continue
                    self._write(reader, batch, newest_ms)
                if time.monotonic() >= next_lag:
                    next_lag = time.monotonic() + s.lag_every_s
                    try:
                        ends = reader.end_offsets()
                    except TRANSIENT as e:
                        # A slow or away broker costs a measurement, never the ledger: the lag's
                        # timestamp stays old, which the CrapsLedgerStalled alert watches.
                        log.warning("ledger: the partitions' end offsets not read (%s); measuring again later", e)
                        continue
                    self.metrics.positions(self.known, ends, self.clock(), self.newest_ms)
        finally:
            reader.close()

    def _with_ready(self, reader: PositionedReader, made: list, after: dict, newest_ms: dict) -> tuple:
        """The polled records and those of the polls already read after them, up to `write_polls`
        polls: one batch, one transaction. Behind on a backlog, the ledger commits once for
        several polls (the commit's wait, the books' statements and their rows shared by more
        settlements); caught up, a poll finds none waiting and is written alone, as soon as read."""
        for _ in range(self.settings.write_polls - 1):
            ready = reader.poll_ready()
            if ready is None:
                break
            more, more_after, more_newest = ready
            made = made + more
            after = {**after, **more_after}
            newest_ms = {**newest_ms, **{k: max(v, newest_ms.get(k, v)) for k, v in more_newest.items()}}
        return made, after, newest_ms

    def _write(self, reader: PositionedReader, batch: Batch, newest_ms: dict[tuple[str, int], int]) -> None:
        started = time.perf_counter()
        try:
            written = self.ledger.write(batch)
        except StaleBatch as e:
            log.warning("ledger: %s; reading again from the database's positions", e)
            self.metrics.stale.inc()
            reader.reseek()
            return
        except DBAPIError as e:  # the database restarted or went away: nothing of the batch is in
            log.warning("ledger: the database failed a batch (%s); retrying from its positions", e.orig)
            self.metrics.db_errors.inc()
            time.sleep(self.settings.retry_after_s)
            self._reseek_when_reachable(reader)
            return
        self.metrics.written(written, time.perf_counter() - started)
        self.known.update({key: end for key, (_, end) in batch.spans.items()})
        self.newest_ms.update(newest_ms)
        self.metrics.positions(self.known)

    def _reseek_when_reachable(self, reader: PositionedReader) -> None:
        while True:
            try:
                reader.reseek()
                return
            except DBAPIError as e:
                log.warning("ledger: the database is still away (%s)", e.orig)
                time.sleep(self.settings.retry_after_s)
