"""The worker's Prometheus metrics.

Money and throws come from what is committed: each owned table's hold book and state, stored in
the same Kafka transaction as the settlements (craps_streams/surveillance/hold_watch.py). A worker that
takes a table over after a crash or a rebalance exports that table's whole history, so the sum over
the live workers equals the settlements topic to the cent, whatever died on the way. Operational
rates (events by verdict, rejections, alerts, latency, lag) are this process's own counters.

Labels stay bounded: table, wager kind, paytable, outcome, reason, partition; never wager ids or
player positions. Money is in cents (`_cents`), times in seconds.
"""
from __future__ import annotations


from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from craps_streams.kafka.client_logs import lost_nodes
from craps_streams.metrics.gc_pauses import PAUSE_BUCKETS
from craps_streams.odds import all_wager_odds, wager_odds
from craps_streams.rules import EventRejected, SurveillanceAlerted, WagerSettled
from craps_streams.rules.verdict import APPLIED
from craps_streams.surveillance.native_watch import as_table_watch
from craps_streams.surveillance.table_watch import Thresholds
from craps_streams.surveillance.tails import unit_distribution
from craps_streams.metrics.unusual import LiveMeasures

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
MONEY = ("table", "wager", "paytable")

# Counters' `*_created` series (one per label set) are noise to a Prometheus user: it derives
# resets from the counter itself.
disable_created_metrics()


class FloorMetrics:
    def __init__(self, registry: CollectorRegistry | None = None, tables=lambda: (),
                 thresholds: Thresholds | None = None, committed=lambda: {}):
        """`tables()` yields (table state, hold book) for every table this worker owns;
        `thresholds` are the surveillance settings (the defaults unless given); `committed()` is
        {partition: input offset committed} for the partitions this worker owns."""
        r = self.registry = registry or CollectorRegistry()
        self.events = Counter("craps_events", "Input events by verdict", ["verdict"], registry=r)
        self.rejections = Counter("craps_rejections", "Rejected input events by reason", ["reason"], registry=r)
        self.alerts = Counter("craps_surveillance_alerts", "Surveillance alerts by kind", ["alert"], registry=r)
        self.latency = Histogram("craps_settlement_latency_seconds", "Event time to settlement committed",
                                 buckets=LATENCY_BUCKETS, registry=r)
        self.edge = Gauge("craps_theoretical_house_edge_ratio", "Exact house edge per unit staked",
                          ["wager", "paytable", "reading"], registry=r)
        # Filled while craps_streams.metrics.gc_pauses.GcPauses is installed (the worker's service does).
        self.gc_pauses = Histogram("craps_gc_pause_seconds", "Pauses of the cyclic garbage collector",
                                   ["generation"], buckets=PAUSE_BUCKETS, registry=r)
        self.lag = Gauge("craps_consumer_lag_messages", "Table events not yet settled", ["partition"], registry=r)
        # Readers of the outputs see only what lies below the last stable offset (craps_streams/app/stability.py).
        self.unstable = Gauge("craps_output_unstable_records", "Output records written above the last stable "
                              "offset (not yet readable by read_committed readers)", ["topic", "partition"], registry=r)
        self.lso_stalled = Gauge("craps_output_lso_stalled_seconds", "Seconds the last stable offset has stood "
                                 "still with records above it", ["topic", "partition"], registry=r)
        for odds in all_wager_odds():
            self.edge.labels(odds.wager, odds.paytable, odds.reading or "-").set(float(odds.house_edge))
        thresholds = thresholds or Thresholds()
        self.thresholds = Gauge("craps_surveillance_threshold", "Alert threshold of each surveillance "
                                "alert (tail probability; dice: CUSUM log-likelihood ratio)", ["alert", "statistic"],
                                registry=r)
        self.thresholds.labels("hold_anomaly", "tail_probability").set(thresholds.tail_alert)
        self.thresholds.labels("position_anomaly", "tail_probability").set(thresholds.position_alert)
        self.thresholds.labels("dice_bias", "seven").set(thresholds.dice.seven_h)
        self.thresholds.labels("dice_bias", "face").set(thresholds.dice.face_h)
        self.thresholds.labels("dice_bias", "cell").set(thresholds.dice.cell_h)
        r.register(_OwnedTables(tables, thresholds))
        r.register(_LostBrokers())
        r.register(_CommittedOffsets(committed))

    def events_applied(self) -> int:
        """Input events applied so far by this process (a gap-filling event that released held
        ones is applied too), read through the registry's public sample API."""
        get = self.registry.get_sample_value
        return int(sum(get("craps_events_total", {"verdict": v}) or 0 for v in ("applied", "released")))

    def observe(self, handled_list, now_s: float, quiet: int = 0) -> None:
        """Count a committed batch: its Handled messages, and `quiet` events applied in quiet runs
        (craps_streams.app.shell.SettledBatch: applied, no outputs)."""
        events, latency = self.events, self.latency
        if quiet:
            events.labels(APPLIED).inc(quiet)
        for handled in handled_list:
            events.labels(handled.verdict).inc()
            for o in handled.outputs:
                kind = type(o)
                if kind is WagerSettled:
                    latency.observe(max(0.0, now_s - o.ts / 1000.0))
                elif kind is EventRejected:
                    self.rejections.labels(o.reason).inc()
                elif kind is SurveillanceAlerted:
                    self.alerts.labels(o.alert).inc()


class _CommittedOffsets:
    """Prometheus collector of the input offset each owned partition has committed (its next table
    event to settle): where the group's committed offsets are, read from the worker itself. It
    moves at every committed transaction; a partition whose gauge stands still while its lag is
    above 0 is not settling (a node lost, a takeover stuck), and it is read with no Kafka client in
    the way, so it shows that even while the group's coordinator does not answer."""

    def __init__(self, committed):
        self.committed = committed

    def describe(self):
        return []

    def collect(self):
        gauge = GaugeMetricFamily("craps_committed_offset", "Input offset committed with the partition's "
                                  "last transaction (its next table event to settle)", labels=("partition",))
        for partition, offset in sorted(self.committed().items()):
            gauge.add_metric((str(partition),), offset)
        yield gauge


class _LostBrokers:
    """Prometheus collector of the broker nodes this process's Kafka clients fail to reach now
    (craps_streams/kafka/client_logs.py): the status panel says a broker is lost from it."""

    def describe(self):
        return []

    def collect(self):
        since = GaugeMetricFamily("craps_kafka_broker_lost_since_seconds", "Wall clock of the first failed "
                                  "connection to a broker node the clients still fail to reach", labels=("node",))
        attempts = GaugeMetricFamily("craps_kafka_broker_lost_attempts", "Failed connections to that node since",
                                     labels=("node",))
        for n in lost_nodes():
            since.add_metric((n.node,), n.since_s)
            attempts.add_metric((n.node,), n.attempts)
        yield from (since, attempts)


class _OwnedTables:
    """Prometheus collector over the committed state and hold book of each owned table."""

    def __init__(self, tables, thresholds: Thresholds):
        self.tables = tables
        self.thresholds = thresholds
        self.measures = LiveMeasures()  # the lines' p, off the event loop the scrape runs on

    def describe(self):
        return []  # collected fresh on each scrape; nothing to check at registration

    def collect(self):
        money = {name: CounterMetricFamily(name, doc, labels=MONEY) for name, doc in (
            ("craps_handle_cents", "Stakes of settled wagers (handle), cents"),
            ("craps_stakes_collected_cents", "Stakes collected on lost wagers, cents"),
            ("craps_stakes_returned_cents", "Stakes returned on won or pushed wagers, cents"),
            ("craps_won_cents", "Amounts won by players (stakes excluded), cents"))}
        settlements = CounterMetricFamily("craps_settlements", "Settled wagers by outcome",
                                          labels=("table", "wager", "outcome"))
        expected = GaugeMetricFamily("craps_expected_house_win_cents", "Handle x house edge, cents", labels=MONEY)
        std_dev = GaugeMetricFamily("craps_house_win_std_dev_cents", "Std dev of the house win, cents",
                                    labels=MONEY)
        z = GaugeMetricFamily("craps_hold_z_score", "(house win - expected) / std dev", labels=MONEY)
        throws = CounterMetricFamily("craps_throws", "Valid throws", labels=("table",))
        table_open = GaugeMetricFamily("craps_table_open", "1 while the table is open", labels=("table",))
        last_throw = GaugeMetricFamily("craps_last_throw_timestamp_seconds", "Event time of the last valid throw",
                                       labels=("table",))
        held = GaugeMetricFamily("craps_table_held_events", "Events held beyond a sequence gap (the table "
                                 "is suspended while above 0)", labels=("table",))
        tail_p = GaugeMetricFamily(
            "craps_hold_tail_probability", "P(house win <= observed | fair dice) over the wagers decided by "
            "the dice: exact, or its Chernoff upper bound; hold_anomaly at or below the threshold",
            labels=MONEY)
        p_value = GaugeMetricFamily(
            "craps_hold_p_value", "P(a house win at least this far from theory, either side | fair dice) over "
            "the wagers decided by the dice: the report's p of the line (investigated at or below 0.05)",
            labels=MONEY)
        dice_ratio = GaugeMetricFamily("craps_dice_cusum_ratio", "Largest dice CUSUM as a fraction of its "
                                       "threshold (1 = dice_bias)", labels=("table",))
        faces = CounterMetricFamily("craps_dice_faces", "Valid throws by die and face", labels=("table", "die", "face"))
        sevens = CounterMetricFamily("craps_dice_sevens", "Valid throws totalling 7", labels=("table",))
        invalid = CounterMetricFamily("craps_invalid_rolls", "Invalid rolls (§ 623a.8), counted apart",
                                      labels=("table",))
        position_p = GaugeMetricFamily("craps_position_tail_probability", "Smallest Bonferroni p-value of a "
                                       "position's results on a wager kind (positions not exported as labels)",
                                       labels=("table",))
        raised = CounterMetricFamily("craps_table_surveillance_alerts", "Surveillance alerts raised at the "
                                     "table, from its committed state (exactly once)", labels=("table", "alert"))
        dice_watch = self.thresholds.dice
        measured = []  # (labels, odds, stakes, house win) of the lines decided by the dice
        for state, book in self.tables():
            table = state.table_id
            # The Python form of a natively kept watch (craps_streams/surveillance/native_watch.py).
            watch = as_table_watch(book.watch) if book is not None and book.watch is not None else None
            if watch is not None:
                d = watch.dice
                dice_ratio.add_metric((table,), dice_watch.largest_ratio(d))
                for die in (1, 2):
                    for face in range(1, 7):
                        n = sum(d.cells[6 * (face - 1) + b] for b in range(6)) if die == 1 else \
                            sum(d.cells[6 * a + face - 1] for a in range(6))
                        faces.add_metric((table, str(die), str(face)), n)
                sevens.add_metric((table,), sum(d.cells[6 * a + 5 - a] for a in range(6)))
                invalid.add_metric((table,), d.invalid)
                position_p.add_metric((table,), watch.smallest_position_tail())
                for kind in ("hold_anomaly", "dice_bias", "position_anomaly"):
                    raised.add_metric((table, kind), watch.raised.get(kind, 0))
                for (wager, paytable), tail in watch.holds.items():
                    if tail.decisions:
                        odds = wager_odds(wager, state.rules)
                        p, _ = tail.tail(unit_distribution(odds))
                        tail_p.add_metric((table, wager, paytable), p)
                        measured.append(((table, wager, paytable), odds, tail.stakes, tail.house_win_cents))
            throws.add_metric((table,), state.throws)
            table_open.add_metric((table,), 0 if state.closed else 1)
            held.add_metric((table,), len(state.held))
            if state.last_throw_ts:
                last_throw.add_metric((table,), state.last_throw_ts / 1000.0)
            by_outcome: dict[tuple, int] = {}
            for (wager, paytable), line in (book.lines.items() if book is not None else ()):
                labels = (table, wager, paytable)
                money["craps_handle_cents"].add_metric(labels, line.handle_cents)
                money["craps_stakes_collected_cents"].add_metric(labels, line.collected_cents)
                money["craps_stakes_returned_cents"].add_metric(labels, line.returned_cents)
                money["craps_won_cents"].add_metric(labels, line.won_cents)
                expected.add_metric(labels, line.expected_house_win_cents)
                std_dev.add_metric(labels, line.std_dev_cents)
                z.add_metric(labels, line.z_score)
                for outcome, n in (("win", line.wins), ("lose", line.losses), ("push", line.pushes)):
                    by_outcome[(table, wager, outcome)] = by_outcome.get((table, wager, outcome), 0) + n
            for labels, n in by_outcome.items():
                settlements.add_metric(labels, n)
        for labels, p in self.measures.look(measured).items():
            p_value.add_metric(labels, p)
        yield from money.values()
        yield from (settlements, expected, std_dev, z, throws, table_open, last_throw, held)
        yield from (tail_p, p_value, dice_ratio, faces, sevens, invalid, position_p, raised)
