"""The referee of the table controllers: a simulated multi-table history, bad input included, entered
by its dealers over the controllers' line protocol while, in one run, each controller is killed -9
twice mid-stream and restarted (the dealers enter again, with their request ids, whatever got no
answer), both are cut off from the broker for over 60 s while the dealers keep entering, and one
controller's journal disk (ext4 on a loop device) fills and frees again. Afterwards the settlements
topic equals a replay of exactly the events the controllers acknowledged, wager by wager (0 lost,
0 extra, 0 twice), and every refused entry was refused at the input, with its reason.

The cut is the project's network cut (tests/faults/network_cut.py): the controllers run in a cgroup
of their own and the cut drops every packet of their inet sockets both ways, so they see a dead
network while the dealers (Unix sockets), the worker and the shared broker on 9092 carry on. Not a
private broker: one would need its own login, ACLs, topics and worker, and tens of seconds to start
and again to restart. Not a TCP proxy: the broker advertises 127.0.0.1:9092 in its metadata, so the
clients leave a proxy after their bootstrap and a proxy would cut only that first connection.
Needs root (cgroup BPF, mount), as the fault drills do.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path

import pytest

from craps_streams.authenticity import TagCheck
from craps_streams.authenticity import keyfile
from craps_streams.codec import decode_event
from craps_streams.controller.service import journal_depth
from craps_streams.kafka.reader import read_committed
from craps_streams.replay.engine import Replay
from craps_streams.rules.contract import ContractError, record_to_event
from craps_streams.sim.dealers import Pace, entry_of
from craps_streams.sim.floor import floor_events
from tests.conftest import ROOT, wait_for
from tests.controller.test_journal_disk import fill, loop_disk
from tests.faults import network_cut
from tests.pipeline.test_pipeline import committed, expected_settlement_bytes

pytestmark = pytest.mark.kafka

TABLES, PER_CONTROLLER, HOURS, SEED, BAD_RATE = 6, 3, 0.5, 11, 0.05
SPEED = 20.0  # the half hour's history in about 92 s
CUT_S = 62.0


@dataclass(eq=False)
class Line:
    n: int  # its place in the history
    data: bytes
    tries: int = 0
    sent: float = 0.0
    wall_ms: int = 0

    def entered(self) -> None:
        self.tries += 1
        self.sent, self.wall_ms = time.monotonic(), time.time_ns() // 1_000_000


class Door:
    """The dealers' connection to one controller's Unix socket: lines entered in order, answered in
    order. When the controller dies, the lines it left unanswered are entered again, same bytes and
    request ids, once it listens again: one it had journaled is answered with the seq it has."""

    def __init__(self, path: Path):
        self.path = path
        self.queue: asyncio.Queue = asyncio.Queue()
        self.unanswered: deque = deque()
        self.answers: dict[int, dict] = {}
        self.waits: list[float] = []  # entered to answered, lines answered at their first entry
        self.entered_again = 0
        self.kept = 0  # lines entered again and answered with the seq the dead controller had given them
        self.ended = False

    async def run(self) -> None:
        while True:
            try:
                reader, writer = await asyncio.open_unix_connection(str(self.path))
            except OSError:
                await asyncio.sleep(0.05)
                continue
            for line in self.unanswered:
                line.entered()
                writer.write(line.data)
            self.entered_again += len(self.unanswered)
            if self.ended:
                writer.write_eof()
            pump = asyncio.create_task(self._pump(writer))
            while (got := await _line(reader)).endswith(b"\n"):
                line = self.unanswered.popleft()
                answer = self.answers[line.n] = json.loads(got)
                if line.tries == 1:
                    self.waits.append(time.monotonic() - line.sent)
                elif answer.get("ts", line.wall_ms) < line.wall_ms:  # stamped before it was entered again
                    self.kept += 1
            pump.cancel()
            await asyncio.gather(pump, return_exceptions=True)
            writer.close()
            if self.ended and not self.unanswered:
                return

    async def _pump(self, writer) -> None:
        while not self.ended:
            line = await self.queue.get()
            if line is None:
                self.ended = True
                writer.write_eof()
                return
            line.entered()
            self.unanswered.append(line)  # before any await: a cancel cannot lose it
            writer.write(line.data)
            await writer.drain()


async def _line(reader) -> bytes:
    """The next answer; a torn one (or none) when the controller died."""
    try:
        return await reader.readline()
    except ConnectionError:
        return b""


class Station:
    """One controller process (its tables, journal, socket), started in the cut's cgroup."""

    def __init__(self, pipeline, tables, journal: Path, sock: Path, cgroup: Path):
        self.pipeline, self.tables, self.journal, self.sock, self.cgroup = pipeline, tables, journal, sock, cgroup
        self.proc: subprocess.Popen | None = None
        self.log = pipeline.tmp / f"controller-{tables[0]}.log"

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "craps_streams.cli", "controller", "--tables", ",".join(self.tables),
                 "--journal", str(self.journal), "--socket", str(self.sock), "--shared-key-file", "--loglevel", "info"],
                env=self.pipeline.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=network_cut.enter(self.cgroup))
        wait_for(self.listening, 60, f"the controller of {self.tables} listening", interval=0.05)

    def listening(self) -> bool:
        assert self.proc.poll() is None, self.log.read_text()[-3000:]
        with socket.socket(socket.AF_UNIX) as s:
            try:
                s.connect(str(self.sock))
                return True
            except OSError:
                return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def contract_refuses(record) -> bool:
    """The oracle of bad input: a torn line, or a record the worker's contract refuses."""
    if type(record) is not dict:
        return True
    try:
        record_to_event(record)
    except ContractError:
        return True
    return False


def journaled(path: Path) -> dict:
    """(table, seq) -> (request_id, value, sent_ns) of every event in a journal."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {(t, s): (r, bytes(v), sent) for t, s, r, v, sent in
                db.execute("SELECT table_id, seq, request_id, value, sent_ns FROM events")}
    finally:
        db.close()  # the journal's disk is unmounted next


def at(q: float, xs: list) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000


@pytest.fixture
def cgroup():
    """The controllers' cgroup, the one the cut silences; removed once they are gone."""
    assert network_cut.available() is None, network_cut.available()
    path = network_cut.make_cgroup(f"craps-referee-{os.getpid()}")
    yield path
    network_cut.remove_cgroup(path)


@pytest.fixture
def short():
    """A directory for the controllers' Unix sockets, whose paths are at most 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="ref-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_controllers_killed_cut_off_and_out_of_disk_settle_exactly_what_they_acknowledged(pipeline, tmp_path, cgroup,
                                                                                          short):
    started = time.monotonic()
    history = list(floor_events(TABLES, HOURS, SEED, BAD_RATE, time.time_ns() // 1_000_000))
    tables = keyfile.dev_floor_tables(TABLES)
    groups = [tables[i:i + PER_CONTROLLER] for i in range(0, TABLES, PER_CONTROLLER)]
    cut = network_cut.Cut(cgroup)
    with loop_disk(tmp_path, 32) as disk:
        stations = [Station(pipeline, g, (disk if i == 0 else tmp_path) / f"{g[0]}.sqlite", short / f"{g[0]}.sock",
                            cgroup) for i, g in enumerate(groups)]
        full, log, kills = stations[0], [], []
        try:
            pipeline.start_worker()
            for s in stations:
                s.start()
            doors = {s.tables[0]: Door(s.sock) for s in stations}
            door_of = {t: doors[s.tables[0]] for s in stations for t in s.tables}

            async def deal() -> None:
                pace = Pace(SPEED)
                for n, record in enumerate(history):
                    await asyncio.sleep(pace.wait(record.get("ts") if type(record) is dict else None))
                    table = record.get("table_id") if type(record) is dict else None
                    door = door_of.get(table) if type(table) is str else None
                    (door or doors[tables[0]]).queue.put_nowait(Line(n, entry_of(record)))
                for door in doors.values():
                    door.queue.put_nowait(None)

            async def faults(t0: float) -> None:
                loop = asyncio.get_running_loop()
                blocking = lambda fn, *a: loop.run_in_executor(None, fn, *a)  # noqa: E731

                async def until(t: float) -> None:
                    await asyncio.sleep(max(0.0, t0 + t - time.monotonic()))

                def note(what: str) -> None:
                    log.append(f"{time.monotonic() - t0:6.1f} s  {what}")

                async def restart(s: Station) -> None:
                    door = doors[s.tables[0]]
                    while not door.unanswered:  # mid-stream: the instant a line is entered, before its answer
                        await asyncio.sleep(0.001)
                    s.proc.send_signal(signal.SIGKILL)
                    held = len(door.unanswered)
                    kills.append(held)
                    await blocking(s.proc.wait, 10)
                    note(f"killed -9 the controller of {s.tables[0]}.. with {held} lines unanswered")
                    await blocking(s.start)
                    note("  restarted")

                door = doors[full.tables[0]]
                await until(3)
                filler = await blocking(fill, disk, 16 << 10)
                note("journal disk of the first controller filled")
                while not any(a.get("refused") == "journal_full" for a in door.answers.values()):
                    assert time.monotonic() - t0 < 40, "the full disk never refused an entry"
                    await asyncio.sleep(0.1)
                note("  an entry refused: journal_full")
                await asyncio.sleep(2)
                filler.unlink()
                note("  freed")
                await until(10)
                await restart(stations[0])
                await until(14)
                await restart(stations[1])
                await until(18)
                cut.cut()
                cut_at = time.monotonic()
                note("controllers cut off from the network")
                await until(26)
                await restart(stations[0])
                await until(34)
                await restart(stations[1])
                await asyncio.sleep(max(0.0, cut_at + CUT_S - time.monotonic()))
                depths = [await blocking(journal_depth, s.journal) for s in stations]
                cut.heal()
                note(f"healed after {time.monotonic() - cut_at:.1f} s; held at the tables: "
                     f"{[(n, round((time.time_ns() - o) / 1e9)) for n, o in depths]} (events, oldest s)")
                for n, oldest in depths:  # the cut was real: the tables kept working, the journals held it
                    assert n > 0 and (time.time_ns() - oldest) / 1e9 > CUT_S - 10

            async def floor() -> None:
                t0 = time.monotonic()
                await asyncio.gather(deal(), faults(t0), *(d.run() for d in doors.values()))
                log.append(f"{time.monotonic() - t0:6.1f} s  every line answered")

            asyncio.run(floor())
            for s in stations:
                wait_for(lambda s=s: journal_depth(s.journal)[0] == 0, 120, f"{s.tables[0]}'s journal forwarded")
            log.append(f"{time.monotonic() - started:6.1f} s  journals forwarded (since the test began)")
        finally:
            cut.heal()
            for s in stations:
                s.stop()
        journals = {}
        for s in stations:
            journals |= journaled(s.journal)

    # Every line was answered: a seq, or a refusal with its reason.
    answers = {n: a for d in doors.values() for n, a in d.answers.items()}
    assert sorted(answers) == list(range(len(history)))
    refused = {n: a for n, a in answers.items() if "refused" in a}
    assert all(a["refused"] and a["message"] for a in refused.values())
    reasons = Counter(a["refused"] for a in refused.values())
    # The bad input, and only it, was refused for what it is; the full disk refused good entries.
    assert {n for n, a in refused.items() if a["refused"] != "journal_full"} == \
        {n for n, r in enumerate(history) if contract_refuses(r)}
    assert reasons["journal_full"] > 0 and len(reasons) > 1, reasons
    assert len(kills) == 2 * len(stations) and all(kills), kills  # every kill left lines unanswered

    # Acknowledged: (table, seq) -> request id; the same seq never answered for two entries.
    acked: dict = {}
    for n, a in answers.items():
        if "seq" in a:
            rid = json.loads(entry_of(history[n]))["request_id"]
            assert acked.setdefault((a["table_id"], a["seq"]), rid) == rid, f"{a} answered for two entries"
    # The journals hold exactly what was acknowledged (every entry left unanswered by a kill was
    # answered on its second entry), gapless per table, all forwarded.
    assert {k: r for k, (r, _, _) in journals.items()} == acked
    for t in tables:
        seqs = sorted(s for (tt, s) in journals if tt == t)
        assert seqs == list(range(1, len(seqs) + 1)), f"{t}: a gap in the seqs"
    assert all(sent is not None for _, _, sent in journals.values())

    # The topic: the journals' bytes, each (table, seq) once the worker's duplicate drop is done.
    on_topic: dict = {}
    copies = Counter()
    for m in read_committed(pipeline.prefix + "table-events", "admin", bootstrap=pipeline.bootstrap):
        r = decode_event(m.value)
        copies[(r["table_id"], r["seq"])] += 1
        on_topic.setdefault((r["table_id"], r["seq"]), m.value)
    assert on_topic == {k: v for k, (_, v, _) in journals.items()}

    # The referee: a replay of exactly the acknowledged events, table by table in seq order.
    replay = Replay(tags=TagCheck(keyfile.load(os.environ["CRAPS_TABLE_KEYS"])))
    outputs = []
    for (t, seq) in sorted(journals):
        outputs.extend(replay.feed_record(decode_event(journals[(t, seq)][1]), f"{t}/{seq}"))
    assert replay.tally.rejections_by_reason.get("bad_signature", 0) == 0
    expected = expected_settlement_bytes(outputs)
    assert len(expected) > 50
    wait_for(lambda: len(committed(pipeline, "settlements")) >= len(expected), 120, f"{len(expected)} settlements")
    time.sleep(3)  # anything extra the worker would still write
    settled = committed(pipeline, "settlements")
    ids = Counter(r["id"] for r in settled)
    lost, extra, twice = set(expected) - set(ids), set(ids) - set(expected), {i for i, c in ids.items() if c > 1}
    differing = [r["id"] for r in settled if r["id"] in expected and r["_raw"] != expected[r["id"]]]
    waits = [w for d in doors.values() for w in d.waits]
    print("\n".join(log))
    print(f"history {len(history):,} lines; acknowledged {len(acked):,}; refused {dict(reasons)}; entered again after "
          f"a kill {sum(d.entered_again for d in doors.values())} ({sum(d.kept for d in doors.values())} answered with "
          f"the seq journaled before the kill); on the topic twice {sum(c > 1 for c in copies.values())}")
    print(f"settlements {len(settled):,} (replay {len(expected):,}): lost {len(lost)}, extra {len(extra)}, "
          f"twice {len(twice)}, differing {len(differing)}")
    print(f"answers (entered to durable): p50 {at(0.5, waits):.1f} ms, p99 {at(0.99, waits):.1f} ms over {len(waits):,}")
    print(f"wall {time.monotonic() - started:.0f} s")
    assert (len(lost), len(extra), len(twice), len(differing)) == (0, 0, 0, 0)
