"""How hard the property tests look: a fixed budget in CI, a bigger random one by hand.

CI runs the hypothesis profile "ci" (registered in tests/conftest.py): derandomized, so a run
passes or fails for the code alone, no example database, no shrinking phase (a failure prints its
example and a reproduction blob at once instead of spending minutes shrinking it).

`make explore` runs the profile "explore": random seeds, shrinking, the example database in
`.hypothesis/`, and every budget below multiplied by CRAPS_EXPLORE_SCALE (default 20 there). What
it finds is shrunk there, then pinned as an `@example` beside the property, so CI checks it on
every run from then on.
"""
from __future__ import annotations

import os

SCALE = max(1, int(os.environ.get("CRAPS_EXPLORE_SCALE", "1")))


def examples(n: int) -> int:
    """The number of examples for a property whose CI budget is `n`."""
    return n * SCALE
