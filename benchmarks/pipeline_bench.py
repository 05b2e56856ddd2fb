"""End-to-end pipeline benchmark on the real broker (start it first: `make kafka-up`).

    python benchmarks/pipeline_bench.py [--tables 40 --hours 6 --latency-seconds 60]
    python benchmarks/pipeline_bench.py --no-faust                    # aiokafka and Kafka Streams contenders
    python benchmarks/pipeline_bench.py --no-faust --no-kstreams      # only the aiokafka contenders
    python benchmarks/pipeline_bench.py --skip-throughput             # only the latency part

1. Throughput, side by side in one run on the same broker and the same backlog of table events:
   the settling worker (decode, rules core, encode, outputs + state + offsets in one transaction per
   partition batch) against a bare pass-through worker (the same transactional loop forwarding each
   message unchanged: the ceiling of the Kafka client and transactions on this machine), and a bare
   faust-streaming pass-through agent (benchmarks/faust_passthrough.py, processing_guarantee
   "exactly_once", one worker subprocess, its outputs on a sink topic of its own: the framework's
   ceiling). Rounds are interleaved, medians printed. Faust's idiomatic `sink.send()` writes its
   outputs outside its transactions (only its offsets are transactional, see faust_passthrough.py);
   --faust-tx-sink adds a fourth contender whose outputs go through Faust's per-partition
   transactional producers, the same work as our loops.
   The pass-through sending its records in record batches, as the settling worker does
   (craps_streams.kafka.producers.send_records), runs too (--no-batched-pass-through leaves it out),
   and a Kafka Streams pass-through (benchmarks/kstreams_passthrough.py: an identity topology with
   exactly_once_v2, as the worker's role, built with Maven on demand; left out with --no-kstreams or
   without a JDK and Maven). Target: the pipeline at 80% or more of the fastest pass-through
   (aiokafka, aiokafka batched, Kafka Streams; benchmarks/ceiling.py).
   --profile DIR samples this process with py-spy (https://github.com/benfred/py-spy, native frames
   too) while each contender drains, one raw collapsed-stack file per contender and round in DIR,
   and prints where the settling worker's CPU went, stage by stage (`STAGES`).
2. Latency at a floor's real load: 200 tables, a throw every ~20 s each, fed live; p50/p99 from the
   event time (send time) to the settlement read by a read_committed consumer; --latency-runs runs,
   each on topics of its own and lasting until --min-settlements settlements (target: p99 < 50 ms
   as the median of >= 5 runs of >= 5,000 settlements, none above 100 ms), with the machine's load,
   its steal share and each process's CPU (to tell a slow machine from a slow program), and the
   tail split second by second (stolen_time.py): how many settlements over 100 ms waited through a
   second in which the hypervisor took 10 % or more of the cores, and the p99 of those that met none.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for _path in (str(REPO), str(REPO / "benchmarks")):  # runs from a checkout, installed or not
    if _path not in sys.path:
        sys.path.insert(0, _path)

PREFIX = f"bench{uuid.uuid4().hex[:6]}."
os.environ["CRAPS_TOPIC_PREFIX"] = PREFIX

import broker_pauses  # noqa: E402
import ceiling  # noqa: E402
import kstreams_passthrough  # noqa: E402  (runs Java in a subprocess)
import stolen_time  # noqa: E402
import faust_passthrough  # noqa: E402  (imports faust only in its worker subprocess)
from kafka import KafkaConsumer, TopicPartition  # noqa: E402

from craps_streams.app.shell import SettlementShell  # noqa: E402
from craps_streams.app.worker import SettlingWorker  # noqa: E402
from craps_streams.metrics.gc_pauses import freeze_start_up, raise_young_threshold  # noqa: E402
from craps_streams.codec import decode_output  # noqa: E402
from craps_streams.ingest.producer import make_producer, produce  # noqa: E402
from craps_streams.sim.floor import floor_events  # noqa: E402
from craps_streams.app.service import worker_of  # noqa: E402
from craps_streams.authenticity import TableSigner, keyfile, sign_record  # noqa: E402
from craps_streams.kafka.settings import client_settings  # noqa: E402
from craps_streams.kafka.access import grant_application  # noqa: E402
from craps_streams.kafka.producers import send_records  # noqa: E402
from craps_streams.kafka.topics import create_topics, delete_floor  # noqa: E402
from craps_streams.settings import load, use  # noqa: E402
from craps_streams.topics import PARTITIONS  # noqa: E402

SETTINGS = use(load())  # this benchmark is an edge: its settings read once, with its own prefix
TABLE_EVENTS, SETTLEMENTS = SETTINGS.topics.table_events, SETTINGS.topics.settlements


def grant(app_id: str) -> None:
    """The worker role's group and transactional ids for one more application id (each round runs
    on a fresh group), granted by the administrator as for any floor."""
    grant_application(PREFIX, app_id)


class FreshTablesWorker(SettlingWorker):
    """The settling worker, every round from empty tables. The rounds share the table-state
    changelog, so a worker of a later round would take over the tables as the round before left
    them, at the end of the backlog, and pass every event as a duplicate (no outputs, nothing to
    encode): what it measured then was the duplicate check. Each round settles the backlog as the
    first one does."""

    async def own(self, tp):
        owner = await super().own(tp)
        if owner is not None:
            owner.shell = SettlementShell(lambda table_id: None, tags=self.tags)
            owner.recovered = {}
        return owner


class PassThroughWorker(SettlingWorker):
    """The same transactional loop, forwarding every message as it came: no decode, no core."""

    async def settle_batch(self, tp, messages):
        owner = self.owners[tp.partition]
        producer = owner.producer
        async with producer.transaction():
            for m in messages:
                await producer.send(SETTLEMENTS, m.value, key=m.key, partition=tp.partition)
            await producer.send_offsets_to_transaction({tp: messages[-1].offset + 1}, self.app_id)
        if self.observer is not None:
            self.observer(messages, tp.partition, 0.0)


class BatchedPassThroughWorker(SettlingWorker):
    """The pass-through sending its records as the settling worker does: a batch's records in
    record batches (craps_streams.kafka.producers.send_records), written before the offsets."""

    async def settle_batch(self, tp, messages):
        owner = self.owners[tp.partition]
        producer = owner.producer
        async with producer.transaction():
            records = [(m.key, m.value) for m in messages]
            await self._written(await send_records(producer, {SETTLEMENTS: records}, tp.partition))
            await producer.send_offsets_to_transaction({tp: messages[-1].offset + 1}, self.app_id)
        if self.observer is not None:
            self.observer(messages, tp.partition, 0.0)


# Transactions (batches) each contender committed in its drains: its events per transaction.
BATCHES: dict[str, list[int]] = {}
# CPU seconds of each drain, by contender: (this process, the broker) from its start to its end.
CPU: dict[str, list[tuple[float, float]]] = {}


def broker_cpu_s() -> float | None:
    """The dev broker's CPU seconds so far (user + system, /proc), None when its pid is not known:
    the broker shares the machine's cores with the worker, so what a contender makes it do slows
    the contender down too."""
    try:
        pid = (Path(os.environ.get("KAFKA_DATA_DIR", REPO / ".kafka-data")) / "kafka.pid").read_text().strip()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def drain(worker_cls, app_id: str, total: int) -> tuple[float, int]:
    """Events/s of a worker draining the whole backlog, from its first batch to its last."""
    seen = {"n": 0, "first": None, "last": None}
    batches = BATCHES.setdefault(worker_cls.__name__, [])
    grant(app_id)
    worker = worker_of(SETTINGS, worker_cls, app_id=app_id)

    def observer(batch, partition, seconds):
        now = time.monotonic()
        seen["first"] = seen["first"] or now
        seen["n"] += len(batch)
        batches.append(len(batch))
        seen["last"] = now
        if seen["n"] >= total:
            worker.stopping.set()

    worker.observer = observer
    cpu, broker = time.process_time(), broker_cpu_s()
    task = asyncio.create_task(worker.run())
    deadline = time.monotonic() + 600
    while not worker.stopping.is_set() and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    worker.stopping.set()
    await task
    broker_after = broker_cpu_s()
    if broker is not None and broker_after is not None:
        CPU.setdefault(worker_cls.__name__, []).append((time.process_time() - cpu, broker_after - broker))
    elapsed = (seen["last"] or 0) - (seen["first"] or 0)
    return (seen["n"] / elapsed if elapsed > 0 else 0.0), seen["n"]


class KStreamsContender:
    """Kafka Streams' pass-through (benchmarks/kstreams_passthrough.py) in the interleaved rounds: a
    JVM each round, on an application id of its own under one prefix the administrator granted."""

    name = "kafka streams pass-through"

    def __init__(self, classpath: str, commit_interval_ms: int):
        self.classpath, self.commit_interval_ms = classpath, commit_interval_ms
        self.app_id_prefix = f"bench-kstreams-{uuid.uuid4().hex[:6]}-"
        kstreams_passthrough.grant_streams(self.app_id_prefix)
        self.runs: list[float] = []
        self.failed: str | None = None

    def round(self, r: int, total: int) -> None:
        if self.failed:
            return
        broker = broker_cpu_s()
        drained = kstreams_passthrough.drain(self.classpath, f"{self.app_id_prefix}{r}", TABLE_EVENTS, SETTLEMENTS,
                                             total, self.commit_interval_ms)
        broker_after = broker_cpu_s()
        if drained.error:
            self.failed = drained.error
            print(f"{self.name}: {drained.error}", file=sys.stderr)
            return
        self.runs.append(drained.eps)
        BATCHES.setdefault(type(self).__name__, []).append(drained.events / max(drained.transactions, 1))
        if broker is not None and broker_after is not None:
            CPU.setdefault(type(self).__name__, []).append((drained.cpu_s, broker_after - broker))


class FaustContender:
    """The Faust pass-through in the interleaved rounds. If exactly_once cannot run at all, the
    error is printed as it came and the contender falls back to at_least_once, labelled so."""

    def __init__(self, label: str, sink_mode: str, guarantee: str):
        self.label, self.sink_mode, self.guarantee = label, sink_mode, guarantee
        self.runs: list[float] = []
        self.failed: str | None = None

    @property
    def name(self) -> str:
        return f"{self.label} ({self.guarantee})"

    def round(self, r: int, total: int) -> None:
        if self.failed:
            return
        tag = f"{self.sink_mode[:2]}{r}-{uuid.uuid4().hex[:4]}"
        eps, _n, error = faust_passthrough.drain_faust(total, tag, self.guarantee, self.sink_mode)
        if error and self.guarantee == "exactly_once" and not self.runs:
            print(f"{self.label}: exactly_once failed: {error}", file=sys.stderr)
            print(f"{self.label}: falling back to at_least_once", file=sys.stderr)
            self.guarantee = "at_least_once"
            eps, _n, error = faust_passthrough.drain_faust(total, tag + "a", self.guarantee, self.sink_mode)
        if error:
            self.failed = error
            print(f"{self.name}: {error}", file=sys.stderr)
            return
        self.runs.append(eps)


# The live path's stages, each named by the frames that run it ("function (file" as py-spy's raw
# format writes a frame, the file as py-spy shortens it; native frames by their Rust path). A sample
# is charged to the innermost frame of its stack that names a stage (for one frame, the first stage
# naming it): a JSON dump under the table-state write is the table-state write, an Avro encode
# under the worker's send is the encode. Samples matching none are the asyncio loop and the rest
# of the process (the benchmark's observer, the interpreter). A thread waiting (a lock, an empty
# queue, epoll) is not CPU: `IDLE` samples are counted apart.
STAGES = (
    ("tag check", ("problem (craps_streams/authenticity/", "craps_native::tags::")),
    ("decode (Avro -> event)", ("decode_event (craps_streams/codec/", "record_to_event (craps_streams/rules/",
                                "decode (craps_streams/app/shell.py", "craps_native::avro::")),
    ("encode (output -> Avro)", ("messages (craps_streams/codec/fastwrite.py", "craps_native::avro_out::",
                                "encode_output (craps_streams/codec/")),
    ("rules core (apply)", ("apply (craps_streams/rules/", "craps_native::")),
    ("surveillance and hold book", ("settled (craps_streams/settle/step.py",)),
    ("table-state write (state -> JSON)", ("stored_text (craps_streams/app/shell.py",)),
    ("produce (aiokafka send, batching, compression)", ("send (aiokafka/producer/producer.py",
                                                        "send_records (craps_streams/kafka/producers.py")),
    ("transaction round trips (begin, offsets, commit, wait for the writes)",
     ("send_offsets_to_transaction (aiokafka/", "_written (craps_streams/app/worker.py", "transaction (aiokafka/",
      "commit_transaction (aiokafka/", "__aexit__ (contextlib.py")),
    ("consumer fetch (getmany, records parsed)", ("getmany (aiokafka/consumer/", "_fetch_requests_routine (aiokafka/",
                                                  "_proc_fetch_request (aiokafka/", "fetched_records (aiokafka/")),
    ("network (aiokafka connections, SSL)", ("aiokafka/conn.py", "ssl.py", "sslproto.py", "selector_events.py")),
    ("garbage collector", ("gc_collect_main",)),
    # "(kafka/": kafka-python, the administrator's ACLs and the changelog's reader
    ("start-up and takeover (ACLs, fencing, changelog)",
     ("grant (pipeline_bench.py", "own (craps_streams/app/worker.py", "recover_partition (craps_streams/app/",
      "__init__ (craps_streams/app/worker.py", "(kafka/")),
    ("the batch loop (worker.py, the shell's items_of and handle_batch)",
     ("_settle_batch (craps_streams/app/worker.py", "settle_batch (pipeline_bench.py", "items_of (craps_streams/app/shell.py",
      "handle_batch (craps_streams/app/shell.py")),
)
IDLE = ("epoll_wait", "_queue_SimpleQueue_get", "pthread_cond_timedwait", "PyThread_acquire_lock_timed")
REST = "asyncio loop and the rest"


THREADS = "other threads (the changelog read, kafka-python's clients)"


def stage_of(stack: list[str]) -> str:
    if any(mark in frame for frame in stack[-4:] for mark in IDLE):
        return "idle"
    if any("Thread._bootstrap (threading.py" in frame for frame in stack[:4]):
        return THREADS  # the worker's path is the asyncio loop's thread
    for frame in reversed(stack):  # innermost first
        for name, marks in STAGES:
            if any(mark in frame for mark in marks):
                return name
    return REST


def breakdown(path: Path) -> tuple[dict[str, int], int]:
    """Samples per stage of one py-spy raw file (`frame;frame;... count` a line), and the
    samples of the asyncio loop's thread, the worker's path (all but the idle ones and the other
    threads')."""
    counts: dict[str, int] = {}
    total = 0
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        stage = stage_of(stack.split(";"))
        counts[stage] = counts.get(stage, 0) + int(n)
        if stage != "idle" and stage != THREADS:
            total += int(n)
    return counts, total


def print_breakdown(label: str, paths: list[Path], events: int) -> None:
    counts: dict[str, int] = {}
    total = 0
    for path in paths:
        c, t = breakdown(path)
        total += t
        for k, v in c.items():
            counts[k] = counts.get(k, 0) + v
    if not total:
        print(f"{label}: no samples")
        return
    # py-spy samples a thread that runs or waits for a core alike: on a loaded machine the samples
    # are time on the path, not CPU seconds; the shares are what compares.
    print(f"{label}: {total:,} samples of the asyncio loop's thread over {events:,} events (besides: "
          f"{counts.get(THREADS, 0):,} on other threads, {counts.get('idle', 0):,} idle)")
    for name in [n for n, _ in STAGES] + [REST]:
        if counts.get(name, 0) >= total / 1000:
            print(f"  {name:<72}{counts[name] / total:>7.1%}")


class Profile:
    """py-spy recording this process while it is entered (nothing when `out` is None)."""

    def __init__(self, out: Path | None):
        self.out, self.spy = out, None

    def __enter__(self):
        if self.out is not None:
            self.spy = subprocess.Popen(["py-spy", "record", "--native", "--rate", "100", "--format", "raw",
                                         "--pid", str(os.getpid()), "-o", str(self.out)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)  # attached before the round begins
        return self

    def __exit__(self, *exc):
        if self.spy is not None:
            self.spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
            self.spy.wait(60)


def throughput(tables: int, hours: float, rounds: int, faust: bool = True, faust_tx_sink: bool = False,
               faust_guarantee: str = "exactly_once", profile: Path | None = None,
               batched_bare: bool = True, kstreams: bool = True, kstreams_commit_interval_ms: int = 100) -> None:
    # Tagged as the floor's controllers send them (the dev floor's key ring; the worker checks
    # every tag before the rules, so the figures include the check).
    signer = TableSigner(keyfile.init(SETTINGS.key_ring_path)[0])
    records = [sign_record(signer, r) for r in floor_events(tables, hours, seed=7)]
    producer = make_producer()
    produce(records, producer, TABLE_EVENTS)
    producer.close()
    total = len(records)
    del records
    # The worker's process as `craps-streams worker` runs it (craps_streams/app/service.py): what start-up
    # made frozen out of the garbage collector's walks, its first generation collected as rarely as
    # the service collects it, and no backlog held in memory. Both contenders run in this process.
    freeze_start_up()
    raise_young_threshold()
    print(f"backlog: {total:,} table events in {TABLE_EVENTS}")
    streams = None
    if kstreams:
        try:
            streams = KStreamsContender(kstreams_passthrough.build(), kstreams_commit_interval_ms)
        except kstreams_passthrough.BuildError as error:
            print(f"kafka streams pass-through left out: {error}", file=sys.stderr)
    fausts = []
    if faust:
        fausts.append(FaustContender("faust pass-through", "topic", faust_guarantee))
        if faust_tx_sink:
            fausts.append(FaustContender("faust pass-through tx sink", "transaction", faust_guarantee))
    pipeline, bare, batched = [], [], []
    if profile is not None:
        profile.mkdir(parents=True, exist_ok=True)
    spied = {"pipeline": [], "bare": [], "batched": []}

    def spy(name: str, r: int) -> Profile:
        if profile is None:
            return Profile(None)
        spied[name].append(profile / f"{name}-{r}.txt")
        return Profile(spied[name][-1])

    for r in range(rounds):  # interleaved, each on a fresh consumer group over the same backlog
        with spy("pipeline", r):
            eps, n = asyncio.run(drain(FreshTablesWorker, f"bench-pipeline-{r}-{uuid.uuid4().hex[:4]}", total))
        pipeline.append(eps)
        with spy("bare", r):
            eps, n2 = asyncio.run(drain(PassThroughWorker, f"bench-bare-{r}-{uuid.uuid4().hex[:4]}", total))
        bare.append(eps)
        if batched_bare:
            with spy("batched", r):
                eps, _ = asyncio.run(drain(BatchedPassThroughWorker, f"bench-batched-{r}-{uuid.uuid4().hex[:4]}", total))
            batched.append(eps)
        if streams is not None:  # a JVM of its own, on its own application id
            streams.round(r, total)
        for contender in fausts:  # a worker subprocess each, its own app id and sink topic
            contender.round(r, total)
    p, b = statistics.median(pipeline), statistics.median(bare)
    runs = {"settling pipeline": pipeline, "aiokafka pass-through": bare}
    if batched_bare:
        runs["aiokafka pass-through, batched"] = batched
    if streams is not None:
        runs[f"{streams.name} (exactly_once_v2)"] = streams.runs
    runs.update({c.name: c.runs for c in fausts})
    rates = ceiling.medians(runs)
    width = max(len(name) for name in runs) + 2
    print(f"{'worker':<{width}}{'events/s (median)':>20}   runs")
    for name, rounds_of in runs.items():
        if name in rates:
            print(f"{name:<{width}}{rates[name]:>20,.0f}   {', '.join(f'{x:,.0f}' for x in rounds_of)}")
        else:
            print(f"{name:<{width}}{'failed':>20}   see the error above")
    # The ceiling: the fastest pass-through that commits its outputs with its offsets, as the
    # pipeline does (Faust's idiomatic sink writes outside its transactions: not a peer).
    peers = {name: rates[name] for name in runs if name in rates and name != "settling pipeline"
             and not any(name == c.name for c in fausts)}
    top = ceiling.ceiling(p, peers)
    print(f"fastest pass-through: {top.name}, {top.eps:,.0f} events/s")
    print(f"ratio pipeline / fastest pass-through: {top.ratio:.2f} (target >= {ceiling.TARGET:.2f}: "
          f"{'reached' if top.reached else 'not reached'})")
    if len(runs[top.name]) == len(pipeline):  # the same machine round by round: a stable ratio agrees
        by_round = [a / b for a, b in zip(pipeline, runs[top.name])]
        print(f"  by round: {', '.join(f'{x:.2f}' for x in by_round)}, median {statistics.median(by_round):.2f}")
    for name in peers:
        if name != top.name:
            print(f"ratio pipeline / {name}: {p / peers[name]:.2f}")
    contenders = (("pipeline", FreshTablesWorker), ("pass-through", PassThroughWorker),
                  ("batched pass-through", BatchedPassThroughWorker))
    sizes = {name: BATCHES.get(cls.__name__, []) for name, cls in contenders}
    print("events per transaction, mean over the rounds: " + ", ".join(
        f"{name} {sum(v) / len(v):,.0f} ({len(v):,} transactions)" for name, v in sizes.items() if v))
    if streams is not None and streams.runs:
        per = BATCHES[KStreamsContender.__name__]
        print(f"events per transaction, kafka streams (commit.interval.ms={streams.commit_interval_ms}, one "
              f"transaction for every partition): {statistics.median(per):,.0f}, median of the rounds")
    for name, cls in (*contenders, ("kafka streams", KStreamsContender)):
        if CPU.get(cls.__name__):
            own = statistics.median(c for c, _ in CPU[cls.__name__])
            broker = statistics.median(b for _, b in CPU[cls.__name__])
            where = "its JVM (start-up included)" if cls is KStreamsContender else "this process"
            print(f"CPU per round, median, {name}: {where} {own:.1f} s, the broker {broker:.1f} s "
                  f"({1000 * (own + broker) / total:.3f} ms per event together)")
    for c in fausts:
        if c.name in rates:
            print(f"ratio pipeline / {c.name}: {p / rates[c.name]:.2f} (target >= 0.50)")
            print(f"ratio bare aiokafka pass-through / {c.name}: {b / rates[c.name]:.2f}")
    if profile is not None:
        print(f"where the time went (py-spy, native frames; raw stacks in {profile}; share of the samples "
              f"while each drained, its worker's start-up and shutdown included):")
        print_breakdown("settling pipeline", spied["pipeline"], total * rounds)
        print_breakdown("bare pass-through", spied["bare"], total * rounds)
        if spied["batched"]:
            print_breakdown("batched pass-through", spied["batched"], total * rounds)
    if fausts and fausts[0].name in rates and fausts[0].guarantee == "exactly_once":
        print("note: faust pass-through writes its outputs outside its transactions (only its offsets "
              "commit in them); the aiokafka loops commit outputs and offsets together")
    delete_floor(PREFIX)  # the broker as the run found it (the latency runs have floors of their own)


def loadavg() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds a process has used (/proc/<pid>/stat); None when it is gone."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def broker_pid() -> int | None:
    """The dev broker's pid (infra/kafka/kafka.sh's pid file), None for another broker."""
    data = Path(os.environ.get("KAFKA_DATA_DIR", REPO / ".kafka-data"))
    try:
        return int((data / "kafka.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def machine_use(before: dict, after: dict, seconds: float) -> str:
    """The run's CPU, to tell a slow machine from a slow program: the steal share of all cores,
    and each process's CPU as a share of one core over the run."""
    steal = (after["ticks"][0] - before["ticks"][0]) / max(after["ticks"][1] - before["ticks"][1], 1)
    parts = [f"steal {steal:.1%} of the cores"]
    for name in ("worker", "broker", "feed", "this process"):
        a, b = after.get(name), before.get(name)
        if a is not None and b is not None:
            parts.append(f"{name} {(a - b) / seconds:.0%} of a core")
    return "machine: " + ", ".join(parts)


def machine_snapshot(pids: dict[str, int | None]) -> dict:
    return {"ticks": stolen_time.machine_ticks(), **{name: cpu_seconds(pid) for name, pid in pids.items()}}


def latency_run(seconds: float, tables: int, min_settlements: int,
                second_reader_wait_ms: int | None = None) -> dict:
    """One latency run on topics of its own (a fresh prefix): a worker, a reader and a live floor.

    Its own topics, because a worker of a new application id starts at the earliest offset: on
    the throughput rounds' topics it first settled their whole backlog, and the live floor's first
    events queued behind it (a p99 of 217 ms). Runs until `seconds` have
    passed and at least `min_settlements` settlements were read (at most 3x `seconds`)."""
    prefix = f"bench{uuid.uuid4().hex[:6]}."
    env = {**os.environ, "CRAPS_APP_ID": f"bench-live-{uuid.uuid4().hex[:4]}", "CRAPS_TOPIC_PREFIX": prefix,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    subprocess.run([sys.executable, "-m", "craps_streams.cli", "topics"], env=env, check=True, stdout=subprocess.DEVNULL)
    web_port = free_port()
    worker = subprocess.Popen([sys.executable, "-m", "craps_streams.cli", "worker", "--web-port", str(web_port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = {"latency": [], "read_at": [], "sent_at": [], "key": []}
    second = {"latency": [], "read_at": [], "sent_at": [], "key": []}
    # latency (s) from the event; when it was read (s), to place it against the stolen seconds; its
    # record's timestamp (s): when the worker's producer sent it; (partition, offset)
    latencies, read_at, sent_at = first["latency"], first["read_at"], first["sent_at"]
    stop = threading.Event()

    def consume(out: dict, fetch_max_wait_ms: int | None):
        # A viewer reading settlements read_committed; the run's topics are new, so from the
        # earliest offset. Every partition assigned, no group: kafka-python 3.0.12's group
        # coordinator spins in poll() while records flow (py-spy: ensure_coordinator_ready,
        # poll_heartbeat, call_soon_threadsafe), which held about a core and starved the worker
        # and the broker it measures (78 % of a core for this process).
        wait = {} if fetch_max_wait_ms is None else {"fetch_max_wait_ms": fetch_max_wait_ms}
        consumer = KafkaConsumer(**client_settings("viewer"), group_id=None, isolation_level="read_committed",
                                 auto_offset_reset="earliest", enable_auto_commit=False, **wait)
        consumer.assign([TopicPartition(prefix + "settlements", p) for p in range(PARTITIONS)])
        while not stop.is_set():
            for messages in consumer.poll(timeout_ms=200).values():
                now_ms = time.time() * 1000
                for m in messages:
                    out["latency"].append((now_ms - decode_output(m.value)["ts"]) / 1000.0)
                    out["read_at"].append(now_ms / 1000.0)
                    out["sent_at"].append(m.timestamp / 1000.0)
                    out["key"].append((m.partition, m.offset))
        consumer.close()

    readers = [threading.Thread(target=consume, args=(first, None))]
    if second_reader_wait_ms is not None:
        readers.append(threading.Thread(target=consume, args=(second, second_reader_wait_ms)))
    for reader in readers:
        reader.start()
    time.sleep(8)  # the worker joins its group and owns its partitions
    loads = [loadavg()]
    pauses_from = broker_pauses.mark()
    feed = subprocess.Popen([sys.executable, "-m", "craps_streams.cli", "simulate", "--live", "--tables", str(tables),
                             "--hours", "8", "--speed", "1", "--seed", "5"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids = {"worker": worker.pid, "broker": broker_pid(), "feed": feed.pid, "this process": os.getpid()}
    machine_from = machine_snapshot(pids)
    sampler = stolen_time.StealSampler()
    sampler.start()
    start = time.monotonic()
    opening = None  # the worker's histogram once the reader is past the opening tenth
    while time.monotonic() - start < 3 * seconds:
        time.sleep(5)
        loads.append(loadavg())
        if opening is None and len(latencies) >= max(min_settlements, 1000) / 9:
            opening = committed_histogram(worker_samples(web_port))
        if time.monotonic() - start >= seconds and len(latencies) >= min_settlements / 0.9:
            break
    machine = machine_use(machine_from, machine_snapshot(pids), time.monotonic() - start)
    stolen = sampler.stop()
    feed.terminate()
    pauses = broker_pauses.pauses_since(pauses_from)
    fed_seconds = time.monotonic() - start
    time.sleep(2)
    at_end = worker_samples(web_port)  # one scrape: the commit histogram and the collections
    worker_side = within(committed_histogram(at_end), opening)
    collections_ = gc_pauses(at_end)
    stop.set()
    for reader in readers:
        reader.join()
    worker.terminate()
    worker.wait(30)
    # Each run leaves the broker as it found it, so every run meets the same broker (a run's 40
    # partitions left behind raise the next run's p50).
    delete_floor(prefix)
    # The first tenth carries the floor's opening burst (every table opens, every player bets at once).
    skip = len(latencies) // 10
    steady = latencies[skip:]
    tail = stolen_time.split_tail(stolen, list(zip(read_at[skip:], steady)))
    machine += (f"; worst 10 s steal {stolen_time.worst_window(stolen):.0%}, {tail.stolen_seconds} s with steal >= 10 %"
                f"; settlements over 100 ms: {tail.over}, {tail.over_in_stolen} of them waited through such a second")
    if tail.p99_clear is not None:
        machine += f"; p99 of the {tail.clear:,} that met none {tail.p99_clear * 1000:.1f} ms"
    split = legs(steady, read_at[skip:], sent_at[skip:])
    if second_reader_wait_ms is not None:
        split = (split or "") + "\n  " + compare_readers(first, second, skip, second_reader_wait_ms)
    if len(steady) < 100:
        return {"settlements": len(steady), "p50": 0.0, "p99": 0.0, "max": 0.0, "load": statistics.median(loads),
                "machine": machine}
    q = statistics.quantiles(steady, n=100)
    reader_side = {le: sum(1 for x in steady if x <= le) / len(steady) for le in WITHIN}
    return {"settlements": len(steady), "p50": q[49] * 1000, "p99": q[98] * 1000, "max": max(steady) * 1000,
            "load": statistics.median(loads), "seconds": time.monotonic() - start,
            "worker": worker_side, "reader": reader_side,
            "broker": broker_pauses.summary(pauses, fed_seconds), "gc": collections_, "machine": machine,
            "legs": split}


def compare_readers(first: dict, second: dict, skip: int, wait_ms: int) -> str:
    """The same settlements read by a second reader with another fetch_max_wait_ms: whether the
    first reader's late ones were late for it too (the broker showed them late) or not (the
    reader's fetch waited)."""
    theirs = dict(zip(second["key"], second["latency"]))
    mine = list(zip(first["key"][skip:], first["latency"][skip:]))
    both = [(lat, theirs[k]) for k, lat in mine if k in theirs]
    if len(both) < 100:
        return f"a second reader (fetch_max_wait_ms {wait_ms}): too few settlements in common ({len(both)})"
    p99 = lambda xs: statistics.quantiles(xs, n=100)[98] * 1000  # noqa: E731
    late = [b for a, b in both if a > 0.1]
    return (f"a second reader (fetch_max_wait_ms {wait_ms}) on the same {len(both):,}: p99 {p99([b for _, b in both]):.1f} ms "
            f"(the first {p99([a for a, _ in both]):.1f}), {sum(1 for _, b in both if b > 0.1)} over 100 ms; "
            f"of the first's {len(late)} over 100 ms, {sum(1 for b in late if b > 0.1)} were over 100 ms for it too")


def legs(steady: list[float], read_at: list[float], sent_at: list[float]) -> str | None:
    """Where the time went, cut at the worker's send (the settlement record's CreateTime, one
    clock with the event's on this machine): event to the worker's send (the feed's produce, the
    worker's fetch, settling) and the send to the read (the write, the offsets, the commit and its
    markers, the reader's fetch); p50 and p99 of each, and their medians among the settlements
    over 100 ms, to tell a worker that settled late from a commit that became visible late."""
    if len(steady) < 100:
        return None
    before = [sent - (read - lat) for lat, read, sent in zip(steady, read_at, sent_at)]
    after = [read - sent for read, sent in zip(read_at, sent_at)]
    qb, qa = statistics.quantiles(before, n=100), statistics.quantiles(after, n=100)
    text = (f"event to the worker's send p50 {qb[49] * 1000:.1f} p99 {qb[98] * 1000:.1f} ms; "
            f"the send to the read p50 {qa[49] * 1000:.1f} p99 {qa[98] * 1000:.1f} ms")
    slow = [i for i, lat in enumerate(steady) if lat > 0.1]
    if slow:
        text += (f"; the {len(slow)} over 100 ms: median {statistics.median(before[i] for i in slow) * 1000:.0f} ms "
                 f"before the send, {statistics.median(after[i] for i in slow) * 1000:.0f} ms after it")
    return text


WITHIN = (0.025, 0.05, 0.1)  # buckets of the worker's craps_settlement_latency_seconds


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_samples(port: int) -> list | None:
    """One scrape of the worker's /metrics, as prometheus_client samples; None when the worker
    does not answer."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    return [sample for family in text_string_to_metric_families(text) for sample in family.samples]


def committed_histogram(samples: list | None) -> dict[float, float] | None:
    """The worker's own view: settlements by time from their event to their transaction's commit
    (craps_settlement_latency_seconds, cumulative bucket counts), to tell a slow commit from a slow
    read of a committed one. None when the worker did not answer."""
    if samples is None:
        return None
    return {float(s.labels["le"]): s.value for s in samples if s.name == "craps_settlement_latency_seconds_bucket"}


def gc_pauses(samples: list | None) -> str | None:
    """The worker's collections over the whole run (craps_gc_pause_seconds): per generation,
    how many, their total, and how many took 10 ms or more."""
    if samples is None:
        return None
    count, total, under = {}, {}, {}
    for sample in samples:
        g = sample.labels.get("generation")
        if sample.name == "craps_gc_pause_seconds_count":
            count[g] = sample.value
        elif sample.name == "craps_gc_pause_seconds_sum":
            total[g] = sample.value
        elif sample.name == "craps_gc_pause_seconds_bucket" and float(sample.labels["le"]) == 0.01:
            under[g] = sample.value
    return "; ".join(f"generation {g}: {count[g]:.0f} collections, {total[g] * 1000:.0f} ms in all, "
                     f"{count[g] - under.get(g, 0):.0f} of 10 ms or more" for g in sorted(count))


def within(end: dict | None, opening: dict | None) -> dict[float, float] | None:
    """Share of the settlements committed after the opening burst within each of WITHIN."""
    if not end:
        return None
    opening = opening or {}
    total = end[float("inf")] - opening.get(float("inf"), 0.0)
    if total <= 0:
        return None
    return {le: (end[le] - opening.get(le, 0.0)) / total for le in WITHIN}


def latency(seconds: float, tables: int, runs: int = 1, min_settlements: int = 0,
            second_reader_wait_ms: int | None = None) -> None:
    results = []
    for r in range(runs):
        x = latency_run(seconds, tables, min_settlements, second_reader_wait_ms)
        results.append(x)
        print(f"latency run {r + 1} ({tables} tables, real pace, {x['settlements']:,} settlements, "
              f"load average {x['load']:.1f} on {os.cpu_count()} cores): p50 {x['p50']:.1f} ms, "
              f"p99 {x['p99']:.1f} ms, max {x['max']:.0f} ms", flush=True)
        if x.get("reader"):
            shares = lambda d: ", ".join(f"{d[le]:.2%} within {le * 1000:.0f} ms" for le in WITHIN)  # noqa: E731
            print(f"  read by a read_committed reader: {shares(x['reader'])}")
            print(f"  committed by the worker (its histogram): "
                  f"{shares(x['worker']) if x.get('worker') else 'not available'}", flush=True)
        if x.get("legs"):
            print(f"  {x['legs']}", flush=True)
        if x.get("broker"):
            print(f"  {x['broker']}", flush=True)
        if x.get("gc"):
            print(f"  the worker's garbage collections: {x['gc']}", flush=True)
        print(f"  {x['machine']}", flush=True)
    p99s = [x["p99"] for x in results]
    print(f"latency p99, median of {runs} runs: {statistics.median(p99s):.1f} ms (target < 50 ms), "
          f"highest {max(p99s):.1f} ms (target none above 100 ms); first run {p99s[0]:.1f} ms")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", type=int, default=40)
    p.add_argument("--hours", type=float, default=6)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--latency-seconds", type=float, default=60)
    p.add_argument("--latency-tables", type=int, default=200)
    p.add_argument("--latency-runs", type=int, default=1, help="latency runs, each on topics of its own")
    p.add_argument("--min-settlements", type=int, default=0, help="a latency run lasts until this many")
    p.add_argument("--second-reader-wait-ms", type=int, default=None,
                   help="a second read_committed reader with this fetch_max_wait_ms on the same settlements "
                        "(kafka-python's default is 500), to tell a late commit from a waiting reader")
    p.add_argument("--no-faust", action="store_true", help="skip the Faust pass-through contender")
    p.add_argument("--faust-tx-sink", action="store_true",
                   help="also run a Faust pass-through whose outputs go through its transactional producers")
    p.add_argument("--faust-guarantee", choices=("exactly_once", "at_least_once"), default="exactly_once",
                   help="processing_guarantee of the Faust contenders (default exactly_once)")
    p.add_argument("--skip-throughput", action="store_true", help="run the latency part only")
    p.add_argument("--batched-pass-through", action=argparse.BooleanOptionalAction, default=True,
                   help="the pass-through sending its records in record batches, as the worker does (default on)")
    p.add_argument("--no-kstreams", action="store_true",
                   help="skip the Kafka Streams pass-through (it runs when a JDK and Maven are present)")
    p.add_argument("--kstreams-commit-interval-ms", type=int, default=100,
                   help="Kafka Streams' commit.interval.ms (default 100, its own default under exactly_once_v2; "
                        "0 commits after every record of each task)")
    p.add_argument("--profile", type=Path, default=None, metavar="DIR",
                   help="sample each throughput round with py-spy (as root, or with ptrace allowed) into DIR "
                        "and print the settling worker's CPU by stage")
    args = p.parse_args()
    if args.profile is not None and subprocess.run(["sh", "-c", "command -v py-spy"], capture_output=True).returncode:
        p.error("--profile needs py-spy on PATH (pip install py-spy)")
    # The worker checks every event's tag and the live floor tags what it sends: both need the
    # dev floor's key ring, made here on a fresh clone (as `make run` does).
    keyfile.init(SETTINGS.key_ring_path)
    create_topics(floor=SETTINGS.topics, app_id=SETTINGS.app_id)
    if not args.skip_throughput:
        throughput(args.tables, args.hours, args.rounds, faust=not args.no_faust,
                   faust_tx_sink=args.faust_tx_sink, faust_guarantee=args.faust_guarantee, profile=args.profile,
                   batched_bare=args.batched_pass_through, kstreams=not args.no_kstreams,
                   kstreams_commit_interval_ms=args.kstreams_commit_interval_ms)
    if args.latency_seconds > 0:
        latency(args.latency_seconds, args.latency_tables, args.latency_runs, args.min_settlements,
                args.second_reader_wait_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
