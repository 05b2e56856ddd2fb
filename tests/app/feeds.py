"""Feeds the shell tests settle: a floor's records as a table controller's network may deliver them."""
from __future__ import annotations

import random

from craps_streams.sim.floor import floor_events


def reordered_feed(seed: int, window: int) -> tuple[list[dict], list[dict]]:
    """(a two-table floor's records in order, the same records as fed): each table's opening first
    (a table's events before its TableOpened are rejected, unknown table, not held), every other
    record shuffled within windows of `window`, then up to 20 of them again, late (duplicates)."""
    clean = [r for r in floor_events(2, 1.0, seed) if isinstance(r, dict)]
    rng = random.Random(seed)
    opens = [r for r in clean if r["type"] == "TableOpened"]
    items = [r for r in clean if r["type"] != "TableOpened"]
    for k in range(0, len(items), window):
        chunk = items[k:k + window]
        rng.shuffle(chunk)
        items[k:k + window] = chunk
    return clean, opens + items + rng.sample(clean, min(20, len(clean)))
