"""The worker's Prometheus metrics, updated from what each committed batch settled.

Labels stay bounded: table, wager kind, paytable, outcome, reason, partition; never wager ids or
player positions. Money is in cents (`_cents`), times in seconds.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from streams.metrics.hold_vs_theory import HoldVsTheory
from streams.odds import all_wager_odds, wager_odds
from streams.rules import DiceThrown, EventRejected, WagerSettled
from streams.rules.events import SurveillanceAlerted

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class FloorMetrics:
    def __init__(self, registry: CollectorRegistry | None = None, z_alert_threshold: float = 4.0):
        r = self.registry = registry or CollectorRegistry()
        money = ("table", "wager", "paytable")
        self.events = Counter("craps_events", "Input events by verdict", ["verdict"], registry=r)
        self.rejections = Counter("craps_rejections", "Rejected input events by reason", ["reason"], registry=r)
        self.handle = Counter("craps_handle_cents", "Stakes of settled wagers (handle), cents", money, registry=r)
        self.collected = Counter("craps_stakes_collected_cents", "Stakes collected on lost wagers, cents", money, registry=r)
        self.returned = Counter("craps_stakes_returned_cents", "Stakes returned on won or pushed wagers, cents", money, registry=r)
        self.won = Counter("craps_won_cents", "Amounts won by players (stakes excluded), cents", money, registry=r)
        self.settlements = Counter("craps_settlements", "Settled wagers by outcome", ["table", "wager", "outcome"], registry=r)
        self.throws = Counter("craps_throws", "Valid throws", ["table"], registry=r)
        self.alerts = Counter("craps_surveillance_alerts", "Surveillance alerts by kind", ["alert"], registry=r)
        self.latency = Histogram("craps_settlement_latency_seconds", "Event time to settlement committed",
                                 buckets=LATENCY_BUCKETS, registry=r)
        self.edge = Gauge("craps_theoretical_house_edge_ratio", "Exact house edge per unit staked",
                          ["wager", "paytable", "reading"], registry=r)
        self.expected = Gauge("craps_expected_house_win_cents", "Handle x house edge, cents", money, registry=r)
        self.std_dev = Gauge("craps_house_win_std_dev_cents", "Std dev of the house win, cents", money, registry=r)
        self.z = Gauge("craps_hold_z_score", "(house win - expected) / std dev", money, registry=r)
        self.lag = Gauge("craps_consumer_lag_messages", "Table events not yet settled", ["partition"], registry=r)
        self.table_open = Gauge("craps_table_open", "1 while the table is open", ["table"], registry=r)
        self.last_throw = Gauge("craps_last_throw_timestamp_seconds", "Event time of the last valid throw",
                                ["table"], registry=r)
        for odds in all_wager_odds():
            self.edge.labels(odds.wager, odds.paytable, odds.reading or "-").set(float(odds.house_edge))
        self.theory: dict[tuple, HoldVsTheory] = {}
        self.z_alert_threshold = z_alert_threshold

    def observe(self, handled_list, states: dict, now_s: float) -> list[tuple]:
        """Count a committed batch; returns the (table, wager, paytable, z) that crossed the alert
        threshold in it."""
        crossed = []
        for handled in handled_list:
            self.events.labels(handled.verdict).inc()
            for o in handled.outputs:
                kind = type(o)
                if kind is WagerSettled:
                    crossed += self._settled(o, states.get(o.table_id), now_s)
                elif kind is EventRejected:
                    self.rejections.labels(o.reason).inc()
                elif kind is SurveillanceAlerted:
                    self.alerts.labels(o.alert).inc()
            state = handled.state
            if state is not None and handled.verdict == "applied":
                self.table_open.labels(state.table_id).set(0 if state.closed else 1)
                event = handled.event
                if type(event) is DiceThrown and event.valid:
                    self.throws.labels(event.table_id).inc()
                    self.last_throw.labels(event.table_id).set(event.ts / 1000.0)
        return crossed

    def _settled(self, s: WagerSettled, state, now_s: float) -> list[tuple]:
        labels = (s.table_id, s.wager, s.paytable)
        self.handle.labels(*labels).inc(s.stake_cents)
        house_win = 0
        if s.outcome == "lose":
            self.collected.labels(*labels).inc(s.stake_cents)
            house_win = s.stake_cents
        else:
            self.returned.labels(*labels).inc(s.stake_cents)
            self.won.labels(*labels).inc(s.won_cents)
            house_win = -s.won_cents
        self.settlements.labels(s.table_id, s.wager, s.outcome).inc()
        self.latency.observe(max(0.0, now_s - s.ts / 1000.0))
        theory = self.theory.get(labels)
        if theory is None:
            if state is None:
                return []
            odds = wager_odds(s.wager, state.rules)
            theory = self.theory[labels] = HoldVsTheory(float(odds.house_edge), odds.std_dev)
        before = theory.z_score
        theory.add(s.stake_cents, house_win)
        self.expected.labels(*labels).set(theory.expected_house_win_cents)
        self.std_dev.labels(*labels).set(theory.std_dev_cents)
        z = theory.z_score
        self.z.labels(*labels).set(z)
        if z <= -self.z_alert_threshold < before:
            return [(*labels, z)]
        return []
