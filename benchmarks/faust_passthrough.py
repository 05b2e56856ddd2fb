"""A bare faust-streaming pass-through agent: the framework's own ceiling for benchmarks/pipeline_bench.py.

    python benchmarks/faust_passthrough.py worker -l info --without-web     # the worker (env below)

One agent on <prefix>table-events forwarding every message unchanged (same key, same partition) to a
sink topic: no decode, no rules core, no state. The bench runs it as a subprocess (isolated from the
bench's own event loop and from the aiokafka contenders) with drain_faust(), which creates the sink,
starts the worker, reads the sink with a read_committed consumer and returns events/s.

Environment of the worker:
    CRAPS_KAFKA_BOOTSTRAP               host:port[,host:port] (default 127.0.0.1:9092)
    CRAPS_TOPIC_PREFIX                  topic prefix, as in craps_streams/topics.py (default "craps.")
    FAUST_PASSTHROUGH_APP_ID            Faust app id = consumer group (unique per run)
    FAUST_PASSTHROUGH_SINK              sink topic (default <prefix>settlements)
    FAUST_PASSTHROUGH_GUARANTEE         exactly_once (default) or at_least_once
    FAUST_PASSTHROUGH_COMMIT_EVERY      broker_commit_every, messages (default 2000)
    FAUST_PASSTHROUGH_COMMIT_INTERVAL   broker_commit_interval, seconds (default 0.1)
    FAUST_PASSTHROUGH_LINGER_MS         producer linger, ms (default 2, as the settling worker's producers)
    FAUST_PASSTHROUGH_DATADIR           Faust's datadir (default: a folder in the temp dir, never the cwd)
    FAUST_PASSTHROUGH_SINK_MODE         topic (default): the idiomatic `await sink.send(...)`;
                                        transaction: send on the source partition's transactional
                                        producer (Faust's Producer.send(transactional_id=...))

What exactly_once means for this agent (checked on the broker's log segments of the sink, with
faust-streaming 0.15.3 and aiokafka 0.14): the consumed offsets are committed in Kafka transactions,
one transactional producer per source partition, but the idiomatic `sink.send()` writes the outputs
with the app's plain idempotent producer, outside those transactions. Faust's TransactionManager.send
picks the transactional id from the *consumer's* metadata of the sink topic, which the consumer does
not subscribe to, so it finds no partition and falls back to the plain producer (see docs/decisions/transactional-loop.md). So sink mode "topic" does less per message than our transactional loops, whose outputs
commit with the offsets; sink mode "transaction" does the same work (outputs and offsets in one
transaction per partition) through Faust's own transactional producers.

Only the worker imports faust; drain_faust() needs kafka-python and craps_streams.kafka.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from craps_streams.settings import load, use  # noqa: E402
from craps_streams.topics import PARTITIONS, TopicSpec  # noqa: E402

SETTINGS = use(load())  # this benchmark (and its Faust worker) is an edge: its settings read once
TOPIC_PREFIX, TABLE_EVENTS, SETTLEMENTS = (SETTINGS.topic_prefix, SETTINGS.topics.table_events,
                                           SETTINGS.topics.settlements)
from craps_streams.kafka.settings import broker_urls, client_settings, default_bootstrap, sasl_credentials  # noqa: E402
from craps_streams.kafka.topics import create_topics  # noqa: E402

APP_ID_ENV = "FAUST_PASSTHROUGH_APP_ID"
SINK_ENV = "FAUST_PASSTHROUGH_SINK"
GUARANTEE_ENV = "FAUST_PASSTHROUGH_GUARANTEE"
COMMIT_EVERY_ENV = "FAUST_PASSTHROUGH_COMMIT_EVERY"
COMMIT_INTERVAL_ENV = "FAUST_PASSTHROUGH_COMMIT_INTERVAL"
SINK_MODE_ENV = "FAUST_PASSTHROUGH_SINK_MODE"
DATADIR_ENV = "FAUST_PASSTHROUGH_DATADIR"
LINGER_ENV = "FAUST_PASSTHROUGH_LINGER_MS"
SINK_MODES = ("topic", "transaction")


# ------------------------------------------------------------------ the Faust worker (subprocess)


def make_app():
    import faust

    bootstrap = default_bootstrap()
    # The bare framework's ceiling, not a floor role: it logs in as the administrator (it makes its
    # own sink, assignor and changelog topics), over TLS + SCRAM like every client.
    credentials = sasl_credentials("admin")
    app = faust.App(
        os.environ.get(APP_ID_ENV) or f"faust-pass-{uuid.uuid4().hex[:8]}",
        broker=broker_urls("admin", bootstrap),
        broker_credentials=faust.SASLCredentials(**credentials) if credentials else None,
        processing_guarantee=os.environ.get(GUARANTEE_ENV, "exactly_once"),
        store="memory://",
        # Faust makes its datadir even with the memory store; default "{conf.name}-data" in the cwd.
        datadir=os.environ.get(DATADIR_ENV) or os.path.join(tempfile.gettempdir(), "faust-passthrough-{conf.name}"),
        web_enabled=False,  # the `worker` command overrides this: it also needs --without-web
        topic_partitions=PARTITIONS,
        topic_replication_factor=int(os.environ.get("CRAPS_REPLICATION_FACTOR", "1")),
        consumer_auto_offset_reset="earliest",  # a fresh group must read the whole backlog
        # In exactly_once a commit is the end of the partitions' transactions: a read_committed reader
        # sees outputs only then. Our worker commits per partition batch (up to 2000 events), so the
        # Faust pass-through commits every 2000 acked messages or 0.1 s (default 10000 or 2.8 s).
        broker_commit_every=int(os.environ.get(COMMIT_EVERY_ENV, "2000")),
        broker_commit_interval=float(os.environ.get(COMMIT_INTERVAL_ENV, "0.1")),
        producer_acks=-1,
        # Faust's default linger is 0; our worker's producers linger 2 ms, so the same here. (No
        # measurable difference on this machine: Faust's own per-event cost, some 20 event-loop
        # callbacks per event in a profile, bounds the rate, and it sends ~2 events per request.)
        producer_linger=float(os.environ.get(LINGER_ENV, "2")) / 1000.0,
        logging_config=None,
    )
    raw = {"key_type": bytes, "value_type": bytes, "key_serializer": "raw", "value_serializer": "raw",
           "partitions": PARTITIONS}
    source = app.topic(TABLE_EVENTS, **raw)
    sink_name = os.environ.get(SINK_ENV) or SETTLEMENTS
    sink = app.topic(sink_name, **raw)
    mode = os.environ.get(SINK_MODE_ENV, "topic")
    if mode not in SINK_MODES:
        raise SystemExit(f"{SINK_MODE_ENV} must be one of {SINK_MODES}, got {mode!r}")
    # Not app.in_transaction: a cached property, False until the worker starts, and reading it here
    # would cache False for the whole run (and turn off Faust's own transactions).
    transactional = mode == "transaction" and app.conf.processing_guarantee.value == "exactly_once"

    # concurrency=1: one agent instance (faust-streaming#606), as a real exactly_once agent runs.
    @app.agent(source, concurrency=1)
    async def passthrough(stream):
        async for event in stream.events():
            m = event.message
            if transactional:
                # The transactional id Faust gives the source partition's producer, whose
                # transaction also carries this partition's offsets (TransactionManager.commit).
                tid = f"{app.conf.id}-{app.assignor.group_for_topic(m.topic)}-{m.partition}"
                await app.producer.send(sink_name, m.key, m.value, m.partition, None, None,
                                        transactional_id=tid)
            else:
                await sink.send(key=m.key, value=m.value, partition=m.partition)

    return app


# ------------------------------------------------------------------ the measurement (bench process)


def create_sink(name: str) -> None:
    """A sink topic of its own, with the settlements topic's partitions and configs."""
    spec = SETTINGS.topics.specs()[SETTLEMENTS]
    create_topics(topics={name: TopicSpec(name, spec.partitions, dict(spec.configs))}, floor=SETTINGS.topics,
                  app_id=SETTINGS.app_id)


def delete_topics(names: list[str]) -> None:
    """Best effort: remove the topics one drain_faust() run created (names unique to the run)."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    try:
        admin = KafkaAdminClient(**client_settings("admin"), client_id="bench-faust-cleanup")
    except (KafkaError, OSError) as exc:
        print(f"faust pass-through: topics {names} left on the broker: {exc!r}", file=sys.stderr)
        return
    try:
        existing = set(admin.list_topics())
        names = [n for n in names if n in existing]
        if names:
            admin.delete_topics(names, timeout_ms=30000)
    except (KafkaError, OSError) as exc:
        print(f"faust pass-through: topics {names} left on the broker: {exc!r}", file=sys.stderr)
    finally:
        admin.close()


def drain_faust(total: int, tag: str, guarantee: str = "exactly_once", sink_mode: str = "topic",
                timeout_s: float = 600.0,
                start_timeout_s: float = 120.0, log_dir: str | None = None) -> tuple[float, int, str | None]:
    """Events/s of the Faust pass-through worker draining the backlog of `total` table events.

    Returns (events/s, outputs seen, error or None). The outputs go to a sink topic of this run only
    (<prefix>faust-sink-<tag>), so every record read there is one of this worker's outputs and the
    count needs no offset bookkeeping against the other contenders.

    Clock: from the first committed output seen by a read_committed consumer to the moment all
    `total` outputs are there. That mirrors how pipeline_bench.drain() times the aiokafka
    contenders (first committed batch to last committed batch, events counted including the first
    batch), and like it leaves out the worker's start-up: Python/Faust import, group join and
    rebalance, transactional producers' init. Those are a fixed cost of seconds, not a rate, and
    vary from run to run; timing from the worker's start of consumption would fold them in.
    """
    from kafka import KafkaConsumer, TopicPartition

    sink = f"{TOPIC_PREFIX}faust-sink-{tag}"
    app_id = f"{TOPIC_PREFIX}faust-pass-{tag}-{uuid.uuid4().hex[:4]}"
    create_sink(sink)

    consumer = KafkaConsumer(**client_settings("admin"), group_id=None,
                             isolation_level="read_committed", enable_auto_commit=False,
                             fetch_max_bytes=64 * 1024 * 1024, max_partition_fetch_bytes=8 * 1024 * 1024,
                             max_poll_records=50_000)
    consumer.assign([TopicPartition(sink, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()

    env = {**os.environ, APP_ID_ENV: app_id, SINK_ENV: sink, GUARANTEE_ENV: guarantee, SINK_MODE_ENV: sink_mode,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    run_dir = tempfile.mkdtemp(prefix=f"faust-pass-{tag}-", dir=log_dir)
    env[DATADIR_ENV] = os.path.join(run_dir, "data")
    log_path = os.path.join(run_dir, "worker.log")
    log = open(log_path, "wb")  # noqa: SIM115  (the worker's stdout for the whole run, closed below)
    # -l info, not warn: at warn and above the worker runs its terminal spinner, which sets the root
    # logger to DEBUG for good (faust/worker.py _setup_spinner_handler), so every aiokafka and Faust
    # debug call in the hot path builds a LogRecord: ~10% of the worker's CPU in a profile here.
    worker = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "worker", "-l", "info",
                               "--without-web"],
                              cwd=str(REPO), env=env, stdout=log, stderr=subprocess.STDOUT)
    n, first, last, error = 0, None, None, None
    started = time.monotonic()
    try:
        while n < total:
            now = time.monotonic()
            if first is None and now - started > start_timeout_s:
                error = f"no output after {start_timeout_s:.0f} s"
                break
            if now - started > timeout_s:
                error = f"timeout after {timeout_s:.0f} s with {n:,}/{total:,} outputs"
                break
            if worker.poll() is not None:
                error = f"worker exited with code {worker.returncode}"
                break
            got = sum(len(batch) for batch in consumer.poll(timeout_ms=50).values())
            if got:
                now = time.monotonic()
                first = first or now
                last = now
                n += got
    finally:
        consumer.close()
        if worker.poll() is None:
            worker.terminate()
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        log.close()
    if error is not None:
        with open(log_path, "rb") as f:
            tail = f.read()[-3000:].decode("utf-8", "replace")
        error = f"{error}; worker log {log_path}:\n{tail}"
    else:
        shutil.rmtree(run_dir, ignore_errors=True)
        delete_topics([sink, f"{app_id}-__assignor-__leader"])
    elapsed = (last or 0) - (first or 0)
    return (n / elapsed if elapsed > 0 else 0.0), n, error


if __name__ == "__main__":
    make_app().main()
