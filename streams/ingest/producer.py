"""Send table events to Kafka: keyed by table id (one ordered stream per table), Avro bytes,
idempotent producer with acks=all so a retried send is never written twice.

A line that cannot be encoded (torn JSON, a field of the wrong type) is sent as its raw bytes: the
worker turns it into a rejection record with those bytes, so the floor's bad input is never lost
on the way in.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Iterable, Iterator

from kafka import KafkaProducer

from streams.codec import CodecError, encode_event, read_container
from streams.topics import TABLE_EVENTS, default_bootstrap


def make_producer(bootstrap: str | None = None) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=bootstrap or default_bootstrap(),
        enable_idempotence=True,
        acks="all",
        linger_ms=5,
        batch_size=256 * 1024,
        max_in_flight_requests_per_connection=5,
        retries=2**31 - 1,
    )


def wire_message(record) -> tuple[bytes, bytes]:
    """(key, value) for one record of a JSON Lines or Avro file (or a torn line as str)."""
    if type(record) is str:
        return b"", record.encode("utf-8", "replace")
    table_id = record.get("table_id") if type(record) is dict else None
    key = table_id.encode() if type(table_id) is str else b""
    try:
        return key, encode_event(record)
    except CodecError:
        return key, json.dumps(record, sort_keys=True, default=str).encode()


def records_of(path: str) -> Iterator:
    """Records of a JSON Lines file (or - for stdin) or of an Avro container (.avro)."""
    if path.endswith(".avro"):
        yield from read_container(path)
        return
    stream = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="replace")
    with stream:
        for line in stream:
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except (ValueError, RecursionError):  # RecursionError: hostile nesting
                yield line


class Progress:
    """A one-line progress report on stderr for long files: count, rate."""

    def __init__(self, enabled: bool, label: str = "sent"):
        self.enabled = enabled
        self.label = label
        self.start = self.last = time.monotonic()
        self.count = 0

    def tick(self, n: int = 1) -> None:
        self.count += n
        now = time.monotonic()
        if self.enabled and now - self.last >= 0.5:
            self.last = now
            rate = self.count / max(now - self.start, 1e-9)
            print(f"\r{self.label} {self.count:,} events  {rate:,.0f} events/s", end="", file=sys.stderr)

    def done(self) -> None:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        if self.enabled:
            print(f"\r{self.label} {self.count:,} events in {elapsed:.1f} s "
                  f"({self.count / elapsed:,.0f} events/s)", file=sys.stderr)


class DeliveryError(RuntimeError):
    """Events the producer gave up on (the broker away longer than the delivery timeout)."""


def produce(records: Iterable, producer: KafkaProducer, topic: str = TABLE_EVENTS,
            progress: Progress | None = None) -> int:
    """Send every record; raises DeliveryError if any of them was not written: a broker outage the
    producer's retries did not ride out must never look like a complete feed."""
    n = 0
    failures: list = []
    for record in records:
        key, value = wire_message(record)
        producer.send(topic, key=key, value=value).add_errback(failures.append)
        n += 1
        if progress is not None:
            progress.tick()
    producer.flush()
    if failures:
        raise DeliveryError(f"{len(failures):,} of {n:,} events were not delivered to {topic}: {failures[0]!r}")
    if progress is not None:
        progress.done()
    return n


def paced(records: Iterable, speed: float) -> Iterator:
    """Records released in real time (speed 1) or faster, by their event time `ts`."""
    wall0 = ts0 = None
    for record in records:
        ts = record.get("ts") if type(record) is dict else None
        if type(ts) is int:
            if ts0 is None:
                wall0, ts0 = time.monotonic(), ts
            delay = (ts - ts0) / 1000.0 / speed - (time.monotonic() - wall0)
            if delay > 0:
                time.sleep(delay)
        yield record
