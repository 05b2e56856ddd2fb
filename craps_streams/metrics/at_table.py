"""Events held at the table: what a table's controller journaled and answered for but the broker
has not acknowledged yet (craps_streams/controller/metrics.py exports it), read from the
controllers' /metrics and said in words, the same for the status panel and the floor page.

Pure: the metrics texts in, the figures and their words out; the callers fetch the texts.
"""
from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

HELD = "craps_controller_held_events"
OLDEST = "craps_controller_oldest_held_seconds"


@dataclass(frozen=True, slots=True)
class HeldAtTable:
    """A table's events held at its controller: how many, and the oldest's age in seconds."""
    events: int = 0
    oldest_s: float = 0.0

    def words(self) -> str:
        """ "340 events held at the table, oldest 2 min" (the controller could not forward them)."""
        oldest = f"{self.oldest_s:.0f} s" if self.oldest_s < 120 else f"{self.oldest_s / 60:.0f} min"
        return f"{self.events:,} event{'s' if self.events != 1 else ''} held at the table, oldest {oldest}"


def held_at_tables(metrics_texts) -> dict[str, HeldAtTable]:
    """Per table a controller exports (0 events when it holds none), from Prometheus texts; the
    texts of other processes (a worker's) add nothing. A table served by two controllers (it
    moved) adds up, its oldest the older."""
    events: dict[str, int] = {}
    oldest: dict[str, float] = {}
    for text in metrics_texts:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                table = s.labels.get("table")
                if table is None:
                    continue
                if s.name == HELD:
                    events[table] = events.get(table, 0) + int(s.value)
                elif s.name == OLDEST:
                    oldest[table] = max(oldest.get(table, 0.0), s.value)
    return {t: HeldAtTable(events.get(t, 0), oldest.get(t, 0.0)) for t in sorted(events.keys() | oldest.keys())}
