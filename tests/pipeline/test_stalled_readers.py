"""A transaction nobody ends holds the last stable offset of its partition: every read_committed
reader of the floor stops there, while the worker's own commits still succeed (a hanging
transaction, or a broker whose marker writes stalled). The worker's /metrics must show it, on the real broker:
records waiting above the LSO, and the stall's age growing until the transaction ends."""
from __future__ import annotations

import asyncio
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from craps_streams.kafka.producers import transactional_producer
from tests.conftest import wait_for

pytestmark = pytest.mark.kafka


def output_gauges(port: int, topic: str, partition: int) -> dict[str, float]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    found = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name in ("craps_output_unstable_records", "craps_output_lso_stalled_seconds") and \
                    s.labels.get("topic") == topic and s.labels.get("partition") == str(partition):
                found[s.name] = s.value
    return found


def test_a_transaction_left_open_shows_as_a_stalled_stable_offset(pipeline, kafka):
    topic, partition = pipeline.prefix + "settlements", 3
    worker = pipeline.start_worker("w1")
    # The worker owns every partition and reports them all, nothing waiting yet.
    wait_for(lambda: output_gauges(worker.web_port, topic, partition).get("craps_output_unstable_records") == 0,
             90, "the worker reporting the settlements partition")

    async def scenario():
        # A transaction left open on the worker's output partition (by the administrator: the
        # worker role's transactional ids are its partitions', and using one would fence it):
        # what a hanging transaction looks like to every reader.
        producer = transactional_producer(f"{pipeline.app_id}-left-open", 60_000, role="admin", bootstrap=kafka)
        await producer.start()
        try:
            await producer.begin_transaction()
            for _ in range(3):
                await (await producer.send(topic, b"not a settlement", key=b"t", partition=partition))
            await asyncio.to_thread(
                wait_for, lambda: (output_gauges(worker.web_port, topic, partition)
                                   .get("craps_output_lso_stalled_seconds", 0) >= 8 or None),
                45, "the stall's age growing")
            stalled = output_gauges(worker.web_port, topic, partition)
            assert stalled["craps_output_unstable_records"] == 3
            await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(scenario())
    # Ended (aborted: its records are skipped by readers and the LSO passes the abort marker).
    wait_for(lambda: output_gauges(worker.web_port, topic, partition) ==
             {"craps_output_unstable_records": 0, "craps_output_lso_stalled_seconds": 0},
             30, "the stall cleared once the transaction ended")
    assert worker.poll() is None
