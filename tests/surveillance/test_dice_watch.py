"""Dice CUSUMs: the lazy update equals the textbook one, a loaded die is named, invalid rolls are
counted apart, the book survives its record."""
from __future__ import annotations

import json
import math
import random

from tests.exploration import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from craps_streams.surveillance.dice_watch import (
    _CELL,
    _FACE,
    _SEVEN_LOW,
    DiceBook,
    DiceWatch,
    describe,
    moved_cells,
)

NEVER = DiceWatch(1e9, 1e9, 1e9)


def eager(throws):
    """Page's CUSUM, every statistic updated on every throw."""
    low, faces, cells = 0.0, [0.0] * 12, [0.0] * 36
    for a, b in throws:
        low = max(0.0, low + (_SEVEN_LOW[0] if a + b == 7 else _SEVEN_LOW[1]))
        for i in range(12):
            hit = (i < 6 and a == i + 1) or (i >= 6 and b == i - 5)
            faces[i] = max(0.0, faces[i] + (_FACE[0] if hit else _FACE[1]))
        for i in range(36):
            cells[i] = max(0.0, cells[i] + (_CELL[0] if i == 6 * (a - 1) + b - 1 else _CELL[1]))
    return low, faces, cells


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)), max_size=300))
def test_the_lazy_cusums_equal_the_eager_ones(throws):
    book = DiceBook()
    for a, b in throws:
        NEVER.throw(book, a, b, True)
    low, faces, cells = eager(throws)
    stats = book.statistics()
    assert math.isclose(stats["seven_low"], low, abs_tol=1e-9)
    for i in range(12):
        assert math.isclose(stats[f"die{i // 6 + 1}_face_{i % 6 + 1}"], faces[i], abs_tol=1e-9)
    for i in range(36):
        assert math.isclose(stats[f"cell_{i // 6 + 1}_{i % 6 + 1}"], cells[i], abs_tol=1e-9)
    assert book.throws == len(throws) and sum(book.cells) == len(throws)


def test_a_die_loaded_on_six_is_named_and_fair_dice_stay_quiet():
    watch = DiceWatch()
    rng = random.Random(5)
    fair = DiceBook()
    for _ in range(20_000):  # ~150 table-hours of throws
        assert watch.throw(fair, rng.randint(1, 6), rng.randint(1, 6), True) == []
    loaded = DiceBook()
    crossed = []
    for n in range(20_000):
        a = 6 if rng.random() < 0.4 else rng.randint(1, 6)  # die 1 shows 6 half the time
        crossed = watch.throw(loaded, a, rng.randint(1, 6), True)
        if crossed:
            break
    assert "die1_face_6" in crossed and n < 2_000
    text = describe(loaded, crossed)
    assert "die1_face_6" in text and "die 1 faces" in text
    assert moved_cells(loaded)[0][0].startswith("6-")


def test_fewer_sevens_raise_seven_low():
    watch, book, rng = DiceWatch(), DiceBook(), random.Random(1)
    cells = [(a, b) for a in range(1, 7) for b in range(1, 7)]
    weights = [0.0 if a + b == 7 else 1 for a, b in cells]
    for n in range(1, 5000):
        crossed = watch.throw(book, *rng.choices(cells, weights)[0], True)
        if crossed:
            break
    assert crossed == ["seven_low"]
    # Never a 7: each throw adds log(31/30), so it crosses at exactly ceil(h / log(31/30)).
    assert n == math.ceil(watch.seven_h / _SEVEN_LOW[1]) and book.seven_low == 0.0


def test_invalid_rolls_are_counted_apart_and_the_record_round_trips():
    watch, book = DiceWatch(), DiceBook()
    watch.throw(book, 3, 4, True)
    watch.throw(book, 3, 4, False)  # § 623a.8: counts for nothing
    assert (book.throws, book.invalid, book.cells[6 * 2 + 3]) == (1, 1, 1)
    again = DiceBook.from_record(json.loads(json.dumps(book.to_record())))
    assert again.to_record() == book.to_record()
