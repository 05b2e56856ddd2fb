"""The floor view on faust-streaming: agents fold the committed outputs and the `table-state`
changelog into Faust tables keyed by table id, and a web server shows them (craps_streams/floor/web.py).

    craps-streams floor [--port 6070] [--instance 1]
    faust -A craps_streams.floor.app worker -l info          # the same, the Faust way

Every instance is a whole replica of the floor: its Faust app id (= consumer group) carries its
instance name (CRAPS_FLOOR_INSTANCE), so it reads every partition and any instance serves every
table, whichever settling worker owns it (docs/operating/index.md, the floor view). Delivery is at-least-once; the
folds (craps_streams/floor/folding.py) ignore what they already folded, by offset per table.

A fold changes the table in memory and the pages at once; its changelog record is written later,
at most every WRITE_EVERY_S per table (`ChangelogWrites`), and Faust's commit of the source records
is held until the record that holds their fold is written: so after a crash the view rebuilds each
table from its changelog and reads again every record folded since, and the folds skip the ones
the changelog already holds.

The consumers read committed records only: faust-streaming turns read_committed on only for its
own exactly_once mode (faust/transport/drivers/aiokafka.py, `_create_worker_consumer`), which the
view does not want (it writes no outputs); ReadCommittedTransport sets it for this app.

Settings (craps_streams/settings.py): the Faust app is built when this module is imported. Under
`craps-streams floor` the command has read the settings once (its --port and --instance on top) and
this module takes them (`in_use`); under `faust -A` the module is the view's edge and reads them
here: CRAPS_KAFKA_BOOTSTRAP,
CRAPS_TOPIC_PREFIX, CRAPS_APP_ID (the floor's; the view's app id is "<it>-floor-<instance>"),
CRAPS_FLOOR_INSTANCE, CRAPS_FLOOR_PORT, CRAPS_FLOOR_CONTROLLERS (the controllers' /metrics: the events
held at each table, craps_streams/floor/controllers.py), CRAPS_WEB_HOST, CRAPS_WEB_CONFIG (TLS and basic auth,
craps_streams/app/web_security.py), CRAPS_FLOOR_DATADIR (Faust's data dir; default a temp dir: the
tables live in memory and are rebuilt from their changelogs), CRAPS_FLOOR_SESSION_TIMEOUT_MS.
"""
from __future__ import annotations

import asyncio
import logging
import tempfile
import time

import faust
from faust.transport.drivers import aiokafka as faust_aiokafka

from craps_streams.app.web_security import load_web_config, start_site
from craps_streams.codec import CodecError, decode_output
from craps_streams.floor import folding
from craps_streams.floor.controllers import ControllerWatch, urls_of
from craps_streams.floor.broker import faust_broker_settings, view_client_settings
from craps_streams.floor.hub import ChangeHub
from craps_streams.floor.web import make_floor_web
from craps_streams.kafka.client_logs import lost_nodes
from craps_streams.kafka.topics import create_topics
from craps_streams.settings import Settings, in_use, load, use
from craps_streams.topics import PARTITIONS, TopicSpec, replication_factor

log = logging.getLogger("craps.floor")


FETCH_WAIT_MS = 100  # the longest a fetch waits at the broker for records: bounds the added lag


class _ReadCommittedThread(faust_aiokafka.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport):
        consumer = super()._create_worker_consumer(transport)
        # aiokafka reads both at start() (consumer.py: the Fetcher gets self._isolation_level and
        # self._fetch_max_wait_ms).
        consumer._isolation_level = "read_committed"
        # Faust fixes the fetch's wait at 1.5 s (_create_worker_consumer): a fetch of partitions
        # with nothing new waits that long at the broker, and a partition whose records were still
        # buffered when it was sent waits for it to return. On a quiet floor a settlement then
        # reached the page up to 1.5 s late.
        consumer._fetch_max_wait_ms = FETCH_WAIT_MS
        return consumer


class _ReadCommittedConsumer(faust_aiokafka.Consumer):
    def _new_consumer_thread(self):
        return _ReadCommittedThread(self, loop=self.loop, beacon=self.beacon)

    def _new_offset(self, tp):
        """Faust's next offset to commit for `tp`, never past a record whose fold still waits for
        its changelog record (ChangelogWrites). Faust alone would: it stops at the first unacked
        record only where the acked ones leave two offsets or more unacked after its last commit,
        as it takes a single missing offset there for a transaction marker (`_new_offset` in
        faust/transport/consumer.py: `min(acked) - committed_offset > 1`), and before its first
        commit it checks nothing. A held record is often exactly that single offset: committed
        past, a kill -9 lost its fold (seen as settlements missing from a restarted view)."""
        held = ChangelogWrites.first_held(tp)
        if held is None:
            return super()._new_offset(tp)
        acked = self._acked[tp]
        later = [offset for offset in acked if offset >= held]
        if later:  # Faust's reckoning over the acked records before the held one; the rest wait
            acked[:] = [offset for offset in acked if offset < held]
        try:
            offset = super()._new_offset(tp)
        finally:
            if later:
                self._acked[tp].extend(later)
        return offset if offset is None else min(offset, held)

    async def _add_gap(self, tp, offset_from: int, offset_to: int) -> None:
        """Note the offsets from `offset_from` to the record just read at `offset_to` (excluded) as
        read without a record (transaction markers, aborted records), so the commit can pass them.

        Faust's own (faust/transport/consumer.py) notes the record just read as a gap too, and
        starts one past its last commit: once the gap is merged into the acked offsets the record
        is there twice, and its reckoning (`consecutive_numbers`) stops at a repeated offset, so
        each commit got past one transaction only. On the worker's transactional topics a
        partition's acked offsets then grew without end, and with them the time of every commit
        and the view's lag (faust-streaming/faust#606, robinhood/faust#625)."""
        committed = self._committed_offset[tp]
        if committed is not None:
            offset_from = max(offset_from, committed)
        if offset_from < offset_to:
            gaps = self._gap[tp]
            overlapped = gaps.overlaps_range(offset_from, offset_to)  # read again after a seek
            gaps.addi(offset_from, offset_to)
            if overlapped:
                gaps.merge_overlaps()

    async def wait_empty(self) -> None:
        """Faust waits here, before a rebalance and at shutdown, for every record taken to be acked.
        The records whose fold waits for its changelog record are acked by that write: so every
        waiting table is written now, and any fold from here on is written at once."""
        ChangelogWrites.draining = True
        try:
            for writes in ChangelogWrites.every:
                await writes.write_due(None)
            await super().wait_empty()
        finally:
            ChangelogWrites.draining = False


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
            await asyncio.to_thread(create_topics, view_client_settings()["bootstrap_servers"], specs,
                                    floor=SETTINGS.topics, app_id=SETTINGS.app_id,
                                    replication=SETTINGS.replication_factor)
        except Exception as e:  # e.g. no admin rights here: Faust creates them itself, a moment later
            log.warning("could not create the tables' changelog topics beforehand: %r", e)


def view_app_id(settings: Settings) -> str:
    return f"{settings.app_id}-floor-{settings.floor_instance}"


def make_app(settings: Settings) -> FloorApp:
    datadir = settings.floor_datadir or tempfile.mkdtemp(prefix="craps-floor-")
    session_s = settings.floor_session_timeout_ms / 1000
    broker = faust_broker_settings(view_client_settings())
    # Faust refuses a consumer request timeout below the session timeout: the view's consumer
    # waits that long on a cut-off node; its producer keeps the clients' timeout (settings.py).
    broker["broker_request_timeout"] = max(broker.get("broker_request_timeout", 0.0), session_s)
    return FloorApp(
        view_app_id(settings),
        **broker,
        store="memory://",
        datadir=datadir,
        web_enabled=False,  # the pages are served by craps_streams/floor/web.py (CSP, TLS, basic auth)
        processing_guarantee="at_least_once",
        consumer_auto_offset_reset="earliest",
        topic_partitions=PARTITIONS,
        topic_replication_factor=replication_factor(settings.replication_factor),
        broker_commit_interval=1.0,
        # A restarted instance rejoins its own group: the dead member's session must end first.
        broker_session_timeout=session_s,
        broker_heartbeat_interval=session_s / 5,
        table_standby_replicas=0,
        producer_linger=0.005,
    )


# `craps-streams floor` has read the settings (its flags on top) and handed them to `use` before it
# imports this module; `faust -A craps_streams.floor.app` has not, and this module is then the edge.
SETTINGS = in_use() or use(load())
TOPICS = SETTINGS.topics
app = make_app(SETTINGS)
hub = ChangeHub()
controllers = ControllerWatch(urls_of(SETTINGS.floor_controllers), hub)


def _source(name: str):
    return app.topic(name, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw",
                     partitions=PARTITIONS)


def _table(name: str):
    # No key or value type: plain JSON (the app's default serializer), read back as dicts.
    return app.Table(name, default=None, partitions=PARTITIONS)


BATCH = 500  # records folded per batch at most
YIELD_EVERY = 25  # records folded (or changelog records written) between two yields to the event loop
BATCH_WITHIN_S = 0.05  # and no longer a wait than this for a batch to fill: bounds the added lag
WRITE_EVERY_S = 2.0  # a table's changelog record at most this often, and this long after its first unwritten fold
WRITE_CHECK_S = 0.25  # how often the tables due are written


class ChangelogWrites:
    """One Faust table's folds waiting for their changelog record, and their writing.

    A fold changes the table's value in memory (what the pages read) at once. The first record
    folded into a table since its last changelog record stays unacked (Faust's `Message.incref`)
    until the table's next changelog record is handed to the producer, WRITE_EVERY_S later: the
    view's consumer commits a partition's offsets only up to its first held record
    (`_ReadCommittedConsumer._new_offset`), and Faust flushes the producer before it commits
    (at-least-once, faust/transport/consumer.py `_commit_offsets`). So a committed
    offset never passes a fold whose changelog record is not written: after a kill -9, the view
    recovers each table from its changelog and reads again every record folded after that
    table's last written record; the folds skip, by offset, whatever the changelog already held.

    A table's value is its whole view, so its changelog needs only the last one: a busy table
    writes one record every WRITE_EVERY_S rather than one per batch of each topic."""

    every: list["ChangelogWrites"] = []
    draining = False  # Faust is waiting for every record to be acked: write at once

    def __init__(self, table) -> None:
        self.table = table
        # key -> (the first unwritten fold's message, when the key is due)
        self.waiting: dict[str, tuple[object, float]] = {}
        ChangelogWrites.every.append(self)

    @classmethod
    def first_held(cls, tp) -> int | None:
        """The lowest offset of `tp` whose fold waits for its changelog record, if any."""
        offsets = [message.offset for writes in cls.every for message, _ in writes.waiting.values()
                   if message.tp == tp]
        return min(offsets) if offsets else None

    def get(self, key: str):
        return self.table.data.get(key)

    async def folded(self, key: str, value: dict, message) -> None:
        """`value`, folded from `message` (and maybe records after it), is the table's value now."""
        self.table.data[key] = value
        hub.changed(key)
        if key not in self.waiting:
            message.incref()  # acked when the changelog record holding this fold is written
            self.waiting[key] = (message, time.monotonic() + WRITE_EVERY_S)
        if self.draining:
            await self.write_due(None)

    async def write_due(self, now: float | None) -> None:
        """Write the changelog record of every table due by `now` (of every waiting table: None),
        on the partition of its source records, then ack the record its writing waited for."""
        due = [key for key, (_, at) in self.waiting.items() if now is None or at <= now]
        for i, key in enumerate(due, 1):
            waiting = self.waiting.pop(key, None)
            if waiting is None:  # written meanwhile (a drain's write while the timer's waited)
                continue
            message = waiting[0]
            # Straight to the producer: Table.__setitem__ would go through Faust's ProducerBuffer
            # (send_soon, one message at a time), and take the stream's current event's partition.
            await self.table.changelog_topic.send(key=key, value=self.table.data[key], partition=message.partition)
            message.ack(app.consumer)
            if i % YIELD_EVERY == 0:
                await asyncio.sleep(0)


shooters = ChangelogWrites(_table("shooters"))
settlement_books = ChangelogWrites(_table("settlements"))
layouts = ChangelogWrites(_table("layouts"))
alert_books = ChangelogWrites(_table("alerts"))


@app.timer(WRITE_CHECK_S)
async def write_changelogs() -> None:
    now = time.monotonic()
    for writes in ChangelogWrites.every:
        await writes.write_due(now)


def _decoded(event) -> dict | None:
    try:
        return decode_output(event.value)
    except CodecError as e:  # never stop the view for a record it cannot read
        m = event.message
        log.warning("undecodable record at %s/%s/%s: %s", m.topic, m.partition, m.offset, e)
        return None


async def _fold_batches(stream, writes: ChangelogWrites, fold, record_of) -> None:
    """Fold each batch of events into the table: a burst of records for one table is one change."""
    async for events in stream.take_events(BATCH, within=BATCH_WITHIN_S):
        changed: dict[str, tuple[object, dict]] = {}  # key -> (its first record folded, its value)
        for i, event in enumerate(events, 1):
            if i % YIELD_EVERY == 0:
                await asyncio.sleep(0)
            keyed = record_of(event)
            if keyed is None:
                continue
            key, record = keyed
            first, current = changed[key] if key in changed else (event.message, writes.get(key))
            new = fold(current, event.message.offset, record)
            if new is not None:
                changed[key] = (first, new)
        for key, (first, value) in changed.items():
            await writes.folded(key, value, first)


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


@app.agent(_source(TOPICS.table_state))
async def fold_table_states(stream):
    async for events in stream.take_events(BATCH, within=BATCH_WITHIN_S):
        for i, event in enumerate(_last_states(events), 1):
            if i % YIELD_EVERY == 0:
                await asyncio.sleep(0)  # a state fold takes about a millisecond
            key = event.key.decode("utf-8", "replace")
            new = folding.fold_state(shooters.get(key), event.message.offset, event.value.decode())
            if new is not None:
                await shooters.folded(key, new, event.message)


@app.agent(_source(TOPICS.settlements))
async def fold_settlements(stream):
    await _fold_batches(stream, settlement_books, folding.fold_settlement, _output_of)


@app.agent(_source(TOPICS.layout_markers))
async def fold_markers(stream):
    await _fold_batches(stream, layouts, folding.fold_marker, _output_of)


@app.agent(_source(TOPICS.surveillance))
async def fold_alerts(stream):
    await _fold_batches(stream, alert_books, folding.fold_alert, _output_of)


class TablesReader:
    """The web server's read-only window on the Faust tables."""

    def table_ids(self) -> list[str]:
        return sorted(set(shooters.table.data.keys()) | set(settlement_books.table.data.keys()))

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
        return folding.observed_floor(settlement_books.table.data.values())

    def held_at_tables(self) -> dict:
        """Per table, the events its controller holds (craps_streams/floor/controllers.py)."""
        return controllers.held

    def lost_brokers(self) -> list[dict]:
        """The broker nodes this view's Kafka clients fail to reach now (craps_streams/kafka/client_logs.py)."""
        return [{"node": n.node, "since_ms": int(n.since_s * 1000), "attempts": n.attempts, "error": n.error}
                for n in lost_nodes()]


@app.service
class FloorWeb(faust.Service):
    """The pages, started with the worker."""

    runner = None
    watch = None

    async def on_start(self) -> None:
        if controllers.urls:
            self.watch = asyncio.create_task(controllers.run(), name="controllers")
        port, host = SETTINGS.floor_port, SETTINGS.web_host
        config = load_web_config(SETTINGS.web_config)
        self.runner = await start_site(make_floor_web(TablesReader(), hub, config, SETTINGS.floor_instance), port,
                                       config, host)
        log.info("floor view %s on %s://%s:%s/", view_app_id(SETTINGS), config.scheme, host, port)  # news, not a warning

    async def on_stop(self) -> None:
        if self.watch is not None:
            self.watch.cancel()
        if self.runner is not None:
            await self.runner.cleanup()


def serve(loglevel: str = "warning") -> int:
    """`craps-streams floor`: this app's worker, as `faust -A craps_streams.floor.app worker` runs it."""
    from faust.worker import Worker

    for noisy in ("aiokafka", "kafka"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    Worker(app, loglevel=loglevel, quiet=True).execute_from_commandline()
    return 0
