"""The live path's ceiling in benchmarks/pipeline_bench.py: the fastest pass-through of a run, and
the settling pipeline's share of it (each contender by the median of its interleaved rounds)."""
from __future__ import annotations

import statistics
from dataclasses import dataclass

TARGET = 0.80  # the settling pipeline's rate over the fastest pass-through's


@dataclass(frozen=True)
class Ceiling:
    name: str  # the fastest pass-through
    eps: float  # its median events/s
    ratio: float  # the pipeline's median over it

    @property
    def reached(self) -> bool:
        return self.ratio >= TARGET


def medians(runs: dict[str, list[float]]) -> dict[str, float]:
    """Each contender's median events/s; a contender with no run (it failed, or was skipped) has none."""
    return {name: statistics.median(rates) for name, rates in runs.items() if rates}


def ceiling(pipeline_eps: float, pass_throughs: dict[str, float]) -> Ceiling:
    """The fastest of the pass-throughs' medians and the pipeline's median over it (ties: the first
    named). Raises ValueError when no pass-through has a rate."""
    rated = {name: eps for name, eps in pass_throughs.items() if eps > 0}
    if not rated:
        raise ValueError("no pass-through has a rate to compare the pipeline with")
    name = max(rated, key=lambda n: rated[n])
    return Ceiling(name, rated[name], pipeline_eps / rated[name])
