"""`craps-streams tail` whose broker goes away while it follows: it says so within seconds on
stderr (the time it lost the broker, how long it waits) and exits 5 after its documented wait
(`--broker-wait`, default 30 s). On a private broker of its own, killed -9 (the shared one on
9092 is never touched)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid

import pytest

from tests.conftest import ROOT
from tests.faults.harness import PrivateBroker

WAIT_S = 8.0


@pytest.mark.kafka
def test_tail_says_the_broker_is_gone_and_exits_5_after_its_wait(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CRAPS_TOPIC_PREFIX": f"craps.tail-{uuid.uuid4().hex[:8]}.",
           "KAFKA_HEAP_OPTS": "-Xms256m -Xmx512m"}
    with PrivateBroker(tmp_path) as broker:
        broker.env.update(KAFKA_HEAP_OPTS=env["KAFKA_HEAP_OPTS"])
        cli = [sys.executable, "-m", "craps_streams.cli"]
        subprocess.run([*cli, "topics", "--bootstrap", broker.bootstrap], env=env, check=True, capture_output=True,
                       timeout=120)
        tail = subprocess.Popen([*cli, "tail", "--bootstrap", broker.bootstrap, "--broker-wait", str(WAIT_S)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: list[tuple[float, str]] = []
        reader = threading.Thread(target=lambda: lines.extend((time.monotonic(), x) for x in tail.stderr), daemon=True)
        reader.start()
        try:
            time.sleep(6)  # following: connected, its group joined
            assert tail.poll() is None and lines == [], lines
            killed = time.monotonic()
            broker.sh("kill")
            code = tail.wait(WAIT_S + 30)
            reader.join(5)
        finally:
            if tail.poll() is None:
                tail.kill()
    said = [(t - killed, x.rstrip()) for t, x in lines]
    assert code == 5, said
    gone = next((t, x) for t, x in said if "no Kafka broker answers at " in x)
    assert gone[0] <= 10, said  # within seconds
    assert gone[1].startswith(f"craps-streams tail: no Kafka broker answers at {broker.bootstrap} since ")
    assert gone[1].endswith(f"UTC: waiting up to {WAIT_S:.0f} s for it")
    assert any(f"no Kafka broker answered at {broker.bootstrap} for {WAIT_S:.0f} s" in x for _, x in said), said
    assert time.monotonic() - killed <= WAIT_S + 15
    assert "Traceback" not in "".join(x for _, x in said)
