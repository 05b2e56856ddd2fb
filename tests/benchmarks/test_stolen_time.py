"""The per-second steal record that splits a latency run's tail (benchmarks/stolen_time.py)."""
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from stolen_time import StealSampler, StolenSecond, split_tail, steal_during, worst_window  # noqa: E402


def record(*steals: float, t0: float = 1000.0) -> list[StolenSecond]:
    return [StolenSecond(t0 + i, t0 + i + 1, s) for i, s in enumerate(steals)]


def test_steal_during_takes_the_worst_overlapping_second():
    seconds = record(0.0, 0.3, 0.0, 0.05)
    assert steal_during(seconds, 1000.2, 1000.8) == 0.0
    assert steal_during(seconds, 1000.5, 1001.1) == 0.3  # reaches into the stolen second
    assert steal_during(seconds, 1002.5, 1003.5) == 0.05
    assert steal_during(seconds, 990.0, 995.0) == 0.0  # before the record


def test_worst_window_is_the_highest_mean_of_consecutive_seconds():
    assert worst_window(record(0, 0, 1, 1, 0, 0), width=2) == 1.0
    assert worst_window(record(0, 1, 0, 1, 0, 0), width=2) == 0.5
    assert worst_window(record(0.2), width=10) == 0.2


def test_split_tail_tells_stolen_waits_from_clear_ones():
    seconds = record(*([0.0] * 50 + [0.4] + [0.0] * 50))
    # 200 fast settlements over the 101 seconds (two of them read in the stolen second 50), one slow
    # one that waited through second 50 and one slow one that met no stolen second: only the
    # latter is the pipeline's.
    settlements = [(1000.0 + i * 0.5 + 0.01, 0.005) for i in range(200)]
    settlements += [(1051.05, 0.2), (1080.5, 0.15)]
    tail = split_tail(seconds, settlements, limit=0.1, heavy=0.1)
    assert (tail.over, tail.over_in_stolen, tail.stolen_seconds) == (2, 1, 1)
    assert tail.clear == 199  # 198 fast ones and the slow one that met no stolen second
    assert tail.p99_clear == pytest.approx(0.005)  # one slow one in 199 is past the p99


def test_sampler_reads_proc_stat():
    sampler = StealSampler(interval=0.05)
    sampler.start()
    time.sleep(0.3)
    seconds = sampler.stop()
    assert len(seconds) >= 3
    assert all(0.0 <= s.steal <= 1.0 and s.start < s.end for s in seconds)
    assert all(a.end == b.start for a, b in zip(seconds, seconds[1:]))
