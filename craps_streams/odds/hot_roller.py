"""Hot Roller (§ 623c.1): completed numbers at the first 7, from a come-out with no markers.

The chain's state is (combinations thrown, point state). Two reductions keep it small and exact:

* Combinations of one number with the same probability are interchangeable (1-4 and 2-3 for the
  5, 1-5 and 2-4 for the 6, ...), so a number's marks are the count thrown per probability class:
  4 and 10 have 4 mark states, 5 and 9 have 3, 6 and 8 have 6: 5,184 combination states instead of
  2^14.
* Swapping the marks of 4 and 10 (5 and 9, 6 and 8) along with the point is a symmetry (dice
  d -> 7-d), which leaves 1,260 combination states to solve.
* Marks only accumulate, so combination states are processed level by level (combinations thrown
  so far). Within one combination state only the point moves, and only between "off" and a point
  (a marked combination of p establishes p from the come-out and makes it from p; 2,3,11,12 and
  marked combinations of other numbers change nothing). That star is solved in closed form, so
  each state costs a few exact operations.

Probability mass is pushed forward, and absorbed at the first 7 into (kind of 7, completed numbers),
which serves both readings of § 623c.1(g): "lose" (a come-out 7 loses) and "pay_by_table".
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from craps_streams.odds.model import POINTS, SEVEN_WAYS, WAYS, Outcome, WagerOdds, net_for
from craps_streams.rules.hot_roller import COMBINATIONS  # § 623c.1(a)(2)(iii), the one table
from craps_streams.rules.paytables import Paytable
from craps_streams.rules.submission import HOT_ROLLER_COME_OUT_SEVEN_CHOICES

WAGER = "hot_roller"



def combination_ways(combo: tuple[int, int]) -> int:
    return 1 if combo[0] == combo[1] else 2


def _number_classes(number: int) -> tuple[tuple[int, int], ...]:
    """(ways of one combination, how many such combinations) for each probability class."""
    sizes: dict[int, int] = {}
    for combo in COMBINATIONS[number]:
        sizes[combination_ways(combo)] = sizes.get(combination_ways(combo), 0) + 1
    return tuple(sorted(sizes.items()))


# Per number (in POINTS order): its probability classes. A number's marks are the count thrown in
# each class; the state of the layout is one such tuple per number.
CLASSES = tuple(_number_classes(n) for n in POINTS)
MIRROR = tuple(POINTS.index(14 - n) for n in POINTS)  # dice d -> 7-d maps n to 14-n
assert all(CLASSES[j] == CLASSES[MIRROR[j]] for j in range(len(POINTS)))
_PASSIVE_WAYS = sum(WAYS[t] for t in (2, 3, 11, 12))  # never marks, never moves the point
OFF = -1  # point state "off"; otherwise the index of the point in POINTS


def _canonical(state: tuple[tuple[int, ...], ...],
               pairs: tuple[tuple[int, int], ...]) -> tuple[tuple, dict[int, int]]:
    """The representative of `state` under the mirror symmetries, and where each point goes.

    Swapping the marks of 4 and 10 (or 5 and 9, or 6 and 8) together with the point is a symmetry
    of the chain (same probabilities, same completed count), so each pair is ordered with the
    larger marks first; when a pair's marks are equal, a point on either is the same state.
    """
    marks = list(state)
    where = {j: j for j in range(len(POINTS))}
    where[OFF] = OFF
    for low, high in pairs:
        if marks[low] < marks[high]:
            marks[low], marks[high] = marks[high], marks[low]
            where[low], where[high] = high, low
        if marks[low] == marks[high]:
            where[low] = where[high] = low
    return tuple(marks), where


@lru_cache(maxsize=None)
def seven_distribution(tracked: tuple[int, ...] = POINTS) -> dict[tuple[str, int], Fraction]:
    """P(first 7 is of `kind` with `k` numbers complete), kind "come_out" or "seven_out".

    `tracked` (all six numbers for the wager) exists to cross-check the method on smaller games:
    a number not tracked starts with every combination marked and is never counted.

    The wager's own distribution (all six numbers) is read from `hot_roller_sevens`, the results of
    `computed_seven_distribution` kept (half a second of exact arithmetic per process otherwise;
    the tests recompute it and require equality); other games are computed.
    """
    if tuple(tracked) == POINTS:
        from craps_streams.odds.hot_roller_sevens import SEVEN_DISTRIBUTION

        return {key: Fraction(n, d) for key, (n, d) in SEVEN_DISTRIBUTION.items()}
    return computed_seven_distribution(tuple(tracked))


def computed_seven_distribution(tracked: tuple[int, ...] = POINTS) -> dict[tuple[str, int], Fraction]:
    """`seven_distribution` by its computation: the chain of marks and points, level by level."""
    n_points = len(POINTS)
    full = tuple(tuple(size for _, size in classes) for classes in CLASSES)
    counted = [n in tracked for n in POINTS]
    # The mirror symmetry holds for a pair of numbers both tracked or both not.
    pairs = tuple((j, MIRROR[j]) for j in range(n_points)
                  if j < MIRROR[j] and counted[j] == counted[MIRROR[j]])
    start = tuple(full[j] if not counted[j] else (0,) * len(CLASSES[j]) for j in range(n_points))
    result: dict[tuple[str, int], Fraction] = {}

    # Marks only accumulate: states are processed level by level (combinations thrown so far), and
    # a level's mass is complete once the previous level is done. mass[state][point] = inflow.
    level: dict[tuple, dict[int, Fraction]] = {_canonical(start, pairs)[0]: {OFF: Fraction(1)}}
    while level:
        following: dict[tuple, dict[int, Fraction]] = {}
        for state, inflow in level.items():
            # thrown[j]: ways to throw an already marked combination of number j.
            thrown = [sum(count * ways for count, (ways, _) in zip(state[j], CLASSES[j]))
                      for j in range(n_points)]
            fresh = [(j, c, (size - state[j][c]) * ways)
                     for j in range(n_points)
                     for c, (ways, size) in enumerate(CLASSES[j]) if state[j][c] < size]
            fresh_ways = sum(w for _, _, w in fresh)
            complete = sum(state[j] == full[j] for j in range(n_points) if counted[j])

            # Flow w (expected visits / 36) in each point state: an event of k ways carries k*w.
            # Come-out: 2,3,11,12 keep it; a marked combination of p establishes p.
            # Point p: leaves with a 7, its own marked combinations (point made), any fresh one.
            u_off = inflow.get(OFF, Fraction(0))
            numerator, denominator = u_off, Fraction(36 - _PASSIVE_WAYS)
            leave = [SEVEN_WAYS + thrown[j] + fresh_ways for j in range(n_points)]
            for j in range(n_points):
                if thrown[j]:
                    if j in inflow:
                        numerator += thrown[j] * inflow[j] / leave[j]
                    denominator -= Fraction(thrown[j] * thrown[j], leave[j])
            w_off = numerator / denominator
            w_on = {}
            for j in range(n_points):
                if thrown[j] or j in inflow:
                    w_on[j] = (inflow.get(j, 0) + thrown[j] * w_off) / leave[j]

            for kind, flow in (("come_out", w_off), ("seven_out", sum(w_on.values(), Fraction(0)))):
                result[(kind, complete)] = result.get((kind, complete), 0) + SEVEN_WAYS * flow

            for j, c, ways in fresh:
                marks = list(state)
                counts = list(marks[j])
                counts[c] += 1
                marks[j] = tuple(counts)
                target_state, where = _canonical(tuple(marks), pairs)
                target = following.setdefault(target_state, {})
                # From the come-out the throw establishes point j; on point j it makes it;
                # on another point it only marks.
                moves = [(where[j], ways * w_off)]
                moves += [(OFF if q == j else where[q], ways * w) for q, w in w_on.items()]
                for point, flow in moves:
                    target[point] = target.get(point, 0) + flow
        level = following
    return result


def _reading(come_out_seven: str) -> str:
    return f"come_out_seven={come_out_seven}"


@lru_cache(maxsize=None)
def hot_roller_odds(paytable: Paytable, come_out_seven: str = "lose") -> WagerOdds:
    if come_out_seven not in HOT_ROLLER_COME_OUT_SEVEN_CHOICES:
        raise ValueError(f"come_out_seven must be one of {HOT_ROLLER_COME_OUT_SEVEN_CHOICES}")
    dist = seven_distribution()
    counts = range(len(POINTS) + 1)
    outcomes = []
    if come_out_seven == "lose":
        outcomes.append(Outcome("come-out 7",
                                sum((dist.get(("come_out", k), 0) for k in counts), Fraction(0)),
                                net_for(None)))
        for k in counts:
            outcomes.append(Outcome(f"seven-out, {k} complete", dist.get(("seven_out", k), Fraction(0)),
                                    net_for(paytable.odds_for(k))))
    else:
        for k in counts:
            p = dist.get(("come_out", k), Fraction(0)) + dist.get(("seven_out", k), Fraction(0))
            outcomes.append(Outcome(f"7, {k} complete", p, net_for(paytable.odds_for(k))))
    return WagerOdds.from_outcomes(WAGER, paytable.name, _reading(come_out_seven), outcomes)
