"""The ledger's lag on the status panel: from the ledger's own /metrics (craps_streams/ledger/metrics.py),
the records of the settlements topic not yet rows and how long they have waited, said in words."""
from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from craps_streams.ledger.metrics import LedgerMetrics
from craps_streams.metrics.panel import LedgerLag, ledger_words, plain_line, render, snapshot_of

from tests.metrics.test_panel import LINKS, SOURCES, floor, shown  # noqa: F401 - floor: a fixture

NOW = 1_767_225_600.0
SETTLEMENTS, SURVEILLANCE = "craps.run-x.settlements", "craps.run-x.surveillance"


def ledger_text(positions, ends, newest_ms, measured=NOW) -> str:
    metrics = LedgerMetrics()
    metrics.positions(positions, ends, measured, newest_ms)
    return generate_latest(metrics.registry).decode()


@pytest.mark.parametrize("lag, words, level", [
    (LedgerLag(0, 0.0, NOW - 1), "caught up with the settlements", "ok"),
    (LedgerLag(12, 0.4, NOW - 1), "12 settlements behind, 0.4 s: keeping up", "ok"),
    (LedgerLag(1, None, NOW - 1), "1 settlement behind: keeping up", "ok"),
    (LedgerLag(340, 7.25, NOW - 1), "340 settlements behind, 7.2 s: falling behind", "behind"),
    (LedgerLag(340, 75.0, NOW - 1), "340 settlements behind, 75 s: far behind, finance's figures are stale "
                                    "(docs/operating/ledger.md)", "far"),
    (LedgerLag(1_200, 2.0, NOW - 1), "1,200 settlements behind, 2.0 s: far behind", "far"),
    (LedgerLag(0, 0.0, NOW - 300), "lag last measured 5 min ago: stalled or cut off from the broker", "far"),
    (LedgerLag(0, None, None), "lag not measured yet", "behind"),
])
def test_the_ledgers_lag_in_words(lag, words, level):
    said, how = ledger_words(lag, NOW)
    assert said.startswith(words) and how == level


def test_the_snapshot_reads_the_settlements_lag_of_every_partition_and_nothing_else():
    text = ledger_text({(SETTLEMENTS, 0): 100, (SETTLEMENTS, 1): 50, (SURVEILLANCE, 0): 0},
                       {(SETTLEMENTS, 0): 130, (SETTLEMENTS, 1): 62, (SURVEILLANCE, 0): 900},
                       {(SETTLEMENTS, 0): int((NOW - 3) * 1000), (SETTLEMENTS, 1): int((NOW - 12) * 1000),
                        (SURVEILLANCE, 0): int((NOW - 500) * 1000)})
    snap = snapshot_of(NOW, [], ledger_texts=[text])
    assert snap.ledger == LedgerLag(42, 12.0, NOW)  # the surveillance topic's 900 are not settlements


def test_the_panel_and_the_log_line_say_it(floor):
    _, text, doc, _ = floor
    ledger = ledger_text({(SETTLEMENTS, 0): 100}, {(SETTLEMENTS, 0): 440}, {(SETTLEMENTS, 0): int((NOW - 8) * 1000)})
    snap = snapshot_of(NOW, [text], doc, (1, 1), (), SOURCES, ledger_texts=[ledger])
    page = "\n".join(shown(render(snap, LINKS, height=60), width=200))
    assert "│ ledger 340 settlements behind, 8.0 s: falling behind" in page
    assert "· ledger 340 settlements behind, 8.0 s: falling behind" in plain_line(snap)
    for height in (24, 30):
        assert len(shown(render(snap, LINKS, height=height), height=height)) <= height
    without = snapshot_of(NOW, [text], doc, (1, 1), (), SOURCES)
    assert without.ledger is None and "ledger" not in plain_line(without)
    assert "│ ledger" not in "\n".join(shown(render(without, LINKS, height=60), width=200))
