"""A table's surveillance kept natively, for the replay and the live worker (native/src/watch.rs).

The native `Watch` holds what `TableWatch` holds (the dice CUSUMs, the hold tails, the position
lines) and its `observe(state, applied, outputs)` is `table_watch.observe`, operation by
operation: the same alerts, the same state to the last bit. The rare parts are this module's
Python, called back with plain values: a wager kind's per-unit distribution and tests, the exact
tails, and every alert's wording (table_watch.py `dice_alert`, `hold_alert`, `position_alert`).
So a threshold, a test or a message lives in one place.

Why: in Python, the surveillance was two fifths of an Avro replay of a simulated day (a dict
lookup, a dataclass and a screen per settlement, a CUSUM per throw), and the largest settling
stage of the live worker's loop; the rules core was native already. The replay, the audit and the
live worker all keep it (`with_native_watch`). What is stored or shown of a table's surveillance
is the Python `TableWatch` of its state (`as_table_watch`): the changelog record the worker writes
in each transaction, the floor view's fold of it and the metrics read the same as before; a table
the worker reads back from its changelog is watched natively again (`native_of`).

Where the native watch declines (an input that is not what the core makes: a field of another
type, a die off 1..6), `observe` returns None with nothing changed; the step (craps_streams/settle/step.py)
then turns that table's watch into the Python `TableWatch` (`table_watch_of`) for good.
Checked against the plain path in lockstep: tests/native/test_lockstep.py, the `watch` paths.
"""
from __future__ import annotations

from functools import partial

from craps_streams.odds import wager_odds
from craps_streams.rules.events import TableOpened
from craps_streams.surveillance import dice_watch, table_watch
from craps_streams.surveillance.dice_watch import DiceBook
from craps_streams.surveillance.hold_tail import HoldTail
from craps_streams.surveillance.position_watch import PositionLine, tests_of
from craps_streams.surveillance.table_watch import TableWatch, Thresholds
from craps_streams.surveillance.tails import binomial_tail, house_win_tail, unit_distribution


def _unit_of(wager: str, state) -> tuple:
    """(unit, mean, variance, tests) of a wager kind under the table's rules: what `_settled`
    caches in `TableWatch.units`."""
    unit = unit_distribution(wager_odds(wager, state.rules))
    return unit, unit.mean, unit.variance, tests_of(wager, unit)


def _dice_alert(state, event, crossed: list, invalid: int, cells_since: list):
    return table_watch.dice_alert(state, event, DiceBook(invalid=invalid, cells_since=cells_since), crossed)


def _position_alert(settings: Thresholds, state, s, which, p: float, tests: int):
    words = "" if which is None else table_watch.position_test_words(*which)
    return table_watch.position_alert(settings, state, s, words, p, tests)


def watch_factory(thresholds: Thresholds):
    """A function making a fresh native watch under `thresholds`, or None where the native code
    is not in use (the Python core)."""
    from craps_streams.accelerator.watch import watch_config

    d = thresholds.dice
    config = watch_config(
        (dice_watch._SEVEN_LOW, dice_watch._SEVEN_HIGH, dice_watch._FACE, dice_watch._CELL),
        (d.seven_h, d.face_h, d.cell_h), table_watch.REARM,
        (thresholds.tail_alert, thresholds.check_z, thresholds.position_alert),
        (_unit_of, house_win_tail, binomial_tail, _dice_alert, partial(table_watch.hold_alert, thresholds),
         partial(_position_alert, thresholds)),
        TableOpened)
    return None if config is None else config.watch


def with_native_watch(watch):
    """`watch` (a `HoldWatch`) with each table's surveillance kept natively where the native code
    is in use and `watch` keeps the default, the Python `TableWatch`; else `watch` itself (a test
    that passes another factory keeps it)."""
    from dataclasses import replace

    native = watch_factory(watch.thresholds) if watch.table_watch is TableWatch else None
    return watch if native is None else replace(watch, table_watch=native)


def native_of(table_watch: TableWatch, make):
    """A native watch (`make()`, of `watch_factory`) holding `table_watch`'s state."""
    watch = make()
    watch.load(dump_of(table_watch))
    return watch


def table_watch_of(watch) -> TableWatch:
    """The Python `TableWatch` of a native watch's state (`units` are read again when needed)."""
    dice, holds, positions, prev, last, raised = watch.dump()
    tails = {}
    for wager, paytable, decisions, handle, house_win, stakes, alerted, squares, evaluated in holds:
        tails[(wager, paytable)] = HoldTail(decisions, handle, house_win, dict(stakes), alerted, squares, evaluated)
    lines = {(pos, w, p): PositionLine(n, first, dict(results), alerted, last_p)
             for pos, w, p, n, first, results, alerted, last_p in positions}
    return TableWatch(DiceBook(*dice), tails, lines, last, prev, raised=dict(raised))


def watch_record(watch) -> dict:
    """`as_table_watch(watch).to_record()` (equal as a dict; the stored JSON sorts its keys), what a
    table's stored record holds of its surveillance, written straight from a native watch's
    `dump()` without making the Python objects: the worker stores each changed table's record in
    every transaction."""
    if type(watch) is TableWatch:
        return watch.to_record()
    dice, holds, positions, prev, last, raised = watch.dump()
    return {
        "dice": list(dice),
        "holds": {f"{w}|{p}": [decisions, handle, house_win, {str(s): c for s, c in stakes}, alerted]
                  for w, p, decisions, handle, house_win, stakes, alerted, _, _ in holds},
        "positions": {f"{pos}|{w}|{p}": [n, first, {str(v): c for v, c in results}, alerted, last_p]
                      for pos, w, p, n, first, results, alerted, last_p in positions},
        "throw_seqs": [prev, last],
        "raised": dict(raised),
    }


def as_table_watch(watch) -> TableWatch:
    """A table's surveillance as the Python `TableWatch`, whichever kind keeps it: what a table's
    stored record (`craps_streams.app.shell.state_to_text`) is written from, for a replay's books too."""
    return watch if type(watch) is TableWatch else table_watch_of(watch)


def dump_of(watch: TableWatch) -> tuple:
    """A Python `TableWatch` as a native watch's `dump()` (its `load` takes it)."""
    d = watch.dice
    dice = (d.throws, d.invalid, list(d.cells), d.seven_low, d.seven_high, list(d.faces), list(d.faces_at),
            list(d.cell_sums), list(d.cell_at), d.since, list(d.cells_since))
    holds = [(w, p, t.decisions, t.handle_cents, t.house_win_cents, list(t.stakes.items()), t.alerted,
              t.stake_squares, t.last) for (w, p), t in watch.holds.items()]
    positions = [(pos, w, p, line.wagers, line.first_throw, list(line.results.items()), line.alerted, line.last_p)
                 for (pos, w, p), line in watch.positions.items()]
    return dice, holds, positions, watch.prev_throw_seq, watch.last_throw_seq, list(watch.raised.items())
