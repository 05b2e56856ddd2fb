"""The ledger's Prometheus metrics: rows written, rows found already present, batches, stale
batches refused, the last committed position and the lag of every partition it reads.

Lag is against the read_committed end offsets (the last stable offsets): records finance could
read and the ledger has not written yet. In seconds: 0 for a partition the ledger holds all of,
otherwise the age of the newest record it has written from it (by the record's Kafka timestamp,
the worker's clock): the records it lacks all came later, so none of them has waited longer. A
partition it has written nothing from yet has no age. Labels stay bounded: table, topic, partition.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from craps_streams.ledger.store import Written

BATCH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)


class LedgerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        r = self.registry = registry or CollectorRegistry()
        self.rows = Counter("craps_ledger_rows_written_total", "Rows the ledger wrote, by table", ["table"], registry=r)
        self.present = Counter("craps_ledger_rows_present_total",
                               "Rows already in the ledger when written again (the primary key kept one)",
                               ["table"], registry=r)
        self.batches = Counter("craps_ledger_batches_total", "Batches committed", registry=r)
        self.stale = Counter("craps_ledger_stale_batches_total",
                             "Batches refused because another ledger had moved a partition's position", registry=r)
        self.db_errors = Counter("craps_ledger_database_errors_total", "Batches the database failed (retried)",
                                 registry=r)
        self.batch_seconds = Histogram("craps_ledger_batch_seconds", "Time to write one batch and its positions",
                                       buckets=BATCH_BUCKETS, registry=r)
        self.position = Gauge("craps_ledger_committed_offset",
                              "The next offset of the partition the ledger's database holds", ["topic", "partition"],
                              registry=r)
        self.lag = Gauge("craps_ledger_lag_records",
                         "Committed records of the partition not yet in the ledger", ["topic", "partition"],
                         registry=r)
        self.behind = Gauge("craps_ledger_behind_seconds",
                            "0 when the ledger holds every committed record of the partition; else the age of "
                            "the newest record it has written from it (an upper bound of the wait)",
                            ["topic", "partition"], registry=r)
        self.lag_updated = Gauge("craps_ledger_lag_updated_timestamp_seconds",
                                 "When the ledger last measured its lag (a stalled ledger stops moving it)",
                                 registry=r)

    def written(self, result: Written, seconds: float) -> None:
        self.batches.inc()
        self.batch_seconds.observe(seconds)
        for table, n in result.new.items():
            self.rows.labels(table).inc(n)
        for table, n in result.present.items():
            if n:
                self.present.labels(table).inc(n)

    def positions(self, positions: dict[tuple[str, int], int], ends: dict[tuple[str, int], int] | None = None,
                  now: float | None = None, newest_ms: dict[tuple[str, int], int] | None = None) -> None:
        for (topic, partition), offset in positions.items():
            self.position.labels(topic, str(partition)).set(offset)
        if ends is not None:
            for (topic, partition), end in ends.items():
                lag = max(0, end - positions.get((topic, partition), 0))
                self.lag.labels(topic, str(partition)).set(lag)
                if now is None:
                    continue
                newest = (newest_ms or {}).get((topic, partition))
                if lag == 0:
                    self.behind.labels(topic, str(partition)).set(0)
                elif newest is not None:
                    self.behind.labels(topic, str(partition)).set(max(0.0, now - newest / 1000))
            if now is not None:
                self.lag_updated.set(now)
