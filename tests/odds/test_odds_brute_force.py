"""Cross-checks of craps_streams.odds against independent brute-force chains written here.

Each brute force walks the game throw by throw over the 36 ordered dice outcomes, with the full
state the craps_streams.odds code reduces away (the point for the Bonus wagers, every combination for the
Hot Roller), so a wrong reduction in the library cannot hide in the same mistake here.
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.exploration import examples

from craps_streams.odds.bonus_craps import TARGETS, all_before_seven, bonus_odds
from craps_streams.odds.fire_bet import distinct_points_distribution
from craps_streams.odds.hot_shooter import hot_shooter_odds, throws_distribution
from craps_streams.rules.paytables import BONUS_ALTERNATE, BONUS_STANDARD, HOT_SHOOTER_STANDARD, PUSH, Paytable
from tests.odds.exact_solve import solve

DICE = [(a, b) for a in range(1, 7) for b in range(1, 7)]
POINT_NUMBERS = (4, 5, 6, 8, 9, 10)


def next_point(point: int | None, total: int) -> tuple[int | None, str]:
    """(point after the throw, what happened): the pass-line flow of docs/rules.md Words."""
    if point is None:
        return (total, "established") if total in POINT_NUMBERS else (None, "come-out")
    if total == 7:
        return None, "seven-out"
    if total == point:
        return None, "made"
    return point, "nothing"


# ---------------------------------------------------------------- Fire Bet


def test_fire_bet_against_throw_by_throw_chain():
    """State (points made, point): per set of points, a 7x7 linear system over the point states."""
    states = [None, *POINT_NUMBERS]
    value: dict[frozenset, list[list[Fraction]]] = {}  # value[made][state index][final count]
    all_sets = [frozenset(p for i, p in enumerate(POINT_NUMBERS) if m >> i & 1) for m in range(64)]
    for made in sorted(all_sets, key=len, reverse=True):
        matrix = [[Fraction(int(i == j)) for j in range(7)] for i in range(7)]
        rhs = [[Fraction(0)] * 7 for _ in range(7)]
        for i, point in enumerate(states):
            for a, b in DICE:
                new_point, what = next_point(point, a + b)
                if what == "seven-out":
                    rhs[i][len(made)] += Fraction(1, 36)
                elif what == "made" and point not in made:
                    later = value[made | {point}][0]
                    for k in range(7):
                        rhs[i][k] += later[k] / 36
                else:
                    matrix[i][states.index(new_point)] -= Fraction(1, 36)
        value[made] = solve(matrix, rhs)
    assert dict(enumerate(value[frozenset()][0])) == distinct_points_distribution()


# ---------------------------------------------------------------- Bonus Craps


@lru_cache(maxsize=None)
def bonus_by_chain(targets: frozenset) -> Fraction:
    """P(all `targets` marked before any 7), over (marked totals, point), throw by throw.

    The point is carried though the Bonus wagers ignore it, to show it does not matter.
    """
    totals = sorted(targets)
    states = [None, *POINT_NUMBERS]
    value: dict[int, list[Fraction]] = {}
    full = (1 << len(totals)) - 1
    for mask in range(full, -1, -1):
        if mask == full:
            value[mask] = [Fraction(1)] * 7
            continue
        matrix = [[Fraction(int(i == j)) for j in range(7)] for i in range(7)]
        rhs = [[Fraction(0)] for _ in range(7)]
        for i, point in enumerate(states):
            for a, b in DICE:
                total = a + b
                if total == 7:
                    continue  # any 7 loses
                new_point, _ = next_point(point, total)
                j = states.index(new_point)
                if total in totals and not mask >> totals.index(total) & 1:
                    rhs[i][0] += value[mask | 1 << totals.index(total)][j] / 36
                else:
                    matrix[i][j] -= Fraction(1, 36)
        value[mask] = [row[0] for row in solve(matrix, rhs)]
    assert len(set(value[0])) == 1  # the point state does not matter
    return value[0][0]


def test_bonus_inclusion_exclusion_equals_chain():
    for wager, totals in TARGETS.items():
        win = bonus_by_chain(frozenset(totals))
        assert all_before_seven(totals) == win
        for paytable in (BONUS_STANDARD, BONUS_ALTERNATE):
            odds = bonus_odds(wager, paytable)
            assert odds.outcomes[0].probability == win
            assert odds.house_edge == 1 - (paytable.odds_for(wager) + 1) * win


@settings(max_examples=examples(25), deadline=None)
@given(st.sets(st.sampled_from((2, 3, 4, 5, 6, 8, 9, 10, 11, 12)), max_size=5))
def test_inclusion_exclusion_any_totals(totals):
    assert all_before_seven(tuple(sorted(totals))) == bonus_by_chain(frozenset(totals))


# ---------------------------------------------------------------- Hot Shooter


def hot_shooter_counts(limit: int) -> tuple[list[int], int]:
    """Integer counts of dice sequences: sequences[n] end in a seven-out at throw n; `alive` is the
    number of sequences of `limit - 1` throws with no seven-out yet (all over 36^n)."""
    alive = {None: 1}
    sequences = [0] * limit
    for n in range(1, limit):
        nxt: dict[int | None, int] = {}
        for point, count in alive.items():
            for a, b in DICE:
                new_point, what = next_point(point, a + b)
                if what == "seven-out":
                    sequences[n] += count
                else:
                    nxt[new_point] = nxt.get(new_point, 0) + count
        alive = nxt
    return sequences, sum(alive.values())


def test_hot_shooter_distribution_against_sequence_counts():
    sequences, alive = hot_shooter_counts(50)
    exact = throws_distribution(50)
    for n in range(50):
        assert exact[n] == Fraction(sequences[n], 36 ** n), n
    assert sequences[0] == sequences[1] == 0 and sequences[2] > 0  # N >= 2
    odds = hot_shooter_odds(HOT_SHOOTER_STANDARD)
    by_label = {o.label: o for o in odds.outcomes}
    assert by_label["N >= 50"].probability == Fraction(alive, 36 ** 49)
    bands = {"N = 2..7": (2, 7), "N = 8..15": (8, 15), "N = 16..23": (16, 23),
             "N = 24..31": (24, 31), "N = 32..39": (32, 39), "N = 40..44": (40, 44),
             "N = 45..49": (45, 49)}
    assert set(by_label) == {*bands, "N >= 50"}
    for label, (low, high) in bands.items():
        assert by_label[label].probability == sum(
            Fraction(sequences[n], 36 ** n) for n in range(low, high + 1))
    nets = {label: o.net_per_unit for label, o in by_label.items()}
    assert nets == {"N = 2..7": -1, "N = 8..15": 0, "N = 16..23": 2, "N = 24..31": 4,
                    "N = 32..39": 6, "N = 40..44": 11, "N = 45..49": 29, "N >= 50": 99}


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(st.tuples(st.integers(3, 60), st.sampled_from((PUSH, 1, 5, 50))),
                min_size=1, max_size=5, unique_by=lambda t: t[0]))
def test_hot_shooter_any_paytable(bands):
    paytable = Paytable("test", tuple(sorted(bands)))
    odds = hot_shooter_odds(paytable)
    dist = throws_distribution(max(low for low, _ in bands))
    top = len(dist)
    expected = sum(dist[n] * (-1 if paytable.odds_for(n) is None else
                              0 if paytable.odds_for(n) == PUSH else paytable.odds_for(n))
                   for n in range(2, top))
    odds_top = paytable.odds_for(top)
    expected += (1 - sum(dist)) * (0 if odds_top == PUSH else odds_top)
    assert odds.house_edge == -expected
