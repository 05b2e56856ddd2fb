"""The exporter reads the committed books: its money counters equal the settlements, to the cent,
and a second worker that takes the tables over from the stored records exports the same figures."""
from __future__ import annotations

import collections
import json

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from craps_streams.app.shell import SettlementShell
from craps_streams.codec import encode_event
from craps_streams.metrics.exporter import FloorMetrics
from craps_streams.rules import WagerSettled
from craps_streams.sim.floor import floor_events
from craps_streams.surveillance.native_watch import as_table_watch


def shell_after(tables=5, hours=4, seed=4):
    shell = SettlementShell(lambda t: None)
    handled = [shell.handle(encode_event(r), "t", 0, i) for i, r in enumerate(floor_events(tables, hours, seed))]
    return shell, handled


def scrape(metrics) -> dict:
    out = collections.defaultdict(dict)
    for family in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        for sample in family.samples:
            out[sample.name][tuple(sorted(sample.labels.items()))] = sample.value
    return out


def owned(shell):
    return lambda: ((s, shell.books.get(t)) for t, s in shell.states.items())


def test_money_counters_equal_the_settlements_to_the_cent():
    shell, handled = shell_after()
    metrics = FloorMetrics(tables=owned(shell))
    metrics.observe(handled, 0.0)
    got = scrape(metrics)
    settled = [o for h in handled for o in h.outputs if type(o) is WagerSettled]
    expect = collections.Counter()
    for s in settled:
        key = (("paytable", s.paytable), ("table", s.table_id), ("wager", s.wager))
        expect["craps_handle_cents_total", key] += s.stake_cents
        expect["craps_won_cents_total", key] += s.won_cents
        expect["craps_stakes_collected_cents_total", key] += s.stake_cents if s.outcome == "lose" else 0
        expect["craps_stakes_returned_cents_total", key] += 0 if s.outcome == "lose" else s.stake_cents
    for (name, key), cents in expect.items():
        assert got[name][key] == cents, (name, key)
    outcomes = collections.Counter((s.table_id, s.wager, s.outcome) for s in settled)
    assert sum(got["craps_settlements_total"].values()) == len(settled)
    for (table, wager, outcome), n in outcomes.items():
        assert got["craps_settlements_total"][(("outcome", outcome), ("table", table), ("wager", wager))] == n
    throws = sum(1 for h in handled if h.event is not None and type(h.event).__name__ == "DiceThrown"
                 and h.event.valid and h.verdict == "applied")
    assert sum(got["craps_throws_total"].values()) == throws
    assert sum(got["craps_events_total"].values()) == len(handled)


def test_a_worker_taking_the_tables_over_exports_the_same_money():
    shell, handled = shell_after(seed=9)
    stored = {t: shell.stored_text(t) for t in shell.states}
    successor = SettlementShell(stored.get)
    for t in stored:
        successor.state_of(t)
    a, b = scrape(FloorMetrics(tables=owned(shell))), scrape(FloorMetrics(tables=owned(successor)))
    for name in ("craps_handle_cents_total", "craps_won_cents_total", "craps_stakes_collected_cents_total",
                 "craps_settlements_total", "craps_throws_total", "craps_hold_z_score",
                 "craps_hold_tail_probability", "craps_dice_cusum_ratio", "craps_dice_faces_total",
                 "craps_position_tail_probability"):
        assert a[name] == b[name] and a[name], name
    assert json.dumps(sorted(a["craps_table_open"].items())) == json.dumps(sorted(b["craps_table_open"].items()))


def test_surveillance_figures_come_from_the_committed_watch():
    from craps_streams.surveillance.tails import unit_distribution
    from craps_streams.odds import wager_odds

    shell, handled = shell_after(tables=3, hours=6, seed=5)
    got = scrape(FloorMetrics(tables=owned(shell)))
    throws = collections.Counter()
    sevens = collections.Counter()
    invalid = collections.Counter()
    for h in handled:
        e = h.event
        if e is not None and type(e).__name__ == "DiceThrown" and h.verdict == "applied":
            if e.valid:
                throws[(e.table_id, "1", str(e.die1))] += 1
                throws[(e.table_id, "2", str(e.die2))] += 1
                sevens[e.table_id] += e.die1 + e.die2 == 7
            else:
                invalid[e.table_id] += 1
    for (table, die, face), n in throws.items():
        assert got["craps_dice_faces_total"][(("die", die), ("face", face), ("table", table))] == n
    for table, n in sevens.items():
        assert got["craps_dice_sevens_total"][(("table", table),)] == n
        assert got["craps_invalid_rolls_total"][(("table", table),)] == invalid[table]
        assert 0 <= got["craps_dice_cusum_ratio"][(("table", table),)] < 1
    tails = got["craps_hold_tail_probability"]
    assert tails and all(0 <= p <= 1 for p in tails.values())
    for table, book in shell.books.items():
        for (wager, paytable), tail in as_table_watch(book.watch).holds.items():
            unit = unit_distribution(wager_odds(wager, shell.states[table].rules))
            p, _ = tail.tail(unit)
            assert tails[(("paytable", paytable), ("table", table), ("wager", wager))] == p
    assert got["craps_surveillance_threshold"][(("alert", "hold_anomaly"), ("statistic", "tail_probability"))] == 1e-9
    assert set(k for k, _ in got["craps_table_surveillance_alerts_total"]) and all(
        v == 0 for v in got["craps_table_surveillance_alerts_total"].values())  # a fair floor


def test_events_applied_counts_the_applied_and_released_verdicts():
    shell, handled = shell_after(tables=2, hours=1, seed=5)
    metrics = FloorMetrics(tables=owned(shell))
    assert metrics.events_applied() == 0
    metrics.observe(handled, 0.0)
    expected = sum(1 for h in handled if h.verdict in ("applied", "released"))
    assert expected > 0 and metrics.events_applied() == expected


def test_no_created_series_for_the_counters():
    shell, handled = shell_after(tables=2, hours=1)
    metrics = FloorMetrics(tables=owned(shell))
    metrics.observe(handled, 0.0)
    text = generate_latest(metrics.registry).decode()
    assert "craps_events_total{" in text
    assert "_created" not in text


def test_each_owned_partition_exports_its_committed_offset():
    owned_now = {3: 120, 5: 7}
    metrics = FloorMetrics(committed=lambda: owned_now)
    text = generate_latest(metrics.registry).decode()
    assert 'craps_committed_offset{partition="3"} 120.0' in text
    assert 'craps_committed_offset{partition="5"} 7.0' in text
    del owned_now[3]  # released: its next owner exports it
    owned_now[5] = 9
    text = generate_latest(metrics.registry).decode()
    assert 'partition="3"' not in text.split("craps_committed_offset", 1)[1]
    assert 'craps_committed_offset{partition="5"} 9.0' in text
