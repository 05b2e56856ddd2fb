"""A broker node lost under a live floor, as the operator sees it: a three-node cluster of the
test's own, a settling worker, the floor view and a `craps-streams tail` following the settlements
while a floor is fed live; the node leading most busy partitions killed -9, then started again;
at the end every node killed.

Checked: each service's log says the lost node ONCE (craps_streams/kafka/client_logs.py: one
warning, not a line per failed connection); the worker's /metrics, the status panel (`craps-streams
status --once`) and the floor view's /api/floor (the page's state) say the broker is lost, and stop
saying it by themselves once the node is back; the tail keeps following through one lost node and,
its brokers all gone, says so and exits 5 within its `--broker-wait`.

`make faults` runs it (marker `faults`: about three minutes with the cluster's start, so not
`make test`). The shared broker on 9092 is never touched."""
from __future__ import annotations

import re
import subprocess
import sys
import threading
import time

import pytest

from craps_streams.kafka.client_logs import QUIET_S
from tests.conftest import ROOT
from tests.faults.cluster import Cluster
from tests.faults.cluster_scenarios import BUSY
from tests.faults.harness import FaultRun, Feeder, http_json, log, log_text, make_floor, owned_partitions, wait_until
from tests.floor.views import floor_of, start_view

pytestmark = [pytest.mark.kafka, pytest.mark.faults]

TAIL_WAIT_S = 6.0  # the tail's --broker-wait here (default 30 s)


def _lost_lines(text: str, node: int) -> list[str]:
    return [line for line in text.splitlines() if f"broker node {node} lost at " in line]


def _metrics_lost(port: int) -> set[str]:
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return set(re.findall(r'^craps_kafka_broker_lost_since_seconds\{node="(\d+)"\}', text, re.M))


def _view_lost(view) -> set[str] | None:
    floor = floor_of(view)
    return None if floor is None else {str(b["node"]) for b in floor.get("brokers_lost", [])}


def _status(run: FaultRun, worker, view) -> str:
    r = subprocess.run([sys.executable, "-m", "craps_streams.cli", "status", "--once", "--plain",
                        "--metrics-url", f"http://127.0.0.1:{worker.web_port}/metrics",
                        "--floor-url", f"http://127.0.0.1:{view.web_port}/", "--prometheus-url", ""],
                       env=run.env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"status --once exited {r.returncode}: {r.stdout}{r.stderr}"
    return r.stdout


@pytest.mark.timeout(900)
def test_a_lost_node_is_said_once_shown_and_cleared_and_tail_gives_up_when_all_are_gone(tmp_path):
    with Cluster(tmp_path) as cluster:
        run = FaultRun(tmp_path, cluster.bootstrap)
        feeder = tail = None
        try:
            run.create_topics()
            floor = make_floor(run, 12, 1.0, 97)
            worker = run.start_worker("w0")
            view = start_view(run, "v")
            wait_until(lambda: owned_partitions(worker), 90, "the worker to own its partitions")
            tail = subprocess.Popen([sys.executable, "-m", "craps_streams.cli", "tail", "--topics", "settlements",
                                     "--broker-wait", str(TAIL_WAIT_S)], env=run.env, cwd=ROOT,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            said: list[tuple[float, str]] = []
            followed = [0]
            threading.Thread(target=lambda: said.extend((time.monotonic(), x.rstrip()) for x in tail.stderr),
                             daemon=True).start()
            threading.Thread(target=lambda: [followed.__setitem__(0, followed[0] + 1) for _ in tail.stdout],
                             daemon=True).start()
            feeder = Feeder(run, floor.lines, 40.0).start()
            wait_until(lambda: followed[0] > 20 and (floor_of(view) or {}).get("tables"), 120,
                       "settlements followed by the tail and the floor view showing tables")
            assert _status(run, worker, view).count("lost since") == 0

            leaders = cluster.leaders([run.topic(t) for t in BUSY])
            node = max(sorted(leaders), key=lambda n: leaders[n])
            cluster.kill(node)
            t_kill = time.monotonic()
            log(f"lost broker: node {node} (leads {dict(leaders)}) killed -9")
            n = str(node)
            wait_until(lambda: n in _metrics_lost(worker.web_port), 20, f"the worker's /metrics to say node {n} lost")
            wait_until(lambda: n in (_view_lost(view) or set()), 20, f"the floor view to say node {n} lost")
            status = _status(run, worker, view)
            assert f"Kafka broker node {n} lost since " in status, status
            shown_s = time.monotonic() - t_kill
            # Some seconds of the clients failing against the dead node: still one line each.
            time.sleep(10)
            followed_before = followed[0]
            wait_until(lambda: followed[0] > followed_before + 10, 60, "the tail to follow on with one node lost")
            assert tail.poll() is None and said == [], said  # two nodes left: nothing to say, nothing given up

            cluster.start(node)
            t_back = time.monotonic()
            # Cleared by themselves: no failed connection for QUIET_S, the node back.
            wait_until(lambda: _metrics_lost(worker.web_port) == set() and _view_lost(view) == set(),
                       QUIET_S + 30, "the worker and the floor view to stop saying a broker is lost")
            status = _status(run, worker, view)
            assert "lost since" not in status, status
            cleared_s = time.monotonic() - t_back
            logs = {"worker": log_text(worker), "floor view": log_text(view)}
            for service, text in logs.items():
                lines = _lost_lines(text, node)
                assert len(lines) == 1, f"{service}: {len(lines)} lines for the lost node {node}: {lines[:5]}"
                assert "Unable connect to node" not in text, f"{service} logged aiokafka's raw connection errors"
                assert not any(_lost_lines(text, other) for other in (1, 2, 3) if other != node), service
            log(f"lost broker: shown lost {shown_s:.1f} s after the kill, cleared {cleared_s:.1f} s after the node's "
                f"start; one line each: " + " | ".join(f"{s}: {_lost_lines(t, node)[0][-150:]}" for s, t in logs.items()))

            # Every node gone: the tail says so and gives up (exit 5) within its wait.
            feeder.kill()  # the feed's producer is not under test here
            for each in (1, 2, 3):
                cluster.kill(each)
            t_all = time.monotonic()
            code = tail.wait(TAIL_WAIT_S + 30)
            gave_up_s = time.monotonic() - t_all
            log(f"lost broker: every node killed; tail exited {code} after {gave_up_s:.1f} s: {[x for _, x in said]}")
            assert code == 5, said
            assert gave_up_s <= TAIL_WAIT_S + 15, gave_up_s
            assert any("no Kafka broker answers at " in x for _, x in said), said
            assert any(f"no Kafka broker answered at {cluster.bootstrap} for {TAIL_WAIT_S:.0f} s" in x
                       for _, x in said), said
            assert "Traceback" not in "\n".join(x for _, x in said)
        finally:
            if tail is not None and tail.poll() is None:
                tail.kill()
            if feeder is not None:
                feeder.kill()
            run.close()
