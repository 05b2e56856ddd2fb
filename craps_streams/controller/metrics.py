"""A controller's Prometheus metrics, in a registry of its own (one controller, one /metrics).

    craps_controller_events_acknowledged_total{table}   events journaled and answered with a seq
    craps_controller_refusals_total{reason}              events refused at the input (no seq)
    craps_controller_events_forwarded_total              events the broker acknowledged
    craps_controller_held_events{table}                  journal depth: events not yet acknowledged by the broker
    craps_controller_oldest_held_seconds{table}          age of the oldest of them (0 when none)
    craps_controller_journal_commit_seconds              one group commit (its fsync), histogram
    craps_controller_ack_seconds                         input to durable: what the dealer waits, histogram
    craps_controller_broker_connected                    1 while the sender's producer is up
    craps_controller_clock_held_total                    stamps held because the host's clock stepped back
    craps_controller_retries_total                       entries sent again with a request_id already taken (same answer)
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

# Milliseconds matter here: the table waits for the answer (the target is a p99 under 20 ms).
_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class ControllerMetrics:
    def __init__(self):
        r = self.registry = CollectorRegistry()
        self.acknowledged = Counter("craps_controller_events_acknowledged", "Events journaled and answered with a seq",
                                    ["table"], registry=r)
        self.refusals = Counter("craps_controller_refusals", "Events refused at the input, by reason (no seq given)",
                                ["reason"], registry=r)
        self.forwarded = Counter("craps_controller_events_forwarded", "Events the broker acknowledged", registry=r)
        self.held = Gauge("craps_controller_held_events", "Events held at the table (not yet acknowledged by the broker)",
                          ["table"], registry=r)
        self.oldest = Gauge("craps_controller_oldest_held_seconds", "Age of the oldest event held at the table",
                            ["table"], registry=r)
        self.commit = Histogram("craps_controller_journal_commit_seconds", "One group commit of the journal (fsync)",
                                buckets=_BUCKETS, registry=r)
        self.ack = Histogram("craps_controller_ack_seconds", "Input to durable: the wait for an event's answer",
                             buckets=_BUCKETS, registry=r)
        self.broker = Gauge("craps_controller_broker_connected", "1 while the sender is connected to the broker",
                            registry=r)
        self.retries = Counter("craps_controller_retries", "Entries sent again with a request_id already taken",
                               registry=r)
        self.clock_held = Counter("craps_controller_clock_held", "Stamps held because the host's clock stepped back",
                                  registry=r)

    def show_held(self, tables, held: dict, now_ns: int) -> None:
        """Set the journal depth gauges from `Journal.held()` (every served table, 0 when none)."""
        for t in tables:
            n, oldest = held.get(t, (0, None))
            self.held.labels(t).set(n)
            self.oldest.labels(t).set(0 if oldest is None else max(0.0, (now_ns - oldest) / 1e9))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
