"""The ledger lag benchmark's reading of the ledger's own write times (benchmarks/ledger_lag.py)."""
import sys
from pathlib import Path

from prometheus_client import generate_latest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.ledger_lag import batch_seconds  # noqa: E402
from craps_streams.ledger.metrics import LedgerMetrics  # noqa: E402
from craps_streams.ledger.store import Written  # noqa: E402


def test_batch_seconds_reads_the_ledgers_histogram():
    metrics = LedgerMetrics()
    for seconds in [0.02] * 60 + [0.3] * 39 + [0.7]:
        metrics.written(Written({}, {}), seconds)
    assert batch_seconds(generate_latest(metrics.registry).decode()) == (100, 0.025, 0.5, 1)


def test_no_batch_yet_is_no_figure():
    total, p50, p99, slow = batch_seconds(generate_latest(LedgerMetrics().registry).decode())
    assert (total, slow) == (0, 0) and p50 != p50 and p99 != p99  # NaN: nothing to say
