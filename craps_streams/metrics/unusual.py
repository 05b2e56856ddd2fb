"""How unusual a hold line is: the one measure the report, the status panel and the floor page show.

For a table's wager kind and paytable, the house win over the decisions made by the dice is
H = sum of stake x Y over independent decisions, Y the house's win per unit (1, 0, -X), distributed
as `craps_streams.odds` says. Its tails are the surveillance's (`craps_streams.surveillance.tails`):
exact by convolution while the support is small; else the distribution of H on its lattice
(multiples of the stakes' greatest common divisor), by fast Fourier transform convolution in double
precision (absolute error far below 1e-9), while the lattice has at most `LATTICE_POINTS` points
and the transforms stay within `LATTICE_WORK` (numpy, imported only then); otherwise the Chernoff
bound, never below the true probability (so a flag from a bound is never a false alarm the exact
tail would not raise). The lattice's transforms span its window: the points between the two
where the Chernoff bound leaves at most `WINDOW_MASS` of H's mass outside on each side (a line's
jackpots make far more points possible than carry any mass); a result outside the window, rarer
than that, takes its side's Chernoff bound.

    p_low  = P(H <= observed)        the house won this little or less
    p_high = P(H >= observed)        the house won this much or more (P(-H <= -observed))
    p      = min(1, 2 min(p_low, p_high))  a result at least this far from theory, either side

A line is to be investigated when p is at or below the investigation level: COMAR 36.05.03.25's
95 % interval is a level of 0.05 (`INVESTIGATION_LEVEL`). A normal z would be the wrong yardstick
for these wagers (a Fire Bet pays 999 to 1): beyond two standard deviations is not rare for them.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from functools import lru_cache

from craps_streams.odds import WagerOdds
from craps_streams.surveillance.tails import (
    EXACT_SUPPORT_LIMIT,
    UnitDistribution,
    chernoff_edge,
    chernoff_lower_tail,
    house_win_tail,
    support_estimate,
    unit_distribution,
)

INVESTIGATION_LEVEL = 0.05  # two-sided p at or below which a line is investigated (COMAR 36.05.03.25)

LATTICE_POINTS = 1 << 19  # the largest lattice the FFT convolution builds (4 MiB of doubles)
LATTICE_WORK = 1 << 21  # lattice points x transforms (one per distinct stake) at most: ~25 ms a line
# The mass the lattice's window may leave out on each side: far below the transforms' rounding
# (about 1e-16 a point); cyclic transforms of the window fold what is outside into it, at most twice
# this in all.
WINDOW_MASS = 1e-20


@lru_cache(maxsize=256)
def mirrored(unit: UnitDistribution) -> UnitDistribution:
    """The distribution of -Y (the players' win per unit), for the upper tail of H."""
    pairs = sorted((-v, p) for v, p in zip(unit.values, unit.probabilities))
    return UnitDistribution.of([v for v, _ in pairs], [p for _, p in pairs])


@dataclass(frozen=True, slots=True)
class Tail:
    p_low: float
    p_high: float
    method: str  # exact | lattice_fft | chernoff_bound

    @property
    def p(self) -> float:
        return min(1.0, 2.0 * min(self.p_low, self.p_high))


NO_TAIL = Tail(1.0, 1.0, "exact")

# The transforms of one decision's stake on a lattice ((unit's values and probabilities, lowest
# value, stake in lattice steps, lattice size) -> rfft), kept while `spectra_kept` is in force:
# a report's lines share their stakes and lattice sizes (40 tables over two days: 678 transforms,
# 107 of them distinct), and the same transform is the same array, so every figure is the same.
_spectra: dict | None = None
_spectra_bytes = [0, 0]  # held, budget


@contextlib.contextmanager
def spectra_kept(budget_bytes: int = 64 << 20):
    """Within it, `lattice_distribution` keeps each transform it makes (the least recently used
    dropped past `budget_bytes`) and uses it again; outside it, nothing is kept (a live view's
    lines change with every throw)."""
    global _spectra
    outer = _spectra
    _spectra, _spectra_bytes[:] = {}, [0, budget_bytes]
    try:
        yield
    finally:
        _spectra = outer


def _spectrum(unit: UnitDistribution, k: int, size: int):
    """The transform of one decision of a stake of `k` lattice steps (`lattice_distribution`)."""
    import numpy as np

    kept = _spectra
    key = (unit.floats, unit.values[0], k, size)
    if kept is not None:
        found = kept.pop(key, None)
        if found is not None:
            kept[key] = found  # the most recently used last
            return found
    low = unit.values[0]
    one = np.zeros(size)
    for v, p in unit.floats:
        one[k * (v - low) % size] += p  # on a window's cycle, a decision may wrap round
    spectrum = np.fft.rfft(one)
    if kept is not None:
        held = _spectra_bytes
        kept[key] = spectrum
        held[0] += spectrum.nbytes
        while held[0] > held[1] and len(kept) > 1:
            held[0] -= kept.pop(next(iter(kept))).nbytes
    return spectrum


def lattice_distribution(unit: UnitDistribution, stakes: dict, limit: int = LATTICE_POINTS):
    """(P of each lattice point of the window, the house win at its first point, the lattice step in
    cents) of H = sum of stake x Y over the decisions, or None when the lattice would pass `limit`.
    One transform per stake, raised to the power of its decisions, one inverse transform: a sum of
    independent decisions is the product of their transforms. The transforms are as long as the
    window (`WINDOW_MASS`, `chernoff_edge`), not the whole lattice: the cyclic convolution folds
    what lies outside the window into it, at most 2 WINDOW_MASS; a window no shorter in transform
    length than the lattice is the lattice."""
    step = 0
    for s in stakes:
        step = math.gcd(step, s)
    low, high = unit.values[0], unit.values[-1]
    points = sum(c * (s // step) for s, c in stakes.items()) * (high - low) + 1
    size = 1 << max(1, (points - 1).bit_length())
    if points > limit or size * (len(stakes) + 1) > LATTICE_WORK:
        return None
    import numpy as np  # here, not above: a report whose lines all pass the limits never loads it
    origin = sum(c * s * low for s, c in stakes.items())
    log_mass = math.log(WINDOW_MASS)
    first = chernoff_edge(unit, stakes, origin, step, points - 1, log_mass)
    # The upper side is the players' lower side: -H on the mirrored unit, its points counted down.
    last = points - 1 - chernoff_edge(mirrored(unit), stakes, -(origin + (points - 1) * step), step, points - 1,
                                      log_mass)
    length = max(1, last - first + 1)
    cycle = 1 << max(1, (length - 1).bit_length())
    if cycle >= size:
        first, length, cycle = 0, points, size
    spectrum = _product_of_powers([(_spectrum(unit, s // step, cycle), c) for s, c in sorted(stakes.items())])
    folded = np.fft.irfft(spectrum, cycle)
    dist = folded[:points] if first == 0 and length == points else np.roll(folded, -first)[:length]
    np.clip(dist, 0.0, None, out=dist)
    return dist, origin + first * step, step


def _product_of_powers(powers: list):
    """The product of `base ** n` over `(base, n)` pairs (whole n >= 1), by one chain of squarings for
    all of them (Straus): from the largest n's top bit down, the product squared, then multiplied
    by each base whose n has that bit. About log2(max n) squarings and one product per set bit, where
    raising each base on its own would square each (a line has a dozen or more stakes); in place,
    in one new array. numpy's complex power past small exponents goes through exp(n log z), some
    30 times as slow on a line's thousands of decisions and less exact (its error grows with n; by
    squaring, with log n)."""
    import numpy as np

    product = None
    for bit in range(max(n for _, n in powers).bit_length() - 1, -1, -1):
        if product is not None:
            np.multiply(product, product, out=product)
        for base, n in powers:
            if n >> bit & 1:
                if product is None:
                    product = base.copy()  # the kept transform itself is never written
                else:
                    np.multiply(product, base, out=product)
    return product


@lru_cache(maxsize=4096)
def _tail(odds: WagerOdds, stakes: tuple, house_win_cents: int, lattice: bool) -> "Tail":
    return _line_tail(odds, dict(stakes), house_win_cents, lattice)


def line_tail(odds: WagerOdds, stakes: dict, house_win_cents: int, lattice: bool = True) -> "Tail":
    """`_line_tail`, remembered (a line often recurs: a day's floor line is its month to date's).
    `lattice=False` skips the lattice (a report of many days has too many lines for it)."""
    return _tail(odds, tuple(sorted(stakes.items())), house_win_cents, lattice)


def _line_tail(odds: WagerOdds, stakes: dict, house_win_cents: int, lattice: bool = True) -> Tail:
    """The tails of a line's house win over its decisions by the dice (`stakes`: total stake of a
    decision -> decisions)."""
    if not stakes:
        return NO_TAIL
    unit = unit_distribution(odds)
    support = support_estimate(unit, stakes)
    if lattice and support > EXACT_SUPPORT_LIMIT:
        found = lattice_distribution(unit, stakes)
        if found is not None:
            dist, origin, step = found
            k = (house_win_cents - origin) // step
            if k < 0:  # below the window: rarer than WINDOW_MASS (or impossible), by its bound
                low, high = chernoff_lower_tail(unit, stakes, house_win_cents), float(dist.sum())
            elif k >= len(dist):  # above it
                low, high = float(dist.sum()), chernoff_lower_tail(mirrored(unit), stakes, -house_win_cents)
            else:
                low, high = float(dist[:k + 1].sum()), float(dist[k:].sum())
            return Tail(min(1.0, low), min(1.0, high), "lattice_fft")
    low, exact_low = house_win_tail(unit, stakes, house_win_cents, support=support)
    high, exact_high = house_win_tail(mirrored(unit), stakes, -house_win_cents, support=support)
    return Tail(low, high, "exact" if exact_low and exact_high else "chernoff_bound")


def p_text(p: float | None) -> str:
    """A probability as the report prints it: three significant digits, small ones in exponent form."""
    if p is None:
        return ""
    return f"{p:.3g}" if p >= 1e-3 or p == 0 else f"{p:.2e}"


def meaning(p: float, level: float = INVESTIGATION_LEVEL) -> str:
    """What a line's p says, in words, with the investigation level."""
    if p >= 0.5:
        often = "a usual result with fair dice"
    elif p > 0:
        often = f"a result this far from theory comes 1 time in {1 / p:,.0f} with fair dice"
    else:
        often = "impossible with fair dice"
    return f"{often}: at or below {p_text(level)}, investigate" if p <= level \
        else f"{often} (investigated at or below {p_text(level)})"


class LiveMeasures:
    """Each live line's p, kept between looks: a live line changes with every throw, and its exact
    tails cost up to a hundred milliseconds (the lattice), where the look runs on an event loop (a
    scrape of the worker's /metrics, a push of the floor view). A look computes at once only the
    lines it never saw (the first look after a start or a takeover); a changed line shows its last
    p while one background thread computes the changed lines, longest unrefreshed first, for the
    next look (a few seconds behind on a busy floor; exact once the line stops changing).
    `background=False` computes every changed line at once (the tests that compare exact views)."""

    def __init__(self, background: bool = True) -> None:
        import threading

        self.background = background
        self.known: dict = {}  # key -> (version, p, when computed)
        self.lock = threading.Lock()
        self.busy = False
        self.round = 0

    def look(self, lines: list[tuple]) -> dict:
        """`lines`: (key, odds, stakes, house win); the p of each key."""
        known = self.known
        due = []
        for key, odds, stakes, house_win in lines:
            version = (odds, house_win, tuple(sorted(stakes.items())))
            seen = known.get(key)
            if seen is None or not self.background:
                if seen is None or seen[0] != version:
                    known[key] = (version, line_tail(odds, dict(version[2]), house_win).p, self.round)
            elif seen[0] != version:
                due.append((seen[2], key, version, odds, house_win))
        if due:
            self._refresh(sorted(due, key=lambda d: d[0]))
        return {key: known[key][1] for key, *_ in lines}

    def _refresh(self, due: list) -> None:
        import threading

        with self.lock:
            if self.busy:
                return  # the next look hands over what is still due
            self.busy = True
            self.round += 1

        def work():
            try:
                for _, key, version, odds, house_win in due:
                    self.known[key] = (version, line_tail(odds, dict(version[2]), house_win).p, self.round)
            finally:
                with self.lock:
                    self.busy = False

        threading.Thread(target=work, name="line-p", daemon=True).start()
