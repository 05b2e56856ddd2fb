"""A small simulated floor's outputs as the ledger reads them: decoded from their Avro bytes, laid
out on partitions of the output topics by table, with offsets."""
from __future__ import annotations

import zlib

from craps_streams.codec import decode_output, encode_output, to_json_line
from craps_streams.replay.engine import Replay, json_lines
from craps_streams.rules import output_to_record
from craps_streams.sim.floor import floor_events

TOPIC_OF = {"WagerSettled": "t.settlements", "EventRejected": "t.rejections", "SurveillanceAlerted": "t.surveillance",
            "MarkerPlaced": "t.layout-markers", "MarkerCleared": "t.layout-markers"}
PARTITIONS = 4


def floor_records(tables: int = 3, hours: float = 0.5, seed: int = 7, bad_rate: float = 0.03) -> list[tuple]:
    """[(topic, partition, offset, record)] in the order a reader sees them."""
    lines = [r if type(r) is str else to_json_line(r) for r in floor_events(tables, hours, seed, bad_rate)]
    replay = Replay()
    out, next_offset = [], {}
    for record, where in json_lines(lines, "floor"):
        for o in replay.feed_record(record, where):
            rec = decode_output(encode_output(output_to_record(o)))
            topic = TOPIC_OF[rec["type"]]
            partition = zlib.crc32(rec["table_id"].encode()) % PARTITIONS
            offset = next_offset.get((topic, partition), 0)
            next_offset[(topic, partition)] = offset + 1
            out.append((topic, partition, offset, rec))
    return out
