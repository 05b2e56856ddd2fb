"""The machine's stolen time, second by second, to tell a slow machine from a slow pipeline.

A virtual machine's hypervisor can take its cores away ("steal", the 8th field of /proc/stat's
cpu line). Over a whole 8-minute latency run the share is small (0-5 %), yet a few seconds of heavy
steal are enough to push a run's p99 over 100 ms (a run at 22.5 % steal had a
p99 of 239 ms while the broker never paused and the worker's collections stayed under 45 ms). A
per-second record says which settlements waited through stolen seconds, so a run's tail can be
split into the machine's part and the pipeline's part. The goal itself is stated on every
settlement, stolen seconds included; the split only explains it.
"""
from __future__ import annotations

import bisect
import statistics
import threading
import time
from dataclasses import dataclass


def machine_ticks() -> tuple[int, int]:
    """(steal, total) clock ticks of all cores since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return fields[7], sum(fields[:8])  # user nice system idle iowait irq softirq steal


@dataclass(frozen=True)
class StolenSecond:
    start: float  # wall clock (time.time()), the clock the settlements' event times use
    end: float
    steal: float  # share of all cores' ticks taken by the hypervisor in [start, end)


class StealSampler(threading.Thread):
    """Reads /proc/stat every `interval` seconds until stopped; `seconds` is the record."""

    def __init__(self, interval: float = 1.0):
        super().__init__(daemon=True)
        self.interval = interval
        self.seconds: list[StolenSecond] = []
        self._stop_event = threading.Event()

    def run(self) -> None:
        start, (steal, total) = time.time(), machine_ticks()
        while not self._stop_event.wait(self.interval):
            end, (steal2, total2) = time.time(), machine_ticks()
            self.seconds.append(StolenSecond(start, end, (steal2 - steal) / max(total2 - total, 1)))
            start, steal, total = end, steal2, total2

    def stop(self) -> list[StolenSecond]:
        self._stop_event.set()
        self.join()
        return self.seconds


def worst_window(seconds: list[StolenSecond], width: int = 10) -> float:
    """The highest mean steal share over `width` consecutive samples (0.0 for a shorter record)."""
    if len(seconds) < width:
        return max((s.steal for s in seconds), default=0.0)
    return max(statistics.fmean(s.steal for s in seconds[i:i + width]) for i in range(len(seconds) - width + 1))


def steal_during(seconds: list[StolenSecond], start: float, end: float) -> float:
    """The highest steal share of the samples that overlap [start, end]; 0.0 when none does
    (`seconds` in time order, as the sampler records them)."""
    return _steal_between(seconds, [s.end for s in seconds], start, end)


def _steal_between(seconds: list[StolenSecond], ends: list[float], start: float, end: float) -> float:
    # `ends` is [s.end for s in seconds], built once by the caller: split_tail asks once per
    # settlement, thousands of times over the same record.
    i = bisect.bisect_left(ends, start)  # the first sample that ends at or after `start`
    worst = 0.0
    while i < len(seconds) and seconds[i].start <= end:
        worst = max(worst, seconds[i].steal)
        i += 1
    return worst


@dataclass(frozen=True)
class TailSplit:
    over: int  # settlements slower than `limit`
    over_in_stolen: int  # ... of them waited through a second with steal >= `heavy`
    stolen_seconds: int  # seconds of the record with steal >= `heavy`
    p99_clear: float | None  # p99 (seconds) of the settlements that met no such second
    clear: int  # how many those are


def split_tail(seconds: list[StolenSecond], settlements: list[tuple[float, float]], limit: float = 0.1,
               heavy: float = 0.10) -> TailSplit:
    """Split a run's settlements, each (read at, latency) in seconds, by whether the time between
    its event and its read overlapped a second in which the hypervisor took `heavy` or more of
    the cores."""
    ends = [s.end for s in seconds]
    stolen = [_steal_between(seconds, ends, read_at - lat, read_at) >= heavy for read_at, lat in settlements]
    clear = [lat for (_, lat), s in zip(settlements, stolen) if not s]
    return TailSplit(
        over=sum(1 for _, lat in settlements if lat > limit),
        over_in_stolen=sum(1 for (_, lat), s in zip(settlements, stolen) if s and lat > limit),
        stolen_seconds=sum(1 for s in seconds if s.steal >= heavy),
        p99_clear=statistics.quantiles(clear, n=100)[98] if len(clear) >= 100 else None,
        clear=len(clear))
