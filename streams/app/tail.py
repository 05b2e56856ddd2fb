"""`craps-streams tail`: follow settlements and alerts in the terminal (read_committed)."""
from __future__ import annotations

import sys
import uuid

from kafka import KafkaConsumer

from streams.codec import CodecError, decode_output
from streams.kafka.security import security_settings
from streams.topics import LAYOUT_MARKERS, REJECTIONS, SETTLEMENTS, SURVEILLANCE, default_bootstrap

TOPICS = {"settlements": SETTLEMENTS, "markers": LAYOUT_MARKERS, "alerts": SURVEILLANCE,
          "rejections": REJECTIONS}


def line_of(record: dict) -> str:
    kind = record["type"]
    if kind == "WagerSettled":
        money = f"won ${record['won_cents'] / 100:,.2f}" if record["outcome"] == "win" else record["outcome"]
        return (f"{record['table_id']} seq {record['seq']:>6}  {record['wager']:<15} pos {record['position']:>2}  "
                f"stake ${record['stake_cents'] / 100:,.2f}  {money:<16} {record['detail']}")
    if kind == "SurveillanceAlerted":
        return f"{record['table_id']} seq {record['seq']:>6}  ALERT {record['alert']}: {record['message']}"
    if kind == "EventRejected":
        return f"{record['table_id'] or '?'} seq {record['seq']:>6}  REJECTED {record['reason']}: {record['message']}"
    return f"{record['table_id']} seq {record['seq']:>6}  {kind} {record.get('layout')} {record.get('marker') or record.get('reason')}"


def tail(bootstrap: str | None, kinds: list[str], from_beginning: bool, limit: int) -> int:
    unknown = [k for k in kinds if k not in TOPICS]
    if unknown:
        print(f"tail: unknown {unknown}; choose from {', '.join(TOPICS)}", file=sys.stderr)
        return 2
    consumer = KafkaConsumer(
        *(TOPICS[k] for k in kinds), bootstrap_servers=bootstrap or default_bootstrap(),
        group_id=f"craps-tail-{uuid.uuid4().hex[:8]}", isolation_level="read_committed",
        auto_offset_reset="earliest" if from_beginning else "latest", enable_auto_commit=False,
        **security_settings("viewer"),
    )
    n = 0
    try:
        for message in consumer:
            try:
                print(line_of(decode_output(message.value)), flush=True)
            except CodecError as e:
                print(f"undecodable message at {message.topic}/{message.partition}/{message.offset}: {e}")
            n += 1
            if limit and n >= limit:
                break
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    return 0
