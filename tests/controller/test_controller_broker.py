"""The controller against the real broker: what reaches table-events is what it acknowledged, in
order and without a gap, through a kill -9 mid-stream and through a broker it cannot reach."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from craps_streams.authenticity import TagCheck
from craps_streams.authenticity import keyfile
from craps_streams.codec import decode_event
from craps_streams.kafka.reader import read_committed
from craps_streams.rules.contract import record_to_event
from tests.conftest import ROOT, free_port, wait_for

pytestmark = pytest.mark.kafka

TABLES = ("T001", "T002", "T003")


def start(pipeline, journal, port, bootstrap=None, *options):
    log = open(pipeline.tmp / "controller.log", "ab")
    args = [sys.executable, "-m", "craps_streams.cli", "controller", "--tables", ",".join(TABLES),
            "--journal", str(journal), "--http-port", str(port), "--shared-key-file", "--loglevel", "info"]
    if bootstrap:
        args += ["--bootstrap", bootstrap]
    proc = subprocess.Popen(args + list(options), env=pipeline.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    wait_for(lambda: status(port) is not None, 60, "the controller's HTTP input")
    return proc


def status(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=2) as r:
            return json.loads(r.read())
    except (OSError, ValueError):
        return None


def post(port, record):
    """-> the answer, or None when the controller gave none (killed while the event was in flight)."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}/events", data=json.dumps(record).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        return json.loads(e.read())
    except OSError:
        return None


def answered(port, record, tries: int = 3):
    """The answer, entering the entry again (same request id) while none comes: a retry the
    controller answers with the seq the entry already has, if it took it."""
    for _ in range(tries):
        if (a := post(port, record)) is not None:
            return a
    raise AssertionError(f"no answer to {record} after {tries} tries")


def throw(i):
    """The i-th entry, with the equipment's request id: a retry after a lost answer gets the same seq."""
    return {"type": "DiceThrown", "table_id": TABLES[i % len(TABLES)], "die1": 1 + i % 6, "die2": 1 + i // 6 % 6,
            "request_id": f"feed:{i}"}


def drained(port):
    s = status(port)
    return s is not None and s["broker_connected"] and all(t["held"] == 0 for t in s["tables"].values())


def on_topic(pipeline):
    """table id -> [(seq, record)] in topic order."""
    got: dict = {}
    for m in read_committed(pipeline.prefix + "table-events", "admin", bootstrap=pipeline.bootstrap):
        r = decode_event(m.value)
        got.setdefault(r["table_id"], []).append((r["seq"], r))
    return got


def check_exactly(pipeline, acked: dict, unanswered: int):
    """Per table: the topic, duplicates dropped as the worker drops them, is 1..N in order; every
    acknowledged event is there; at most `unanswered` are not acknowledged (journaled, but the
    controller died before it answered); every tag verifies."""
    ring = keyfile.load(os.environ["CRAPS_TABLE_KEYS"])
    check = TagCheck(ring)
    extra = 0
    for table in TABLES:
        first, kept = set(), []
        for seq, record in on_topic(pipeline).get(table, []):
            if seq in first:
                continue  # a duplicate: the worker counts it and drops it (craps_streams/rules/sequence.py)
            first.add(seq)
            kept.append(seq)
            assert check.problem(record_to_event(record)) is None
        assert kept == list(range(1, len(kept) + 1)), f"{table}: out of order or a gap: {kept[:50]}"
        assert acked[table] <= set(kept), f"{table}: acknowledged but not on the topic: {sorted(acked[table] - set(kept))}"
        extra += len(set(kept) - acked[table])
    assert extra <= unanswered


def test_killed_mid_stream_then_restarted_its_topic_holds_exactly_what_it_acknowledged(pipeline, tmp_path):
    journal, port = tmp_path / "journal.sqlite", free_port()
    acked = {t: set() for t in TABLES}
    proc = start(pipeline, journal, port)
    answers = []
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(post, port, throw(i)) for i in range(600)]
        while sum(f.done() for f in futures) < 250:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)  # mid-stream, events in flight
        proc.wait(10)
        answers = [f.result() for f in futures]
    unanswered = sum(a is None for a in answers)
    for a in answers:
        if a is not None and "seq" in a:
            acked[a["table_id"]].add(a["seq"])
    assert 0 < sum(map(len, acked.values())) < 600 and unanswered > 0

    proc = start(pipeline, journal, port)
    try:
        # The equipment enters again what it got no answer for, with the same request ids: those
        # the dead controller had journaled get their seq back, the others a new one.
        retried = [i for i, a in enumerate(answers) if a is None]
        with ThreadPoolExecutor(8) as pool:
            for a in pool.map(lambda i: answered(port, throw(i)), retried + list(range(600, 900))):
                acked[a["table_id"]].add(a["seq"])
        wait_for(lambda: drained(port), 120, "the journal forwarded")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
    assert sum(map(len, acked.values())) == 900
    check_exactly(pipeline, acked, 0)


def test_events_held_through_an_unreachable_broker_drain_in_order(pipeline, tmp_path):
    journal, port = tmp_path / "journal.sqlite", free_port()
    nowhere = f"127.0.0.1:{free_port()}"  # nothing listens: the broker is away
    # A first start with the broker away: the tables are new (nothing to look up on the topic).
    proc = start(pipeline, journal, port, nowhere, "--new-tables")
    acked = {t: set() for t in TABLES}
    try:
        for i in range(90):
            a = answered(port, throw(i))
            acked[a["table_id"]].add(a["seq"])
        s = wait_for(lambda: (s := status(port)) and s["tables"]["T001"]["held"] == 30 and s, 10, "held events")
        assert not s["broker_connected"]
        time.sleep(1.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
            metrics = r.read().decode()
        oldest = float(next(line.split()[-1] for line in metrics.splitlines()
                            if line.startswith('craps_controller_oldest_held_seconds{table="T001"}')))
        assert oldest >= 1.0
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    proc = start(pipeline, journal, port)  # the broker is back
    try:
        for i in range(90, 120):
            a = answered(port, throw(i))
            acked[a["table_id"]].add(a["seq"])
        wait_for(lambda: drained(port), 120, "the held events forwarded")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
    check_exactly(pipeline, acked, 0)
    assert {t: [s for s, _ in v] for t, v in on_topic(pipeline).items()} == {t: list(range(1, 41)) for t in TABLES}
