"""The JSON Lines lane (native/src/lane.rs; `LineBatch`, `lane_run`) beyond its lockstep with the
plain path (tests/native/test_lockstep.py: a history's lines settled through the lane give exactly
what msgspec's reading and `settle_event` give them, on every floor, odd lines mixed in: the same
event written otherwise, lines the contract refuses, tags that do not hold): a batch without the
lane is read line by line, and where the lane is not sure it stops untouched, and the plain path
reads the line.

They run where the native accelerator is installed (CI: wherever cargo is present; tests/native/lockstep.py).
"""
from __future__ import annotations

import dataclasses
import json

import pytest

from craps_streams.authenticity import TagCheck
from craps_streams.replay.engine import Replay
from craps_streams.replay.jsonread import LineBatch, json_line_batches, line_batches
from craps_streams.accelerator.rules import chosen
from craps_streams.rules import DiceThrown, output_to_record
from tests.native.lockstep import WATCH, history_floor, odd_lines, odd_throws


pytestmark = pytest.mark.skipif(not chosen().native, reason="the lane is the accelerator's (not installed, or CRAPS_CORE=python)")


def floor_text(seed: int, accept_untagged: bool) -> tuple[list[str], object]:
    """The `odd-lines` floors' text (tests/native/lockstep.py `history_floor`) and its key ring."""
    floor = history_floor(seed, accept_untagged, odd=True)
    return [line + "\n" for line in floor.lines], floor.ring


def test_a_batch_without_the_lane_is_read_line_by_line():
    lines, ring = floor_text(4, False)
    replay = Replay(WATCH, tags=TagCheck(ring))
    replay._lane = None
    batches = list(line_batches(lines, "f", size=89))
    assert all(type(b) is LineBatch for b in batches)
    outputs = [o for b in batches for o in replay.feed_batch(b)]
    plain = Replay(WATCH, tags=TagCheck(ring))
    plain._lane = plain._quiet = None
    outputs0 = [o for b in json_line_batches(lines, "f", size=89) for o in plain.feed_batch(b)]
    assert [output_to_record(o) for o in outputs] == [output_to_record(o) for o in outputs0]
    assert dataclasses.asdict(replay.tally) == dataclasses.asdict(plain.tally)


def at_first(kind: str):
    """A replay of floor_text(4)'s lines up to the first of `kind`: (the replay, that line, its
    record, its table, the table's record before it)."""
    lines, ring = floor_text(4, False)
    replay = Replay(WATCH, tags=TagCheck(ring))
    first = next(n for n, line in enumerate(lines) if f'"type":"{kind}"' in line)
    for batch in line_batches(lines[:first], "f"):
        replay.feed_batch(batch)
    record = json.loads(lines[first])
    table = replay.tables[record["table_id"]]
    return replay, lines[first], record, table, table.to_record()


def test_the_lane_stops_untouched_at_every_odd_line():
    replay, _, record, table, before = at_first("WagerPlaced")
    run = replay._lane
    same_event = odd_lines(record)[:2]  # reordered keys, whitespace: the lane reads them
    for line in odd_lines(record)[2:]:
        assert run(replay.tables, replay.books, [line], 0) == (0, 0, 0, None), line
        assert table.to_record() == before, line
    assert run(replay.tables, replay.books, [same_event[0]], 0) == (1, 1, 0, None)
    assert table.to_record() != before


def test_a_throw_comes_back_as_the_event_msgspec_reads():
    replay, line, record, table, before = at_first("DiceThrown")
    run = replay._lane
    for odd in odd_throws(record)[1:]:  # refused: the plain path reads them
        assert run(replay.tables, replay.books, [odd], 0) == (0, 0, 0, None), odd
        assert table.to_record() == before, odd
    stop, applied, untagged, (event, outputs) = run(replay.tables, replay.books, [line], 0)
    assert (stop, applied, untagged) == (0, 0, 0)
    expected = LineBatch([line], 1, "f", set()).item(0)
    assert type(event) is DiceThrown and event == expected
    assert type(outputs) is list and table.to_record() != before  # applied natively
