"""Shared helpers of the replay tests: simulated floors, their Kafka messages and their replays."""
from __future__ import annotations

import zlib

from craps_streams.authenticity import TableSigner, keyfile, sign_record
from craps_streams.codec import to_json_line
from craps_streams.ingest.producer import wire_message
from craps_streams.replay.engine import Replay, json_lines
from craps_streams.rules import WagerSettled, output_to_record
from craps_streams.sim.floor import floor_events
from tests.conftest import SETTINGS

# 2025-12-31 23:00 UTC: a floor of two hours crosses a UTC day.
BEFORE_MIDNIGHT_MS = 1_767_222_000_000
PARTITIONS = 4


def floor_lines(tables=4, hours=2.0, seed=5, bad_rate=0.02, start_ms=BEFORE_MIDNIGHT_MS,
                tagged: bool = True) -> list[str]:
    """A simulated floor as JSON Lines, tagged with the tests' dev floor keys as `simulate` writes it
    (the session's key ring, CRAPS_TABLE_KEYS, set by tests/conftest.py)."""
    records = floor_events(tables, hours, seed, bad_rate, start_ms)
    if tagged:
        signer = TableSigner(keyfile.load(SETTINGS.key_ring_path))
        records = (sign_record(signer, r) for r in records)
    return [r if type(r) is str else to_json_line(r) for r in records]


def write_lines(path, lines) -> None:
    path.write_text("\n".join(lines) + "\n")


def partition_of(key: bytes) -> int:
    """Tables spread over the partitions (T001 -> 1, T004 -> 0); keyless messages to 0."""
    if key[1:].isdigit():
        return int(key[1:]) % PARTITIONS
    return zlib.crc32(key) % PARTITIONS if key else 0


def messages_of(lines) -> list[tuple[int, int, bytes, bytes]]:
    """(partition, offset, key, value) as the producer would put them on a topic."""
    nxt = [0] * PARTITIONS
    out = []
    for record, _ in json_lines(lines, "floor"):
        key, value = wire_message(record)
        p = partition_of(key)
        out.append((p, nxt[p], key, value))
        nxt[p] += 1
    return out


def replay_settlements_of(lines) -> dict[str, dict]:
    replay = Replay()
    out = {}
    for record, where in json_lines(lines, "floor"):
        for o in replay.feed_record(record, where):
            if type(o) is WagerSettled:
                out[o.id] = output_to_record(o)
    return out


def settlement_lines(settlements: dict) -> list[str]:
    return [to_json_line(r) for r in settlements.values()]
