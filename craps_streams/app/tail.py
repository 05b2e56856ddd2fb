"""`craps-streams tail`: follow settlements and alerts, one line each (read_committed)."""
from __future__ import annotations

from typing import Iterator

from craps_streams.codec import CodecError, decode_output
from craps_streams.kafka.followers import BROKER_GIVE_UP_AFTER_S, followed, follower
from craps_streams.kafka.settings import default_bootstrap
from craps_streams.topics import Topics

KINDS = ("settlements", "markers", "alerts", "rejections")


def topic_of_kind(topics: Topics) -> dict[str, str]:
    return {"settlements": topics.settlements, "markers": topics.layout_markers, "alerts": topics.surveillance,
            "rejections": topics.rejections}


def dollars(cents: int) -> str:
    return f"${cents / 100:,.2f}"


def line_of(record: dict) -> str:
    """One line per output, in fixed columns (table, seq, wager, position, stake, outcome) so the
    eye can run down a column however long the amounts are."""
    kind = record["type"]
    head = f"{record['table_id'] or '?':<8} seq {record['seq']:>6}  "
    if kind == "WagerSettled":
        outcome = f"won {dollars(record['won_cents'])}" if record["outcome"] == "win" else record["outcome"]
        return (f"{head}{record['wager']:<15} pos {record['position']:>2}  "
                f"stake {dollars(record['stake_cents']):>10}  {outcome:<18} {record['detail']}")
    if kind == "SurveillanceAlerted":
        return f"{head}ALERT {record['alert']}: {record['message']}"
    if kind == "EventRejected":
        return f"{head}REJECTED {record['reason']}: {record['message']}"
    return f"{head}{kind} {record.get('layout')} {record.get('marker') or record.get('reason')}"


def follow(kinds: list[str], from_beginning: bool, limit: int = 0, bootstrap: str | None = None,
           topics: Topics = Topics(), notice=lambda message: None,
           broker_wait_s: float = BROKER_GIVE_UP_AFTER_S) -> Iterator[str]:
    """A line per committed record of the kinds' topics of the floor `topics`, until `limit` lines
    (0: follow for ever). `notice(message)` hears that the broker is gone or back
    (craps_streams.kafka.followers.followed); BrokerUnreachable when it stayed gone `broker_wait_s`.
    Raises ValueError for a kind that is not one of KINDS."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown {unknown}; choose from {', '.join(KINDS)}")
    named = topic_of_kind(topics)
    consumer = follower([named[k] for k in kinds], from_beginning=from_beginning, role="viewer", bootstrap=bootstrap)
    n = 0
    try:
        for message in followed(consumer, notice, bootstrap or default_bootstrap(), give_up_after_s=broker_wait_s):
            try:
                yield line_of(decode_output(message.value))
            except CodecError as e:
                yield f"undecodable message at {message.topic}/{message.partition}/{message.offset}: {e}"
            n += 1
            if limit and n >= limit:
                break
    finally:
        consumer.close()
