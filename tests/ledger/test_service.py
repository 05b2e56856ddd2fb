"""The consume loop's pure part: one poll's records as a batch (positions, gaps, damage)."""
from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from craps_streams.codec import encode_output
from craps_streams.ledger.metrics import LedgerMetrics
from craps_streams.ledger.service import UNREADABLE, batch_of, batch_of_rows
from craps_streams.ledger.store import Batch, Written
from craps_streams.report.calendar import GamingCalendar

CAL = GamingCalendar()


def settled(n: int) -> bytes:
    return encode_output({"type": "WagerSettled", "id": f"T1/{n}/settle/w{n}", "wager_id": f"w{n}", "table_id": "T1",
                          "position": 1, "wager": "fire", "outcome": "lose", "stake_cents": 100, "won_cents": 0,
                          "paytable": "fire-623a.5", "detail": "", "seq": n, "ts": 1_767_225_600_000 + n,
                          "placed_seq": 1})


def test_a_batch_starts_at_the_known_position_and_steps_over_transaction_markers():
    records = [("s", 0, 11, settled(1)), ("s", 0, 13, settled(2)), ("s", 1, 0, settled(3))]
    batch = batch_of(records, {("s", 0): 15, ("s", 1): 1}, {("s", 0): 10}, CAL)
    # offset 10 and 12: commit markers of the worker's transactions; 14: another marker after the poll
    assert batch.spans == {("s", 0): (10, 15), ("s", 1): (0, 1)}
    assert [r.values["id"] for r in batch.rows] == ["T1/1/settle/w1", "T1/2/settle/w2", "T1/3/settle/w3"]


def test_an_unreadable_record_is_kept_as_a_rejection_with_its_bytes():
    batch = batch_of([("s", 2, 7, b"\x00not avro")], {("s", 2): 8}, {("s", 2): 7}, CAL)
    [row] = batch.rows
    assert row.table == "rejections" and row.values["reason"] == UNREADABLE
    assert row.values["raw"] == b"\x00not avro"
    assert (row.values["topic"], row.values["partition"], row.values["offset"]) == ("s", 2, 7)
    assert row.values["id"] == f"{UNREADABLE}/s/2/7"


def test_a_batch_never_goes_backwards():
    batch = Batch()
    batch.extend("s", 0, 5, [])
    with pytest.raises(ValueError):
        batch.extend("s", 0, 5, [])
    with pytest.raises(ValueError):
        batch.advance("s", 0, 3)


def test_metrics_show_rows_positions_and_lag():
    metrics = LedgerMetrics()
    metrics.written(Written({"settlements": 40, "alerts": 0}, {"settlements": 2}), 0.01)
    metrics.positions({("s", 0): 120}, {("s", 0): 150, ("s", 1): 9}, now=1000.0)
    text = generate_latest(metrics.registry).decode()
    assert 'craps_ledger_rows_written_total{table="settlements"} 40.0' in text
    assert 'craps_ledger_rows_present_total{table="settlements"} 2.0' in text
    assert 'craps_ledger_committed_offset{partition="0",topic="s"} 120.0' in text
    assert 'craps_ledger_lag_records{partition="0",topic="s"} 30.0' in text
    assert 'craps_ledger_lag_records{partition="1",topic="s"} 9.0' in text
    assert "craps_ledger_lag_updated_timestamp_seconds 1000.0" in text


def test_seconds_behind_are_the_age_of_the_newest_record_written_while_records_wait():
    metrics = LedgerMetrics()
    # p0: 30 records wait, the newest written was made at 990 s; p1: nothing waits; p2: records
    # wait and none was written yet (no age to tell); p3 caught up without any record written
    metrics.positions({("s", 0): 120, ("s", 1): 9, ("s", 2): 0}, {("s", 0): 150, ("s", 1): 9, ("s", 2): 4, ("s", 3): 0},
                      now=1000.0, newest_ms={("s", 0): 990_000, ("s", 1): 999_500})
    text = generate_latest(metrics.registry).decode()
    assert 'craps_ledger_behind_seconds{partition="0",topic="s"} 10.0' in text
    assert 'craps_ledger_behind_seconds{partition="1",topic="s"} 0.0' in text
    assert 'craps_ledger_behind_seconds{partition="2",topic="s"}' not in text
    assert 'craps_ledger_behind_seconds{partition="3",topic="s"} 0.0' in text


def test_a_partition_whose_records_were_not_handed_on_moves_from_its_known_position():
    """The reader hands on only the table events that are openings: a partition read with none of
    its records here still moves, from the ledger's position to the reader's."""
    batch = batch_of_rows([("s", 0, 7, [])], {("s", 0): 8, ("e", 2): 500}, {("s", 0): 7, ("e", 2): 120})
    assert batch.spans == {("s", 0): (7, 8), ("e", 2): (120, 500)} and batch.rows == []
    with pytest.raises(ValueError):  # the reader's position behind the ledger's: read again
        batch_of_rows([], {("e", 2): 100}, {("e", 2): 120})


def newest(records):
    """Each partition's newest timestamp among the records, as the PositionedReader gives it."""
    found = {}
    for topic, partition, _, _, timestamp_ms in records:
        found[(topic, partition)] = max(found.get((topic, partition), timestamp_ms), timestamp_ms)
    return found


def test_a_slow_broker_costs_a_lag_measurement_not_the_ledger(tmp_path, monkeypatch):
    """The end offsets time out (a loaded or away broker): the ledger writes on, and measures the
    lag again at its next turn."""
    from aiokafka.errors import KafkaTimeoutError

    from craps_streams.ledger import service
    from craps_streams.ledger.store import Ledger, open_engine

    class Reader:  # the adapter's PositionedReader, as the loop sees it: two polls, then quiet
        def __init__(self, *args, transform, **kw):
            self.transform = transform
            self.polls = [([("craps.settlements", 0, 0, settled(1), 1_000)], {("craps.settlements", 0): 1}),
                          ([("craps.settlements", 0, 1, settled(2), 2_000)], {("craps.settlements", 0): 2})]
            self.asked = 0

        def poll(self, timeout_ms):
            records, after = self.polls.pop(0) if self.polls else ([], {})
            return self.transform(records), after, newest(records)

        def poll_ready(self):
            return None  # nothing read ahead: each poll is written alone

        def end_offsets(self):
            self.asked += 1
            if self.asked == 1:
                raise KafkaTimeoutError("Failed to get offsets by timestamps in 12000 ms")
            return {("craps.settlements", 0): 2}

        def reseek(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr(service, "PositionedReader", Reader)
    settings = service.LedgerSettings(topics=("craps.settlements",), group_id="g", calendar=CAL, lag_every_s=0.0)
    metrics = LedgerMetrics()
    turns = iter(range(6))
    ledger = service.LedgerService(Ledger(open_engine(f"sqlite:///{tmp_path / 'l.db'}")), settings, metrics)
    ledger.run(lambda: next(turns, None) is None)
    assert ledger.known == {("craps.settlements", 0): 2}
    assert ledger.newest_ms == {("craps.settlements", 0): 2_000}
    text = generate_latest(metrics.registry).decode()
    assert 'craps_ledger_lag_records{partition="0",topic="craps.settlements"} 0.0' in text


def test_the_polls_already_read_go_in_one_write_with_the_positions_after_the_last(tmp_path, monkeypatch):
    """Behind on a backlog, the records read ahead join the polled ones: one transaction, the
    positions after the last of them; a poll with none waiting is written alone."""
    from craps_streams.ledger import service
    from craps_streams.ledger.store import Ledger, open_engine

    polls = [([("s", 0, 0, settled(1), 1_000), ("s", 1, 0, settled(2), 4_000)], {("s", 0): 1, ("s", 1): 1}),
             ([("s", 0, 2, settled(3), 3_000)], {("s", 0): 4}),  # offset 1: a transaction marker
             ([("s", 1, 1, settled(4), 2_000)], {("s", 1): 2}),
             ([("s", 0, 4, settled(5), 5_000)], {("s", 0): 5})]

    class Reader:  # the adapter's PositionedReader: the first poll finds two more read, then one more
        def __init__(self, *args, transform, **kw):
            self.transform, self.ready = transform, [2, 0]

        def read(self):
            records, after = polls.pop(0)
            return self.transform(records), after, newest(records)

        def poll(self, timeout_ms):
            return self.read() if polls else (self.transform([]), {}, {})

        def poll_ready(self):
            if self.ready[0] == 0:
                self.ready.pop(0)
                return None
            self.ready[0] -= 1
            return self.read()

        def end_offsets(self):
            return {}

        def reseek(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr(service, "PositionedReader", Reader)
    ledger = Ledger(open_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    batches = []
    write = ledger.write
    monkeypatch.setattr(ledger, "write", lambda batch: batches.append(batch) or write(batch))
    settings = service.LedgerSettings(topics=("s",), group_id="g", calendar=CAL, lag_every_s=1e9)
    turns = iter(range(3))
    ledger_service = service.LedgerService(ledger, settings)
    ledger_service.run(lambda: next(turns, None) is None)
    assert [b.spans for b in batches] == [{("s", 0): (0, 4), ("s", 1): (0, 2)}, {("s", 0): (4, 5)}]
    assert [len(b.rows) for b in batches] == [4, 1]
    assert ledger.positions() == {("s", 0): 5, ("s", 1): 2} and ledger.count("settlements") == 5
    assert ledger_service.newest_ms == {("s", 0): 5_000, ("s", 1): 4_000}
