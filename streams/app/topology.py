"""The Faust topology: craps.table-events -> the settling agent -> the four output topics.

One agent instance per partition (concurrency 1: faust-streaming#606 can commit past an
unprocessed message otherwise); the agent never raises (faust-streaming#527 skips the offset of a
failed message): every failure becomes a rejection record. The per-table state lives in a Faust
Table (RocksDB, with its changelog topic), assigned back after every event so the changelog never
goes stale. Exactly-once: the outputs, the changelog writes and the consumed offsets commit in one
Kafka transaction (processing_guarantee="exactly_once").
"""
from __future__ import annotations

import logging
import os

import faust

from streams.app.shell import SettlementShell, state_to_text
from streams.topics import (
    LAYOUT_MARKERS,
    PARTITIONS,
    REJECTIONS,
    SETTLEMENTS,
    SURVEILLANCE,
    TABLE_EVENTS,
    faust_broker_url,
)

log = logging.getLogger("craps.worker")

APP_ID = os.environ.get("CRAPS_APP_ID", "craps-streams")
STATE_TABLE = "table-state"


def make_app() -> faust.App:
    return faust.App(
        APP_ID,
        broker=faust_broker_url(),
        store=os.environ.get("CRAPS_STORE", "rocksdb://"),
        datadir=os.environ.get("CRAPS_DATA_DIR", ".run/worker-{conf.name}"),
        processing_guarantee="exactly_once",
        topic_partitions=PARTITIONS,
        topic_replication_factor=int(os.environ.get("CRAPS_REPLICATION_FACTOR", "1")),
        topic_allow_declare=True,
        consumer_auto_offset_reset="earliest",
        # The transaction (outputs + changelog + offsets) commits this often: settlement latency
        # for a read_committed consumer is bounded below by it.
        broker_commit_interval=float(os.environ.get("CRAPS_COMMIT_INTERVAL", "0.05")),
        broker_commit_every=int(os.environ.get("CRAPS_COMMIT_EVERY", "1000")),
        web_enabled=True,
        web_port=int(os.environ.get("CRAPS_WEB_PORT", "6066")),
        web_host=os.environ.get("CRAPS_WEB_HOST", "127.0.0.1"),
        web_bind=os.environ.get("CRAPS_WEB_HOST", "127.0.0.1"),
        table_standby_replicas=0,
        # A crashed worker's partitions move after this many seconds.
        broker_session_timeout=float(os.environ.get("CRAPS_SESSION_TIMEOUT", "10")),
        producer_acks=-1,
        logging_config=None,
    )


app = make_app()

table_events = app.topic(TABLE_EVENTS, key_type=bytes, value_type=bytes, key_serializer="raw",
                         value_serializer="raw", partitions=PARTITIONS)
output_topics = {
    name: app.topic(name, key_type=bytes, value_type=bytes, key_serializer="raw",
                    value_serializer="raw", partitions=PARTITIONS)
    for name in (SETTLEMENTS, LAYOUT_MARKERS, SURVEILLANCE, REJECTIONS)
}
# table id -> the table's state as JSON text (TableState.to_record); co-partitioned with the events
# (Faust writes the changelog to the partition of the event being processed).
table_states = app.Table(STATE_TABLE, default=None, key_type=str, value_type=str, partitions=PARTITIONS)


def _load(table_id: str):
    return table_states.get(table_id)


# Live table states of the partitions this worker owns, per partition (see `settle`).
shells: dict[int, SettlementShell] = {}


def shell_for(partition: int) -> SettlementShell:
    shell = shells.get(partition)
    if shell is None:
        shell = shells[partition] = SettlementShell(_load)
    return shell


@app.on_partitions_revoked.connect
async def _partitions_revoked(app, revoked, **kwargs) -> None:
    # A revoked partition's tables may be settled elsewhere now; if it comes back, Faust recovers
    # its changelog first and the stored state is the truth again.
    for tp in revoked:
        if tp.topic == TABLE_EVENTS:
            shells.pop(tp.partition, None)


@app.agent(table_events, concurrency=1)
async def settle(stream):
    """Decode, apply, send. The new table state is sent to the table's changelog through the same
    transactional producer as the outputs (not Faust's buffered Table write, which can commit
    behind the offsets), and every output goes to the input's partition, so outputs, state and
    offsets of a partition commit in one transaction. If Faust commits outputs and state before the
    input's offset and the worker dies, the re-delivered input meets a state that already has its
    seq: the core counts it as a duplicate and pays nothing twice."""
    changelog = table_states.changelog_topic
    key_serializer, value_serializer = table_states.key_serializer, table_states.value_serializer
    async for event in stream.events():
        message = event.message
        partition = message.partition
        shell = shell_for(partition)
        try:
            handled = shell.handle(message.value, message.topic, partition, message.offset)
        except Exception:  # never raise from the agent: faust-streaming#527
            log.exception("unexpected failure at %s/%s/%s", message.topic, partition, message.offset)
            shells.pop(partition, None)
            handled = SettlementShell.undecodable(message.value, ValueError("internal error"),
                                                  message.topic, partition, message.offset)
        for topic, key, value in handled.messages:
            await output_topics[topic].send(key=key, value=value, partition=partition)
        if handled.state is not None:
            await changelog.send(key=handled.table_id, value=state_to_text(handled.state),
                                 partition=partition, key_serializer=key_serializer,
                                 value_serializer=value_serializer)
