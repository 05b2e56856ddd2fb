"""What a person reads: the terminal feed in fixed columns, and a worker log without the expected
retries of Kafka 4's transaction verification."""
from __future__ import annotations

import logging

from craps_streams.app.service import ExpectedRetries
from craps_streams.app.tail import line_of


def settled(stake: int, outcome: str, won: int, table: str = "T001") -> dict:
    return {"type": "WagerSettled", "table_id": table, "seq": 7, "wager": "fire", "position": 3,
            "stake_cents": stake, "outcome": outcome, "won_cents": won, "detail": "4 points"}


def test_settlement_columns_do_not_move_with_the_amounts():
    lines = [line_of(settled(500, "lose", 0)), line_of(settled(5_000_000, "win", 99_900_000, "T0123456")),
             line_of(settled(2_500, "push", 0))]
    assert len({line.index("stake") for line in lines}) == 1
    assert len({line.index("4 points") for line in lines}) == 1, lines
    assert "won $999,000.00" in lines[1]


def record(level: int, message: str) -> logging.LogRecord:
    return logging.LogRecord("aiokafka.producer.sender", level, __file__, 1, message, (), None)


def test_expected_transaction_retries_are_not_warnings():
    logger = logging.getLogger("aiokafka.producer.sender")
    logger.setLevel(logging.WARNING)
    kip890 = record(logging.WARNING, "Got error produce response on topic-partition TopicPartition(topic='x', "
                                     "partition=1), retrying. Error: [Error 19] NotEnoughReplicasError")
    assert ExpectedRetries().filter(kip890) is False
    assert kip890.levelname == "DEBUG"
    other = record(logging.WARNING, "Got error produce response: KafkaConnectionError")
    assert ExpectedRetries().filter(other) is True and other.levelname == "WARNING"
    logger.setLevel(logging.DEBUG)
    again = record(logging.WARNING, "... NotEnoughReplicasError")
    assert ExpectedRetries().filter(again) is True and again.levelno == logging.DEBUG
    logger.setLevel(logging.NOTSET)
