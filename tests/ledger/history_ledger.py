"""A ledger filled from a history without a broker: the history settled by the replay (the step
the worker and `report` settle with), each output and each table opening as the ledger would
read it from its topic (Avro bytes, decoded by the ledger's own path), laid out on partitions by
table, written through the ledger's store in batches."""
from __future__ import annotations

import zlib

from craps_streams.codec import decode_output, encode_event, encode_output
from craps_streams.ledger.rows import rows_of
from craps_streams.ledger.service import opening_rows
from craps_streams.ledger.store import Batch, Ledger
from craps_streams.replay.engine import Replay
from craps_streams.replay.jsonread import json_line_batches
from craps_streams.report.calendar import GamingCalendar
from craps_streams.rules import TableOpened, output_to_record

TOPIC_OF = {"WagerSettled": "t.settlements", "EventRejected": "t.rejections", "SurveillanceAlerted": "t.surveillance"}
EVENTS_TOPIC = "t.table-events"
PARTITIONS = 4


def _opening_record(item) -> dict | None:
    ev = item[0] if type(item) is tuple else item
    if type(ev) is TableOpened:
        return {"type": "TableOpened", "table_id": ev.table_id, "seq": ev.seq, "ts": ev.ts,
                "table_kind": ev.table_kind, "rules": ev.rules_record}
    if type(ev) is dict and ev.get("type") == "TableOpened" and type(ev.get("table_id")) is str:
        return ev
    return None


class LedgerFiller:
    def __init__(self, ledger: Ledger, calendar: GamingCalendar, batch_rows: int = 20_000):
        self.ledger, self.calendar, self.batch_rows = ledger, calendar, batch_rows
        self.next_offset: dict = {}
        self.batch = Batch()
        self.rows = 0

    def _record(self, topic: str, table_id: str, rows_for) -> None:
        partition = zlib.crc32(table_id.encode()) % PARTITIONS
        offset = self.next_offset.get((topic, partition), 0)
        self.next_offset[(topic, partition)] = offset + 1
        rows = rows_for(partition, offset)
        self.batch.extend(topic, partition, offset, rows)
        self.rows += len(rows)
        if self.rows >= self.batch_rows:
            self.flush()

    def opening(self, record: dict) -> None:
        try:
            value = encode_event(record)
        except Exception:  # noqa: BLE001 - an opening the codec refuses never reaches the topic
            return
        self._record(EVENTS_TOPIC, record["table_id"], lambda p, o: opening_rows(value, p, o))

    def output(self, o) -> None:
        rec = decode_output(encode_output(output_to_record(o)))
        topic = TOPIC_OF.get(rec["type"])
        if topic is not None:
            self._record(topic, rec["table_id"], lambda p, off: rows_of(rec, p, off, self.calendar))

    def flush(self) -> None:
        if self.batch.spans:
            self.ledger.write(self.batch)
        self.batch, self.rows = Batch(), 0


def fill_from_history(ledger: Ledger, path: str, calendar: GamingCalendar, tags=None,
                      batch_rows: int = 20_000) -> Replay:
    """Settle the JSON Lines history at `path` and write its outputs and openings to `ledger`
    (migrated, its calendar bound by the caller), in batches of about `batch_rows` rows. Each
    opening goes in before its own outputs, as the worker's transaction commits the table event's
    offset with them."""
    filler = LedgerFiller(ledger, calendar, batch_rows)
    replay = Replay(tags=tags)
    with open(path, encoding="utf-8", errors="replace") as fo:
        for items in json_line_batches(fo, path):
            piece: list = []
            for item in items:
                record = _opening_record(item)
                if record is None:
                    piece.append(item)
                    continue
                for o in replay.feed_batch(piece):
                    filler.output(o)
                piece = []
                filler.opening(record)
                for o in replay.feed_batch([item]):
                    filler.output(o)
            for o in replay.feed_batch(piece):
                filler.output(o)
    filler.flush()
    return replay

