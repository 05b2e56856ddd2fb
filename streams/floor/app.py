"""The floor view on faust-streaming: agents fold the committed outputs and the `table-state`
changelog into Faust tables keyed by table id, and a web server shows them (streams/floor/web.py).

    craps-streams floor [--port 6070] [--instance 1]
    faust -A streams.floor.app worker -l info          # the same, the Faust way

Every instance is a whole replica of the floor: its Faust app id (= consumer group) carries its
instance name (CRAPS_FLOOR_INSTANCE), so it reads every partition and any instance serves every
table, whichever settling worker owns it (docs/operating/index.md, the floor view). Delivery is at-least-once; the
folds (streams/floor/folding.py) ignore what they already folded, by offset per table.

The consumers read committed records only: faust-streaming turns read_committed on only for its
own exactly_once mode (faust/transport/drivers/aiokafka.py, `_create_worker_consumer`), which the
view does not want (it writes no outputs); ReadCommittedTransport sets it for this app.

Environment: CRAPS_KAFKA_BOOTSTRAP, CRAPS_TOPIC_PREFIX, CRAPS_APP_ID (the floor's; the view's app
id is "<it>-floor-<instance>"), CRAPS_FLOOR_INSTANCE (default "1"), CRAPS_FLOOR_PORT (6070),
CRAPS_WEB_HOST (127.0.0.1), CRAPS_WEB_CONFIG (TLS and basic auth, streams/app/web_security.py),
CRAPS_FLOOR_DATADIR (Faust's data dir; default a temp dir: the tables live in memory and are
rebuilt from their changelogs).
"""
from __future__ import annotations

import asyncio
import logging
import os
import tempfile

import faust
from faust.transport.drivers import aiokafka as faust_aiokafka

from streams.app.web_security import start_site, web_config_from_env, web_host
from streams.codec import CodecError, decode_output
from streams.floor import folding
from streams.floor.broker import faust_broker_settings, view_client_settings
from streams.floor.hub import ChangeHub
from streams.floor.web import make_floor_web
from streams.kafka.topics import create_topics
from streams.topics import LAYOUT_MARKERS, PARTITIONS, SETTLEMENTS, SURVEILLANCE, TABLE_STATE, TopicSpec, replication_factor

log = logging.getLogger("craps.floor")


class _ReadCommittedThread(faust_aiokafka.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport):
        consumer = super()._create_worker_consumer(transport)
        # aiokafka reads it at start() (consumer.py: the Fetcher gets self._isolation_level).
        consumer._isolation_level = "read_committed"
        return consumer


class _ReadCommittedConsumer(faust_aiokafka.Consumer):
    def _new_consumer_thread(self):
        return _ReadCommittedThread(self, loop=self.loop, beacon=self.beacon)


class ReadCommittedTransport(faust_aiokafka.Transport):
    Consumer = _ReadCommittedConsumer


class FloorApp(faust.App):
    def _new_transport(self):
        return ReadCommittedTransport(self.conf.broker_consumer, self)

    async def on_first_start(self) -> None:
        await super().on_first_start()
        # The tables' changelog topics exist before the consumer subscribes: created by Faust at
        # its own start, they can be missing from the consumer's first metadata, and the first
        # write to a table then fails Faust's partition check (PartitionsMismatch, "0 partitions")
        # and crashes the agent.
        specs = {t.changelog_topic.get_topic_name(): TopicSpec(t.changelog_topic.get_topic_name(), PARTITIONS,
                                                                {"cleanup.policy": "compact"})
                 for t in self.tables.values()}
        try:
            await asyncio.to_thread(create_topics, view_client_settings()["bootstrap_servers"], specs)
        except Exception as e:  # e.g. no admin rights here: Faust creates them itself, a moment later
            log.warning("could not create the tables' changelog topics beforehand: %r", e)


def instance_name() -> str:
    return os.environ.get("CRAPS_FLOOR_INSTANCE") or "1"


def view_app_id() -> str:
    return f"{os.environ.get('CRAPS_APP_ID') or 'craps-streams'}-floor-{instance_name()}"


def make_app() -> FloorApp:
    datadir = os.environ.get("CRAPS_FLOOR_DATADIR") or tempfile.mkdtemp(prefix="craps-floor-")
    return FloorApp(
        view_app_id(),
        **faust_broker_settings(view_client_settings()),
        store="memory://",
        datadir=datadir,
        web_enabled=False,  # the pages are served by streams/floor/web.py (CSP, TLS, basic auth)
        processing_guarantee="at_least_once",
        consumer_auto_offset_reset="earliest",
        topic_partitions=PARTITIONS,
        topic_replication_factor=replication_factor(),
        broker_commit_interval=1.0,
        # A restarted instance rejoins its own group: the dead member's session must end first.
        broker_session_timeout=int(os.environ.get("CRAPS_FLOOR_SESSION_TIMEOUT_MS") or 10_000) / 1000,
        broker_heartbeat_interval=int(os.environ.get("CRAPS_FLOOR_SESSION_TIMEOUT_MS") or 10_000) / 5000,
        table_standby_replicas=0,
        producer_linger=0.005,
    )


app = make_app()
hub = ChangeHub()


def _source(name: str):
    return app.topic(name, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw",
                     partitions=PARTITIONS)


def _table(name: str):
    # No key or value type: plain JSON (the app's default serializer), read back as dicts.
    return app.Table(name, default=None, partitions=PARTITIONS)


shooters = _table("shooters")
settlement_books = _table("settlements")
layouts = _table("layouts")
alert_books = _table("alerts")


BATCH = 500  # records folded per batch at most
YIELD_EVERY = 25  # records folded between two yields to the event loop (the pages share it)
BATCH_WITHIN_S = 0.5  # and no longer a wait than this for a batch to fill: bounds the added lag, and
# sets how often a busy table's Faust changelog is written (the changelog producer is the view's bottleneck)


def _decoded(event) -> dict | None:
    try:
        return decode_output(event.value)
    except CodecError as e:  # never stop the view for a record it cannot read
        m = event.message
        log.warning("undecodable record at %s/%s/%s: %s", m.topic, m.partition, m.offset, e)
        return None


async def _store(table, partition: int, key: str, value: dict) -> None:
    """table[key] = value, its changelog record on `partition`: the partition of the key's source
    records (Table.__setitem__ would take the stream's current event, the last of a batch).

    The record is handed to the producer directly rather than through Faust's ProducerBuffer
    (Table.__setitem__ -> send_soon), which publishes one message at a time: measured here, that
    buffer fell minutes behind at 50 tables at 20x, and Faust's commit waits for it to drain.
    Faust's commit still flushes the producer before it commits the offsets (at-least-once)."""
    await table.changelog_topic.send(key=key, value=value, partition=partition)
    table.data[key] = value
    hub.changed(key)


async def _fold_batches(stream, table, fold, record_of) -> None:
    """Fold each batch of events into the table, then store each changed table once: a burst of
    records for one table is one changelog record and one push."""
    async for events in stream.take_events(BATCH, within=BATCH_WITHIN_S):
        changed: dict[str, tuple[int, dict]] = {}
        for i, event in enumerate(events, 1):
            if i % YIELD_EVERY == 0:
                await asyncio.sleep(0)
            keyed = record_of(event)
            if keyed is None:
                continue
            key, record = keyed
            current = changed[key][1] if key in changed else table.get(key)
            new = fold(current, event.message.offset, record)
            if new is not None:
                changed[key] = (event.message.partition, new)
        for key, (partition, value) in changed.items():
            await _store(table, partition, key, value)


def _output_of(event):
    record = _decoded(event)
    return (record["table_id"], record) if record is not None and record.get("table_id") else None


def _last_states(events):
    """The last state record of each table in a batch: a state record is a whole snapshot, so the
    ones before it in the same batch change nothing the view keeps but a point of the series."""
    last = {}
    for event in events:
        if event.key is not None and event.value is not None:  # a tombstone forgets nothing here
            last[event.key] = event
    return list(last.values())


@app.agent(_source(TABLE_STATE))
async def fold_table_states(stream):
    async for events in stream.take_events(BATCH, within=BATCH_WITHIN_S):
        for i, event in enumerate(_last_states(events), 1):
            if i % YIELD_EVERY == 0:
                await asyncio.sleep(0)  # a state fold takes about a millisecond
            key = event.key.decode("utf-8", "replace")
            new = folding.fold_state(shooters.get(key), event.message.offset, event.value.decode())
            if new is not None:
                await _store(shooters, event.message.partition, key, new)


@app.agent(_source(SETTLEMENTS))
async def fold_settlements(stream):
    await _fold_batches(stream, settlement_books, folding.fold_settlement, _output_of)


@app.agent(_source(LAYOUT_MARKERS))
async def fold_markers(stream):
    await _fold_batches(stream, layouts, folding.fold_marker, _output_of)


@app.agent(_source(SURVEILLANCE))
async def fold_alerts(stream):
    await _fold_batches(stream, alert_books, folding.fold_alert, _output_of)


class TablesReader:
    """The web server's read-only window on the Faust tables."""

    def table_ids(self) -> list[str]:
        return sorted(set(shooters.keys()) | set(settlement_books.keys()))

    def row(self, table_id: str) -> dict | None:
        shooter, book = shooters.get(table_id), settlement_books.get(table_id)
        if shooter is None and book is None:
            return None
        return folding.floor_row(table_id, shooter, book, alert_books.get(table_id))

    def detail(self, table_id: str) -> dict | None:
        shooter, book = shooters.get(table_id), settlement_books.get(table_id)
        if shooter is None and book is None:
            return None
        return folding.table_detail(table_id, shooter, book, layouts.get(table_id), alert_books.get(table_id))

    def observed(self) -> dict:
        return folding.observed_floor(settlement_books.values())


@app.service
class FloorWeb(faust.Service):
    """The pages, started with the worker."""

    runner = None

    async def on_start(self) -> None:
        port = int(os.environ.get("CRAPS_FLOOR_PORT") or 6070)
        config = web_config_from_env()
        self.runner = await start_site(make_floor_web(TablesReader(), hub, config, instance_name()), port, config)
        log.warning("floor view %s on %s://%s:%s/", view_app_id(), config.scheme, web_host(), port)

    async def on_stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


def serve(loglevel: str = "warning") -> int:
    """`craps-streams floor`: this app's worker, as `faust -A streams.floor.app worker` runs it."""
    from faust.worker import Worker

    for noisy in ("aiokafka", "kafka"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    Worker(app, loglevel=loglevel, quiet=True).execute_from_commandline()
    return 0
