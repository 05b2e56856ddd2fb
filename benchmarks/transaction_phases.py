"""The worker's transaction at a floor's rate, two orders side by side.

    python benchmarks/transaction_phases.py [--partitions 8 --rate 1.3 --seconds 30 --rounds 3]

Start the broker first (`make kafka-up`). Each partition's transactional producer runs the
worker's transaction shape (two output records, a state record, the consumed offset, commit) at
`--rate` transactions a second, Poisson, as a floor of 200 tables at real pace gives 8 partitions.
Two orders, interleaved round by round on the same broker:

- concurrent:    the offsets are added as soon as the records are sent (aiokafka's own
                 order): aiokafka sends AddOffsetsToTxn while the records' Produce is in flight;
- written-first: the worker's order now (`SettlingWorker._written`): the records are written, then
                 the offsets join the transaction.

Printed per order: transactions, p50/p90/p99/max of begin-to-commit, and the requests the client
had to retry (Kafka 4's KIP-890 verification answering a Produce with NOT_ENOUGH_REPLICAS or a
TxnOffsetCommit with COORDINATOR_NOT_AVAILABLE: the broker keeps one pending verification per
transactional id and fails the older of two), per 100 transactions; then the ratios.
The retries are counted by wrapping aiokafka's request handlers (a count only: what is sent and
answered is unchanged).
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import logging
import os
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

PREFIX = f"bench{uuid.uuid4().hex[:6]}."
os.environ["CRAPS_TOPIC_PREFIX"] = PREFIX

from aiokafka import TopicPartition  # noqa: E402
from aiokafka.producer import sender as aiokafka_sender  # noqa: E402

from craps_streams.app.worker import SettlingWorker  # noqa: E402
from craps_streams.authenticity import keyfile  # noqa: E402
from craps_streams.kafka.access import grant_application  # noqa: E402
from craps_streams.kafka.producers import transactional_producer  # noqa: E402
from craps_streams.kafka.topics import create_topics, delete_floor  # noqa: E402
from craps_streams.settings import load, use  # noqa: E402

SETTINGS = use(load())  # this benchmark is an edge: its settings read once, with its own prefix
TABLE_EVENTS, SETTLEMENTS, TABLE_STATE = (SETTINGS.topics.table_events, SETTINGS.topics.settlements,
                                          SETTINGS.topics.table_state)

ORDERS = ("concurrent", "written-first")
retries: collections.Counter = collections.Counter()  # request kind -> answers that made the client retry


def count_retries() -> None:
    """Count the transactional requests the client had to send again (a handler's do() returns
    False after a retriable answer and its backoff) and the produce retries aiokafka logs."""
    original = aiokafka_sender.BaseHandler.do

    async def do(self, node_id):
        ok = await original(self, node_id)
        if ok is False:
            retries[type(self).__name__.replace("Handler", "")] += 1
        return ok

    aiokafka_sender.BaseHandler.do = do

    class ProduceRetries(logging.Handler):
        def emit(self, record):
            if "retrying" in record.getMessage():
                retries["Produce"] += 1

    logging.getLogger("aiokafka.producer.sender").addHandler(ProduceRetries())
    logging.getLogger("aiokafka.producer.sender").propagate = False


def grant(app_id: str) -> None:
    """The worker role's group and transactional ids for one more application id (each round runs
    on a fresh group), granted by the administrator as for any floor."""
    grant_application(PREFIX, app_id)


async def partition_loop(app_id: str, partition: int, order: str, rate: float, until: float,
                         seconds: list[float]) -> None:
    producer = transactional_producer(f"{app_id}-{partition}", 60_000)
    await producer.start()
    tp = TopicPartition(TABLE_EVENTS, partition)
    offset = 0
    rng = random.Random(partition)
    try:
        while time.monotonic() < until:
            await asyncio.sleep(rng.expovariate(rate))
            began = time.perf_counter()
            async with producer.transaction():
                offset += 1
                delivered = [await producer.send(SETTLEMENTS, b"s" * 200, key=b"t", partition=partition),
                             await producer.send(SETTLEMENTS, b"p" * 200, key=b"t", partition=partition),
                             await producer.send(TABLE_STATE, b"x" * 800, key=b"t", partition=partition)]
                if order == "written-first":
                    await SettlingWorker._written(delivered)
                await producer.send_offsets_to_transaction({tp: offset}, app_id)
            seconds.append(time.perf_counter() - began)
    finally:
        await producer.stop()


async def one_round(order: str, partitions: int, rate: float, seconds: float) -> tuple[list[float], dict]:
    app_id = f"bench-tx-{uuid.uuid4().hex[:6]}"
    grant(app_id)
    retries.clear()
    took: list[float] = []
    until = time.monotonic() + seconds
    await asyncio.gather(*(partition_loop(app_id, p, order, rate, until, took) for p in range(partitions)))
    return took[len(took) // 10:], dict(retries)  # the first tenth: producers starting


def summary(xs: list[float]) -> dict:
    q = statistics.quantiles(xs, n=100)
    return {"n": len(xs), "p50": q[49] * 1000, "p90": q[89] * 1000, "p99": q[98] * 1000, "max": max(xs) * 1000}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--rate", type=float, default=1.3, help="transactions per second per partition")
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    keyfile.init(SETTINGS.key_ring_path)
    create_topics(floor=SETTINGS.topics, app_id=SETTINGS.app_id)
    count_retries()
    results: dict[str, list] = {o: [] for o in ORDERS}
    try:
        for r in range(args.rounds):
            for order in (ORDERS if r % 2 == 0 else ORDERS[::-1]):
                took, asked_again = asyncio.run(one_round(order, args.partitions, args.rate, args.seconds))
                s = summary(took)
                results[order].append(s)
                again = sum(asked_again.values())
                print(f"round {r + 1} {order:13s} {s['n']:4d} transactions: p50 {s['p50']:5.1f} p90 {s['p90']:5.1f} "
                      f"p99 {s['p99']:5.1f} max {s['max']:5.1f} ms; retried requests {again / s['n'] * 100:.1f} "
                      f"per 100 {dict(sorted(asked_again.items()))}; load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        delete_floor(PREFIX)
    med = {o: {k: statistics.median(x[k] for x in results[o]) for k in ("p50", "p90", "p99")} for o in ORDERS}
    for o in ORDERS:
        print(f"median of {args.rounds} rounds, {o:13s}: p50 {med[o]['p50']:.1f} ms, p90 {med[o]['p90']:.1f} ms, "
              f"p99 {med[o]['p99']:.1f} ms")
    print(f"p99 written-first / concurrent: {med['written-first']['p99'] / med['concurrent']['p99']:.2f}; "
          f"p90: {med['written-first']['p90'] / med['concurrent']['p90']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
