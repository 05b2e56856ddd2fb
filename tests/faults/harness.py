"""The fault tests' harness: a floor and what `craps-streams replay` makes of it, a paced
feeder, a concurrent read_committed collector, the group's committed offsets, the worker's metrics,
a private broker, and the checks.

The checker follows Kafka's own transactions system test: the input is a fixed file, a consumer
reads the output topic read_committed while the faults happen, and at the end the set of outputs
must equal the set a fault-free run derives (here: `craps-streams replay` of the same file), each
exactly once and byte for byte. Table states are compared with the replay's final states, and the
money with the live workers' /metrics counters.

Used by tests/faults/test_faults.py (CI sizes) and benchmarks/faults.py (bigger runs, the soak).
"""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from craps_streams.codec import decode_output, encode_output
from craps_streams.kafka.producers import HANGING_KEY
from craps_streams.kafka.settings import client_settings
from craps_streams.replay.engine import Replay, json_lines
from tests.conftest import ROOT, Pipeline, free_port

PARTITIONS = 8
KAFKA_SH = ROOT / "infra" / "kafka" / "kafka.sh"
MONEY = ("craps_handle_cents_total", "craps_stakes_collected_cents_total",
         "craps_stakes_returned_cents_total", "craps_won_cents_total")


def canonical(record) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def log(msg: str) -> None:
    print(f"[faults {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ the run: topics and workers


class FaultRun(Pipeline):
    """tests/conftest.py's Pipeline (own topic prefix and app id) with the fault tests' timeouts:
    short group sessions and transactions, so takeovers and fencing happen in seconds."""

    def __init__(self, tmp: pathlib.Path, bootstrap: str, session_ms: int = 6000,
                 transaction_ms: int = 10000):
        super().__init__(tmp, bootstrap)
        self.app_id = f"craps-faults-{uuid.uuid4().hex[:8]}"
        self.env.update({"CRAPS_APP_ID": self.app_id,
                         "CRAPS_SESSION_TIMEOUT_MS": str(session_ms),
                         "CRAPS_TRANSACTION_TIMEOUT_MS": str(transaction_ms)})
        self.session_s = session_ms / 1000
        self.transaction_s = transaction_ms / 1000

    def topic(self, name: str) -> str:
        return self.prefix + name

    def collector(self, name: str = "settlements") -> Collector:
        """A concurrent read_committed reader of one of this run's topics, started."""
        collector = Collector(self.bootstrap, self.topic(name))
        self.collectors = getattr(self, "collectors", []) + [collector]
        collector.start()
        return collector

    def close(self) -> None:
        for collector in getattr(self, "collectors", []):
            collector.stop()
        super().close()

    def live_workers(self) -> list:
        return [w for w in self.workers if w.poll() is None]


def log_text(worker) -> str:
    return pathlib.Path(worker.log_path).read_text(errors="replace")


def owned_partitions(worker, since: int = 0) -> set[int]:
    """Partitions the worker took over (its log, from character `since`)."""
    return {int(p) for p in re.findall(r"partition (\d+) owned", log_text(worker)[since:])}


def state_rebuild_seconds(worker, since: int = 0) -> list[float]:
    """How long each takeover's read of the state changelog took (the worker's log)."""
    return [float(s) for s in re.findall(r"table states recovered in ([\d.]+) s", log_text(worker)[since:])]


def wait_until(predicate, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


# ------------------------------------------------------------------ the floor and its replay


@dataclasses.dataclass
class Floor:
    path: pathlib.Path
    lines: list[str]
    settlements: dict[str, bytes]  # id -> the Avro record, from `craps-streams replay`
    states: dict[str, str]  # table id -> final state, canonical JSON
    money: dict[tuple, list[int]]  # (table, wager, paytable) -> [handle, collected, returned, won]


def replay_states(lines: list[str]) -> dict[str, str]:
    replay = Replay()
    for record, where in json_lines(lines, "floor"):
        replay.feed_record(record, where)
    return {table: canonical(state.to_record()) for table, state in replay.tables.items()}


def make_floor(run: FaultRun, tables: int, hours: float, seed: int, name: str = "floor") -> Floor:
    """`craps-streams simulate` (no bad input) and `craps-streams replay` of it."""
    path = run.tmp / f"{name}.jsonl"
    run.run("simulate", "--tables", str(tables), "--hours", str(hours), "--seed", str(seed),
            "--bad-rate", "0", "-o", str(path))
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    return expected_of(run, path, lines)


def expected_of(run: FaultRun, path: pathlib.Path, lines: list[str]) -> Floor:
    replayed = path.with_suffix(".replay.jsonl")
    run.run("replay", str(path), "--only", "settlements", "--no-progress", "-o", str(replayed))
    settlements = {}
    for line in replayed.read_text().splitlines():
        record = json.loads(line)
        settlements[record["id"]] = encode_output(record)
    money = money_of(json.loads(line) for line in replayed.read_text().splitlines())
    return Floor(path, lines, settlements, replay_states(lines), money)


def money_of(settlements) -> dict[tuple, list[int]]:
    """The hold recomputed from settlement records: handle, collected, returned, won per key."""
    out: dict[tuple, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
    for s in settlements:
        line = out[(s["table_id"], s["wager"], s["paytable"])]
        line[0] += s["stake_cents"]
        if s["outcome"] == "lose":
            line[1] += s["stake_cents"]
        else:
            line[2] += s["stake_cents"]
            line[3] += s["won_cents"]
    return dict(out)


# ------------------------------------------------------------------ the feed


class Feeder:
    """`craps-streams produce -` fed `lines` at `rate` events/s through its stdin."""

    def __init__(self, run: FaultRun, lines: list[str], rate: float, name: str = "feed"):
        self.run, self.lines, self.rate, self.name = run, lines, rate, name
        self.sent = 0
        self.proc: subprocess.Popen | None = None
        self.thread = threading.Thread(target=self._feed, daemon=True)
        self.error: BaseException | None = None

    def start(self) -> Feeder:
        out = open(self.run.tmp / f"{self.name}.log", "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "craps_streams.cli", "produce", "-", "--quiet"],
                                     env=self.run.env, cwd=ROOT, stdin=subprocess.PIPE, stdout=out,
                                     stderr=subprocess.STDOUT)
        self.started = time.monotonic()
        self.thread.start()
        return self

    def _feed(self) -> None:
        try:
            n = len(self.lines)
            while self.sent < n:
                due = min(n, int((time.monotonic() - self.started) * self.rate) + 1)
                if due > self.sent:
                    self.proc.stdin.write(("\n".join(self.lines[self.sent:due]) + "\n").encode())
                    self.proc.stdin.flush()
                    self.sent = due
                time.sleep(0.02)
        except BaseException as e:  # noqa: BLE001 - reported by wait()
            self.error = e
        finally:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    @property
    def done(self) -> bool:
        return not self.thread.is_alive()

    def wait(self, timeout: float = 300) -> None:
        self.thread.join(timeout)
        rc = self.proc.wait(timeout)
        text = (self.run.tmp / f"{self.name}.log").read_text(errors="replace")
        assert self.error is None, f"feeding the producer failed: {self.error!r}"
        assert rc == 0, f"`craps-streams produce` exited with {rc}:\n{text[-2000:]}"
        assert f"sent {len(self.lines):,} events" in text, f"the producer did not send everything:\n{text[-2000:]}"

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


# ------------------------------------------------------------------ reading topics


def _consumer(bootstrap: str, isolation: str = "read_committed") -> KafkaConsumer:
    # The checker reads everything: it logs in as the administrator (whose settings carry a timeout
    # of their own, replaced here).
    settings = {**client_settings("admin", bootstrap), "request_timeout_ms": 10000}
    return KafkaConsumer(**settings, group_id=None, enable_auto_commit=False,
                         client_id=f"craps-faults-{uuid.uuid4().hex[:6]}", isolation_level=isolation,
                         auto_offset_reset="earliest", reconnect_backoff_max_ms=1000,
                         max_partition_fetch_bytes=8 * 1024 * 1024)


class Collector(threading.Thread):
    """Reads a topic from the beginning while the scenario runs (read_committed by default), like
    the transactions system test's concurrent consumer. `records`: (partition, offset, value)."""

    def __init__(self, bootstrap: str, topic: str, isolation: str = "read_committed"):
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.isolation = bootstrap, topic, isolation
        self.records: list[tuple[int, int, bytes]] = []
        self.positions: dict[int, int] = {}
        self.stopping = threading.Event()
        self.errors = 0
        self._decoded: list[dict] = []

    def run(self) -> None:
        consumer = _consumer(self.bootstrap, self.isolation)
        try:
            partitions = [TopicPartition(self.topic, p) for p in range(PARTITIONS)]
            consumer.assign(partitions)
            consumer.seek_to_beginning(*partitions)
            while not self.stopping.is_set():
                try:
                    polled = consumer.poll(timeout_ms=200, max_records=5000)
                except Exception:  # noqa: BLE001 - a broker restart: keep reading
                    self.errors += 1
                    time.sleep(0.5)
                    continue
                for tp, messages in polled.items():
                    self.records.extend((tp.partition, m.offset, m.value) for m in messages)
                    if messages:
                        self.positions[tp.partition] = messages[-1].offset + 1
        finally:
            consumer.close()

    def decoded(self) -> list[dict]:
        """The records read so far, decoded (incrementally)."""
        records = self.records
        for partition, offset, value in records[len(self._decoded):len(records)]:
            self._decoded.append(decode_output(value) | {"_raw": value})
        return self._decoded

    def ids(self) -> set[str]:
        return {r["id"] for r in self.decoded()}

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)


def read_all(bootstrap: str, topic: str, isolation: str = "read_committed", timeout: float = 120) -> list:
    """Every message of the topic up to its end offsets now (the last stable offsets when
    read_committed)."""
    consumer = _consumer(bootstrap, isolation)
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        end = consumer.end_offsets(partitions)
        out = []
        deadline = time.monotonic() + timeout
        while any(consumer.position(tp) < end[tp] for tp in partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: could not read to the end offsets in {timeout} s")
            for tp, messages in consumer.poll(timeout_ms=500, max_records=10000).items():
                out.extend(m for m in messages if m.offset < end[tp])
        return out
    finally:
        consumer.close()


def aborted_records(bootstrap: str, topic: str) -> int:
    """Records of aborted transactions on the topic: below the last stable offsets, the records a
    read_uncommitted reader gets and a read_committed one does not."""
    committed = read_all(bootstrap, topic)
    seen = {(m.partition, m.offset) for m in committed}
    stable = {}
    for m in committed:
        stable[m.partition] = max(stable.get(m.partition, 0), m.offset)
    # The takeovers' own aborted records (craps_streams.kafka.producers.abort_hanging) are not outputs.
    return sum(1 for m in read_all(bootstrap, topic, "read_uncommitted")
               if m.offset < stable.get(m.partition, -1) and (m.partition, m.offset) not in seen
               and m.key != HANGING_KEY)


def last_states(bootstrap: str, topic: str) -> dict[str, dict]:
    """The last committed record per table of the state changelog: {"table": state, "hold": book}."""
    states = {}
    for m in read_all(bootstrap, topic):
        if m.key is not None:
            states[m.key.decode()] = json.loads(m.value) if m.value is not None else None
    return {k: v for k, v in states.items() if v is not None}


def stored_hashes(stored: dict[str, dict]) -> dict[str, str]:
    """sha256 of each stored record as canonical JSON (what the workers' /state shows)."""
    return {table: sha(canonical(record)) for table, record in stored.items()}


def differing_tables(stored: dict[str, dict], states: dict[str, str], money: dict[tuple, list[int]]) -> list[str]:
    """Tables whose stored record differs from the replay: the game state (canonical JSON) and
    the hold book's money (handle, collected, returned, won per wager kind and paytable)."""
    from craps_streams.surveillance.hold_watch import HoldBook

    out = []
    for table in sorted(states.keys() | stored.keys()):
        record = stored.get(table)
        if record is None or table not in states:
            out.append(table)
            continue
        game = record["table"] if "table" in record else record
        if canonical(game) != states[table]:
            out.append(table)
            continue
        if "hold" in record:
            book = {(table, w, p): [line.handle_cents, line.collected_cents, line.returned_cents, line.won_cents]
                    for (w, p), line in HoldBook.from_record(record["hold"]).lines.items()}
            if book != {k: v for k, v in money.items() if k[0] == table}:
                out.append(table)
    return out


class TxnWatch:
    """Spots a transaction in flight: a partition of a topic whose high watermark (what
    read_uncommitted sees) is past its last stable offset, i.e. records written, not committed."""

    def __init__(self, bootstrap: str, topic: str):
        self.tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        self.uncommitted = _consumer(bootstrap, "read_uncommitted")
        self.committed = _consumer(bootstrap, "read_committed")

    def open_partitions(self) -> list[int]:
        try:
            hw = self.uncommitted.end_offsets(self.tps)
            lso = self.committed.end_offsets(self.tps)
        except (KafkaError, OSError):
            return []
        return [tp.partition for tp in self.tps if hw[tp] > lso[tp]]

    def close(self) -> None:
        self.uncommitted.close()
        self.committed.close()


def owner_of(partition: int, workers: list):
    """The live worker whose log shows it owns `partition` now."""
    for worker in workers:
        if worker.poll() is not None:
            continue
        owned = set()
        for m in re.finditer(r"partition (\d+) (owned|released)", log_text(worker)):
            (owned.add if m.group(2) == "owned" else owned.discard)(int(m.group(1)))
        if partition in owned:
            return worker
    return None


# ------------------------------------------------------------------ the group's progress


class GroupWatch:
    """End offsets of the table events and the group's committed offsets: lag and catch-up."""

    def __init__(self, run: FaultRun):
        self.run = run
        self.tps = [TopicPartition(run.topic("table-events"), p) for p in range(PARTITIONS)]
        self._admin = None
        self._consumer = None

    def _clients(self):
        if self._admin is None:
            # The watch's own timeouts override the role's (client_settings gives the admin one).
            self._admin = KafkaAdminClient(**{**client_settings("admin", self.run.bootstrap),
                                              "reconnect_backoff_max_ms": 1000, "request_timeout_ms": 5000,
                                              "client_id": "craps-faults-watch"})
        if self._consumer is None:
            self._consumer = _consumer(self.run.bootstrap)
        return self._admin, self._consumer

    # Each client is dropped on its own failure only: a partition of the table events led by a
    # node cut off fails the end offsets for seconds, and the committed offsets, asked of the
    # group's coordinator elsewhere, must not go dark with them (a new admin client bootstraps
    # again, through the node that does not answer as well as the others).
    def _reset(self, which: str = "both") -> None:
        for name in (("_admin", "_consumer") if which == "both" else (which,)):
            client = getattr(self, name)
            try:
                client and client.close()
            except Exception:  # noqa: BLE001
                pass
            setattr(self, name, None)

    def ends(self) -> dict[int, int] | None:
        try:
            _, consumer = self._clients()
            return {tp.partition: o for tp, o in consumer.end_offsets(self.tps).items()}
        except (KafkaError, OSError):  # the broker away
            self._reset("_consumer")
            return None

    def committed(self) -> dict[int, int] | None:
        try:
            admin, _ = self._clients()
            offsets = admin.list_group_offsets({self.run.app_id: None})[self.run.app_id]
            return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == self.tps[0].topic}
        except (KafkaError, OSError):
            self._reset("_admin")  # and with it its cached answer to FindCoordinator
            return None

    def lag(self) -> int | None:
        ends, committed = self.ends(), self.committed()
        if ends is None or committed is None:
            return None
        return sum(max(0, end - committed.get(p, 0)) for p, end in ends.items())

    def caught_up(self, target: dict[int, int]) -> bool:
        committed = self.committed()
        return committed is not None and all(committed.get(p, 0) >= o for p, o in target.items())

    def wait_ends(self, timeout: float = 60) -> dict[int, int]:
        return wait_until(self.ends, timeout, "the table-events end offsets")

    def recovery(self, since: float, target: dict[int, int], timeout: float = 120) -> float:
        """Seconds from `since` (monotonic) until every event that was in the topic then (`target`)
        is settled and committed, on every partition: the moved ones settle again."""
        wait_until(lambda: self.caught_up(target), timeout, "the group to catch up", interval=0.1)
        return time.monotonic() - since

    def settled_count(self) -> int:
        """Input events settled and committed so far (offsets are contiguous from 0)."""
        committed = self.committed()
        return sum(committed.values()) if committed else 0

    def recovery_count(self, since: float, count: int, timeout: float = 180) -> float:
        """Seconds from `since` until the first `count` events fed (all partitions together) are
        settled and committed: for a broker restart, the producer's backlog included."""
        wait_until(lambda: self.settled_count() >= count, timeout, f"{count} events settled", interval=0.1)
        return time.monotonic() - since

    def close(self) -> None:
        self._reset()


# ------------------------------------------------------------------ the workers' web server


def http_json(port: int, path: str):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return json.load(r)


def metrics_money(ports: list[int]) -> dict[tuple, list[int]]:
    """The money counters summed over the live workers' /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[tuple, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
    for port in ports:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name in MONEY:
                    key = (sample.labels["table"], sample.labels["wager"], sample.labels["paytable"])
                    out[key][MONEY.index(sample.name)] += int(round(sample.value))
    return {k: v for k, v in out.items() if any(v)}


# ------------------------------------------------------------------ a private broker


class PrivateBroker:
    """A broker of its own (data dir, ports) for the scenarios that stop it: the shared one on
    9092 is never touched. Always stopped at the end."""

    def __init__(self, tmp: pathlib.Path):
        self.port, self.controller_port = free_port(), free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        self.env = {**os.environ, "KAFKA_DATA_DIR": str(tmp / "kafka-private"),
                    "KAFKA_PORT": str(self.port), "KAFKA_CONTROLLER_PORT": str(self.controller_port)}
        self.bootstrap = f"127.0.0.1:{self.port}"

    def sh(self, command: str, timeout: float = 180) -> None:
        r = subprocess.run(["bash", str(KAFKA_SH), command], env=self.env, capture_output=True, text=True,
                           timeout=timeout)
        assert r.returncode == 0, f"kafka.sh {command} (private broker) failed:\n{r.stderr[-3000:]}"

    def __enter__(self) -> PrivateBroker:
        try:
            self.sh("up")
        except BaseException:
            self.sh("stop")  # started but never ready: never leave it running
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.sh("stop")


# ------------------------------------------------------------------ the verdict


@dataclasses.dataclass
class Verdict:
    scenario: str
    events_in: int
    expected: int
    settlements_out: int = 0
    lost: int = 0
    duplicated: int = 0
    extra: int = 0
    mismatched: int = 0  # settlements whose bytes differ from the replay's
    collector_agrees: bool = True  # the concurrent reader saw exactly what a final read sees
    states_compared: int = 0
    states_differing: int = 0
    aborted_outputs: int = 0  # settlement records of aborted transactions (read_uncommitted - committed)
    money_keys: int = 0
    money_differing: list = dataclasses.field(default_factory=list)
    money_error: str = ""
    recovery: str = ""
    notes: list = dataclasses.field(default_factory=list)

    @property
    def exactly_once(self) -> bool:
        return not (self.lost or self.duplicated or self.extra or self.mismatched or self.states_differing) \
            and self.collector_agrees and self.settlements_out == self.expected

    @property
    def money_ok(self) -> bool:
        return not self.money_differing and not self.money_error

    def explain(self) -> str:
        return (f"{self.scenario}: expected {self.expected}, out {self.settlements_out}, lost {self.lost}, "
                f"duplicated {self.duplicated}, extra {self.extra}, bytes differing {self.mismatched}, "
                f"concurrent reader agrees {self.collector_agrees}, tables differing "
                f"{self.states_differing}/{self.states_compared}; notes: {'; '.join(self.notes)}")

    def explain_money(self) -> str:
        if self.money_error:
            return f"{self.scenario}: money check could not run: {self.money_error}"
        shown = "; ".join(f"{k}: settlements {a} vs /metrics {b}" for k, a, b in self.money_differing[:5])
        return (f"{self.scenario}: the hold from the settlements topic differs from the sum of the live "
                f"workers' /metrics on {len(self.money_differing)} of {self.money_keys} (table, wager, "
                f"paytable) lines [handle, collected, returned, won]: {shown}")


def settle_everything(run: FaultRun, floor: Floor, collector: Collector, watch: GroupWatch,
                      timeout: float = 180) -> None:
    """Wait until the group committed every input event and the reader has every settlement."""
    ends = watch.wait_ends()
    assert sum(ends.values()) >= len(floor.lines), f"only {sum(ends.values())} of {len(floor.lines)} events in"
    wait_until(lambda: watch.caught_up(ends), timeout, "every table event settled and committed")
    wait_until(lambda: len(collector.ids() & floor.settlements.keys()) == len(floor.settlements)
               or None, 60, "the reader to see every expected settlement")


def duplicate_evidence(run: FaultRun, final: list[dict], counts: collections.Counter) -> list[str]:
    """What a failed run must leave for its cause to be found once the run is gone: where each copy of the first duplicated settlements lies
    (partition, offset), and the settling workers' own log lines about those partitions."""
    copies = collections.defaultdict(list)
    for r in final:
        if counts[r["id"]] > 1:
            copies[r["id"]].append(r["_at"])
    shown = sorted(copies.items(), key=lambda kv: kv[1])[:5]
    partitions = sorted({p for _, at in copies.items() for p, _ in at})
    notes = ["duplicated settlements, (partition, offset) of each copy: "
             + "; ".join(f"{i} {at}" for i, at in shown) + f" (partitions {partitions})"]
    mentions = re.compile(r"partition (%s)\b" % "|".join(map(str, partitions)))
    for w in run.workers:
        lines = [line for line in log_text(w).splitlines() if "craps.worker" in line and mentions.search(line)]
        notes.append(f"{pathlib.Path(w.log_path).name} on those partitions: " + " | ".join(lines[-25:]))
    return notes


def check(run: FaultRun, floor: Floor, collector: Collector, scenario: str, recovery: str = "",
          notes: list | None = None, money: bool = True) -> Verdict:
    """The exactly-once check at the end of a scenario, then the money check."""
    time.sleep(1.0)  # anything late (a zombie's commit) would land now
    collector.stop()
    seen = collector.decoded()
    final = [decode_output(m.value) | {"_raw": m.value, "_at": (m.partition, m.offset)}
             for m in read_all(run.bootstrap, run.topic("settlements"))]
    counts = collections.Counter(r["id"] for r in final)
    expected = floor.settlements
    v = Verdict(scenario, len(floor.lines), len(expected), settlements_out=len(final), recovery=recovery,
                notes=list(notes or []))
    v.duplicated = sum(c - 1 for c in counts.values() if c > 1)
    if v.duplicated:
        v.notes.extend(duplicate_evidence(run, final, counts))
    v.lost = len(expected.keys() - counts.keys())
    v.extra = len(counts.keys() - expected.keys())
    v.mismatched = sum(1 for r in final if r["id"] in expected and r["_raw"] != expected[r["id"]])
    v.collector_agrees = sorted(r["_raw"] for r in seen) == sorted(r["_raw"] for r in final)
    v.aborted_outputs = aborted_records(run.bootstrap, run.topic("settlements"))
    stored = last_states(run.bootstrap, run.topic("table-state"))
    v.states_compared = len(floor.states)
    differing = differing_tables(stored, floor.states, floor.money)
    v.states_differing = len(differing)
    if differing:
        v.notes.append(f"tables differing from the replay: {differing[:5]}")
    if money:
        money_check(v, run, final)
    return v


def wait_for_every_partition_owned(run: FaultRun, timeout: float = 60.0) -> list[int]:
    """The web ports of the live workers, once their /state routes together own every partition."""
    deadline = time.monotonic() + timeout
    while True:
        ports = [w.web_port for w in run.live_workers()]
        owned: set[int] = set()
        for port in ports:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/state", timeout=10) as r:
                owned |= set(json.loads(r.read())["partitions"])
        if owned >= set(range(PARTITIONS)) or time.monotonic() >= deadline:
            return ports
        time.sleep(0.5)


def money_check(v: Verdict, run: FaultRun, final: list[dict]) -> None:
    """Item 7: the hold recomputed from the settlements topic equals the sum over the live
    workers' /metrics counters, to the cent, per (table, wager, paytable)."""
    from_topic = money_of(final)
    try:
        # A zombie that wakes up may rejoin the group for a moment before it is fenced on them:
        # the partitions it was given move back to the survivors only at the next rebalance, after
        # every event is settled. Compare once the live workers own every partition again.
        ports = wait_for_every_partition_owned(run)
        from_metrics = metrics_money(ports)
    except OSError as e:
        v.money_error = f"/metrics of {ports}: {e!r}"
        return
    keys = from_topic.keys() | from_metrics.keys()
    v.money_keys = len(keys)
    v.money_differing = [(k, from_topic.get(k), from_metrics.get(k)) for k in sorted(keys)
                         if from_topic.get(k, [0, 0, 0, 0]) != from_metrics.get(k, [0, 0, 0, 0])]


def format_table(verdicts: list[Verdict]) -> str:
    head = ["scenario", "events in", "settlements out", "lost", "duplicated", "recovery time",
            "state = replay", "money = /metrics"]
    rows = [[v.scenario, f"{v.events_in:,}", f"{v.settlements_out:,} / {v.expected:,}", str(v.lost),
             str(v.duplicated), v.recovery or "-",
             f"{v.states_compared - v.states_differing}/{v.states_compared}",
             "yes" if v.money_ok else (f"no ({len(v.money_differing)}/{v.money_keys} lines)"
                                       if not v.money_error else "not run")] for v in verdicts]
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    fmt = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    return "\n".join([fmt(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [fmt(r) for r in rows])


def rss_kb(pid: int) -> int:
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def kill(worker, sig=signal.SIGKILL) -> None:
    if worker.poll() is None:
        worker.send_signal(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM):
            worker.wait(60)
