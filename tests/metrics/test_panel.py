"""The status panel (`craps-streams status`): its snapshot made from a worker's real metrics text
and the floor view's real /api/floor document of the same floor, its rendering (pure) with a
snapshot, its plain lines for a log, and its sources read over HTTP.

The floor: eight simulated tables mid-shift, one event of T004 missing (the table suspended, its
sequence_gap alert open), settled by the worker's shell; the view's rows folded from the same
history (tests/floor/replayed.py)."""
from __future__ import annotations

import collections
import json
import re

import pytest
from prometheus_client import generate_latest
from rich.console import Console

from craps_streams.app.shell import SettlementShell
from craps_streams.codec import encode_event, to_json_line
from craps_streams.metrics.exporter import FloorMetrics
from craps_streams.metrics.panel import _samples, Links, Snapshot, Source, TableLine, plain_line, render, snapshot_of, with_rates
from craps_streams.metrics.panel_sources import Sources, take
from craps_streams.rules import WagerSettled
from craps_streams.sim.floor import floor_events
from craps_streams.metrics.unusual import p_text

from tests.conftest import forget_lost_nodes, free_port
from tests.floor.replayed import ReplayedFloor

LINKS = Links("http://127.0.0.1:6070/", ("http://127.0.0.1:6066/metrics",), "http://127.0.0.1:9090",
              "craps.run-20260101-000000", "Ctrl-C stops everything",
              (("follow the stream", "craps-streams tail --topics settlements,alerts,rejections"),
               ("audit the floor", "craps-streams audit --from-topic --settlements-topic")))

SOURCES = (Source("metrics", LINKS.metrics_urls[0]), Source("floor view", LINKS.floor_url + "api/floor"),
           Source("Prometheus", LINKS.prometheus_url))


def floor_records(tables=8, hours=3.0, seed=7, share=0.8, gap_table="T004"):
    records = list(floor_events(tables, hours, seed, 0.0))
    records = records[:int(len(records) * share)]
    if gap_table:
        at = [i for i, r in enumerate(records) if isinstance(r, dict) and r["table_id"] == gap_table]
        del records[at[-5]]
    return records


def settled_floor(records):
    shell = SettlementShell(lambda t: None)
    handled = [shell.handle(encode_event(r), "t", 0, i) for i, r in enumerate(records)]
    metrics = FloorMetrics(tables=lambda: ((s, shell.books.get(t)) for t, s in shell.states.items()))
    metrics.observe(handled, 0.0)
    settled = [o for h in handled for o in h.outputs if type(o) is WagerSettled]
    return shell, metrics, settled


def floor_doc(records) -> dict:
    floor = ReplayedFloor([to_json_line(r) for r in records])
    return {"instance": "1", "tables": [floor.row(t) for t in floor.table_ids()]}


@pytest.fixture(scope="module")
def floor():
    forget_lost_nodes()  # made before the tests' own reset (module scope): a node another test lost is not this floor's
    records = floor_records()
    shell, metrics, settled = settled_floor(records)
    return shell, generate_latest(metrics.registry).decode(), floor_doc(records), settled


def shown(renderable, width=150, height=60) -> list[str]:
    console = Console(width=width, height=height, record=True, color_system=None, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text().rstrip("\n").split("\n")


def test_the_snapshot_adds_up_the_metrics_to_the_cent(floor):
    shell, text, doc, settled = floor
    snap = snapshot_of(1_000.0, [text], doc, (1, 1), ())
    assert snap.settled == len(settled) > 0
    assert snap.handle_cents == sum(s.stake_cents for s in settled)
    house_win = sum(s.stake_cents for s in settled if s.outcome == "lose") - sum(s.won_cents for s in settled)
    assert snap.house_win_cents == house_win
    by_table = collections.Counter(s.table_id for s in settled)
    assert {t.table_id: t.settled for t in snap.tables} == dict(by_table)
    lines = {(t, w, p): line for t, book in shell.books.items() for (w, p), line in book.lines.items()}
    assert snap.expected_cents == pytest.approx(sum(x.expected_house_win_cents for x in lines.values()))
    # The least probable line under fair dice (tests/metrics/test_one_measure.py: the report's p).
    assert snap.extreme.p == min(s.value for s in _samples([text]) if s.name == "craps_hold_p_value")
    assert lines[snap.extreme.table_id, snap.extreme.wager, snap.extreme.paytable].z_score == \
        pytest.approx(snap.extreme.z)
    suspended = [t.table_id for t in snap.tables if t.held_events]
    assert suspended == ["T004"]
    assert [(a.table_id, a.alert) for a in snap.open_alerts] == [("T004", "sequence_gap")]
    assert snap.alerts_raised == sum(r["alerts_raised"] for r in doc["tables"]) > 1
    assert snap.last_alert.ts_ms == max(r["last_alert"]["ts"] for r in doc["tables"] if r["last_alert"])
    assert snap.settlements_per_s is None  # one look: no rate yet


def test_the_rates_come_from_two_looks():
    a = Snapshot(100.0, tables=(TableLine("T001", settled=1_000),),
                 latency_buckets=((0.05, 90.0), (0.1, 100.0), (float("inf"), 100.0)))
    b = with_rates(Snapshot(110.0, tables=(TableLine("T001", settled=1_250),),
                            latency_buckets=((0.05, 190.0), (0.1, 297.0), (float("inf"), 300.0))), a)
    assert b.settlements_per_s == 25.0
    assert b.latency_p99_s == float("inf")  # 197 of the 200 new ones within 100 ms: the 99th is beyond
    c = with_rates(Snapshot(110.0, tables=(TableLine("T001", settled=1_250),),
                            latency_buckets=((0.05, 190.0), (0.1, 300.0), (float("inf"), 300.0))), a)
    assert c.latency_p99_s == 0.1
    restarted = with_rates(Snapshot(120.0, tables=(TableLine("T001", settled=10),)), b)
    assert restarted.settlements_per_s is None


def test_the_panel_shows_the_floor_its_links_and_commands(floor):
    _, text, doc, _ = floor
    snap = snapshot_of(1_767_225_600.0, [text], doc, (1, 1), ("CrapsHoldAnomaly",), SOURCES)
    out = shown(render(snap, LINKS, height=40))
    page = "\n".join(out)
    assert len(out) <= 40
    assert out[0].startswith("╭─ craps-streams · craps.run-20260101-000000 · 00:00:00 UTC")
    assert "Ctrl-C stops everything" in out[-1]
    hold = f"{100 * snap.house_win_cents / snap.handle_cents:.1f}%"
    theory = f"{100 * snap.expected_cents / snap.handle_cents:.1f}%"
    assert f"floor hold {hold} against theory {theory}" in page
    assert f"settled {snap.settled:,} (—)" in page
    assert "open alerts 1: T004 sequence_gap seq" in page
    assert re.search(r"alerts raised 4, the last: T004 sequence_gap seq \d+ at ", page)
    assert "sources metrics ok · floor view ok · Prometheus 1/1 targets up, firing: CrapsHoldAnomaly" in page
    e = snap.extreme
    assert f"most unusual {e.table_id} {e.wager} ({e.paytable}) p {p_text(e.p)} (z {e.z:+.2f}): a " in page
    rows = {line.split()[1]: line for line in out if re.match(r"│ T\d{3} ", line)}
    assert sorted(rows) == [t.table_id for t in snap.tables]
    for t in snap.tables:
        row = rows[t.table_id].split()
        assert f"{100 * t.house_win_cents / t.handle_cents:.1f}%" in row, row
        assert (t.table_id == "T004") == ("SUSPENDED" in row) == ("sequence_gap" in row)
    for url in (LINKS.floor_url, LINKS.metrics_urls[0], LINKS.prometheus_url):
        assert url in page
    for what, command in LINKS.commands:
        assert re.search(rf"{what} +{re.escape(command)}", page)


def test_the_panel_fits_its_height_however_many_tables():
    tables = tuple(TableLine(f"T{n:03d}", throws=n, settled=10 * n, handle_cents=1_000 * n, house_win_cents=50 * n,
                             expected_cents=40.0 * n, open_alerts=()) for n in range(1, 61))
    snap = Snapshot(0.0, tables=tables, open_alerts=(), alerts_raised=0)
    for height in (24, 30, 45):
        out = shown(render(snap, LINKS, height=height), height=height)
        assert len(out) <= height, (height, len(out))
        more = [line for line in out if "more" in line]
        assert len(more) == 1
        hidden = int(re.search(r"… (\d+) more", more[0]).group(1))
        visible = sum(1 for line in out if re.match(r"│ T\d{3} ", line))
        assert visible + hidden == 60
        assert f"{sum(10 * n for n in range(61 - hidden, 61)):,}" in more[0]


def test_plain_lines_for_a_log(floor):
    _, text, doc, _ = floor
    line = plain_line(snapshot_of(1_767_225_600.0, [text], doc, (1, 1), (), SOURCES))
    assert "\x1b" not in line and "\n" not in line
    assert line.startswith("00:00:00 UTC · tables 8 open 8 suspended 1 · settled ")
    assert "open alerts 1 (T004:sequence_gap)" in line and "prometheus 1/1 up firing 0" in line


def test_unreachable_sources_are_named_not_raised():
    port = free_port()  # nothing listens there
    sources = Sources((f"http://127.0.0.1:{port}/metrics",), f"http://127.0.0.1:{port}/",
                      f"http://127.0.0.1:{port}", timeout_s=1.0)
    snap = take(sources, 0.0)
    assert [(s.name, s.error is not None) for s in snap.sources] == \
        [("metrics", True), ("floor view", True), ("Prometheus", True)]
    assert snap.open_alerts is None and snap.tables == ()
    page = "\n".join(shown(render(snap, LINKS)))
    assert "metrics unreachable (" in page and "floor view unreachable (" in page
    assert "open alerts unknown (the floor view did not answer)" in page
    assert plain_line(snap).endswith("unreachable: metrics, floor view, Prometheus")


def test_a_table_whose_events_are_held_at_its_controller_is_shown_so(floor):
    """A controller's /metrics read beside the worker's: its tables' held events on the panel, the
    table's row and the plain line (T005: 340 events held at the table, oldest 2 min)."""
    from craps_streams.controller.metrics import ControllerMetrics

    _, text, doc, _ = floor
    controller = ControllerMetrics()
    controller.show_held(("T005", "T006"), {"T005": (340, 0)}, now_ns=125 * 10**9)
    snap = snapshot_of(1_767_225_600.0, [text, generate_latest(controller.registry).decode()], doc, (1, 1), (),
                       SOURCES)
    t5 = next(t for t in snap.tables if t.table_id == "T005")
    assert (t5.at_table, t5.at_table_oldest_s) == (340, 125.0)
    out = "\n".join(shown(render(snap, LINKS, height=60)))
    assert "T005: 340 events held at the table, oldest 2 min" in out
    assert re.search(r"│ T005 +340 events held at the table", out)
    assert "held at the tables T005:340" in plain_line(snap)
    for height in (24, 30):
        assert len(shown(render(snap, LINKS, height=height), height=height)) <= height


def test_the_panel_says_a_broker_node_the_workers_lost(floor):
    """The workers' clients' lost nodes (craps_streams/kafka/client_logs.py, exported by the worker's
    metrics) are said on the panel, first on the sources line, and in the plain log line."""
    import logging

    from craps_streams.kafka import client_logs

    _, text, doc, _ = floor
    assert "craps_kafka_broker_lost_since_seconds{" not in text  # nothing lost: nothing said
    client_logs.install()
    logging.getLogger("aiokafka").error("Unable connect to node with id %s: %s", 2, "Connect call failed")
    try:
        metrics = generate_latest(FloorMetrics(tables=lambda: ()).registry).decode()
        snap = snapshot_of(1_767_225_600.0, [metrics], doc, (1, 1), (), SOURCES)
        assert [(n, a) for n, _, a in snap.brokers_lost] == [("2", 1)]
        page = "\n".join(shown(render(snap, LINKS, height=40), width=200))
        assert re.search(r"│ Kafka broker node 2 lost since \d\d:\d\d:\d\d UTC \(1 failed connections\): the worker "
                         r"retries it and moves to its partitions' new leaders · sources metrics ok", page), page
        assert "Kafka broker node 2 lost since" in plain_line(snap)
    finally:
        client_logs._FILTER.nodes.clear()
    assert "Kafka broker node" not in "\n".join(shown(render(snapshot_of(1.0, [text], doc), LINKS)))
