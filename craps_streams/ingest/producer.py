"""Send table events to Kafka: keyed by table id (one ordered stream per table), Avro bytes,
idempotent producer with acks=all so a retried send is never written twice.

A line that cannot be encoded (torn JSON, a field of the wrong type) is sent as its raw bytes: the
worker turns it into a rejection record with those bytes, so the floor's bad input is never lost
on the way in.
"""
from __future__ import annotations

import json
import sys
from typing import Iterable, Iterator

from craps_streams.codec import CodecError, encode_event, read_container
from craps_streams.kafka.producers import DeliveryError, feed_producer, send_all
from craps_streams.topics import Topics

__all__ = ["DeliveryError", "make_producer", "wire_message", "records_of", "produce"]


def make_producer(bootstrap: str | None = None):
    """The feed producer of history files (role "controller": it sends table events in, as the
    table controllers do; a live floor goes through the controllers themselves)."""
    return feed_producer("controller", bootstrap)


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


def produce(records: Iterable, producer, topic: str = Topics().table_events, progress=None) -> int:
    """Send every record to `topic` (the floor's table events; `progress`: an object with tick() and
    done(), or None); raises DeliveryError if any of them was not written: a broker outage the
    producer's retries did not ride out must never look like a complete feed."""
    n = send_all(producer, topic, (wire_message(r) for r in records),
                 on_sent=progress.tick if progress is not None else None)
    if progress is not None:
        progress.done()
    return n
