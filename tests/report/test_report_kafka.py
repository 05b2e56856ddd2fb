"""Reconciliation on the real broker: a floor fed to a worker; the report's per-table house win
equals the sum of that table's records in the settlements topic and the worker's Prometheus
counters, to the cent; the report made from the topic equals the one made from its archive."""
from __future__ import annotations

import json
import urllib.request
from collections import defaultdict

import pytest
from prometheus_client.parser import text_string_to_metric_families

from craps_streams.codec import decode_output
from craps_streams.kafka.reader import read_committed
from tests.conftest import wait_for
from tests.replay.replay_fixtures import floor_lines, replay_settlements_of, write_lines

pytestmark = pytest.mark.kafka

# 2026-01-02 04:00 local (New York): two hours cross the 06:00 start of the gaming day.
START_MS = 1_767_344_400_000


def settled_by_table(pipeline) -> dict:
    wins: dict = defaultdict(int)
    n = 0
    for m in read_committed(pipeline.prefix + "settlements", "admin", bootstrap=pipeline.bootstrap):
        s = decode_output(m.value)
        wins[s["table_id"]] += s["stake_cents"] if s["outcome"] == "lose" else -s["won_cents"]
        n += 1
    return dict(wins), n


def counters_by_table(port: int) -> dict:
    """The worker's counters (its /metrics): stakes collected minus amounts won, per table."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    wins: dict = defaultdict(int)
    for family in text_string_to_metric_families(text):
        if family.name in ("craps_stakes_collected_cents", "craps_won_cents"):
            sign = 1 if family.name == "craps_stakes_collected_cents" else -1
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    wins[sample.labels["table"]] += sign * int(sample.value)
    return dict(wins)


def report_json(pipeline, tmp_path, name: str, *history: str) -> dict:
    out = tmp_path / name
    run = pipeline.run("report", *history, "--from", "2026-01-01", "--to", "2026-01-02", "--out", str(out),
                       "--no-html", "--no-progress", "--bootstrap", pipeline.bootstrap)
    assert run.returncode == 0, run.stderr
    return json.loads((out / "report.json").read_text())


def table_wins(report: dict) -> dict:
    wins: dict = defaultdict(int)
    for row in report["tables"]:
        wins[row["table_id"]] += row["house_win_cents"]
    return dict(wins)


@pytest.mark.timeout(600)
def test_report_reconciles_to_the_settlements_topic_and_the_counters(pipeline, tmp_path):
    lines = floor_lines(tables=4, hours=2.0, seed=17, bad_rate=0.02, start_ms=START_MS)
    write_lines(tmp_path / "floor.jsonl", lines)
    expected = len(replay_settlements_of(lines))
    assert expected > 300
    worker = pipeline.start_worker()
    pipeline.run("produce", str(tmp_path / "floor.jsonl"), "--quiet")
    topic_wins = wait_for(lambda: (got := settled_by_table(pipeline)) and got[1] >= expected and got[0],
                          240, f"{expected} settlements")
    assert settled_by_table(pipeline)[1] == expected
    counters = wait_for(lambda: (c := counters_by_table(worker.web_port)) == topic_wins and c, 60,
                        "the worker's counters to equal the settlements topic")

    from_topic = report_json(pipeline, tmp_path, "topic", "--from-topic")
    assert table_wins(from_topic) == topic_wins == counters
    assert sum(r["wagers"] for r in from_topic["tables"]) == expected
    # both gaming days have money: the range is the sum of its days
    days = {r["gaming_day"] for r in from_topic["tables"]}
    assert days == {"2026-01-01", "2026-01-02"}
    period = next(r for r in from_topic["floor"] if r["scope"] == "period" and r["wager"] == "all")
    assert period["house_win_cents"] == sum(topic_wins.values())
    assert from_topic["provenance"]["history"]["offsets"]
    assert from_topic["exceptions"]["rejections"]["count"] + from_topic["exceptions"]["undated_rejections"]["count"] > 5

    archived = pipeline.run("archive", "--out", str(tmp_path / "archive"), "--no-progress")
    assert "archive OK" in archived.stderr, archived.stderr
    from_archive = report_json(pipeline, tmp_path, "archive", str(tmp_path / "archive"))
    topic_body = {k: v for k, v in from_topic.items() if k != "provenance"}
    archive_body = {k: v for k, v in from_archive.items() if k != "provenance"}
    assert archive_body == topic_body
    assert from_archive["provenance"]["history"]["archive"]["chain_head"]
