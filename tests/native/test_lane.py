"""The JSON Lines lane (native/src/lane.rs; `LineBatch`, `lane_run`) held to the plain path: a
history's lines settled through the lane give exactly what msgspec's reading and `settle_event`
give them line by line (the outputs, the tally, the untagged count, every table's record), on
floors with hostile events and with odd lines mixed in: the same event written otherwise (keys
reordered, whitespace, an escape, a key twice), lines the contract refuses (a float, a null, an
unknown or foreign field, an int beyond 64 bits, script in an id, oversized text, non-ASCII text)
and tags that do not hold. Where the lane is not sure it stops, and the plain path reads the line.

They run where the native accelerator is installed (CI: wherever cargo is present; tests/native/lockstep.py).
"""
from __future__ import annotations

import dataclasses
import json

import pytest

from streams.authenticity import TagCheck
from streams.replay.engine import Replay
from streams.replay.jsonread import LineBatch, json_line_batches, line_batches
from streams.rules import CORE, DiceThrown, ShooterChanged, WagerPlaced, event_to_record, output_to_record
from streams.rules import native
from tests.native.test_quiet_run import WATCH, counted, history

_dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


pytestmark = pytest.mark.skipif(CORE != "native", reason="the lane is the accelerator's (not installed, or CRAPS_CORE=python)")


def odd_lines(record: dict) -> list[str]:
    """Other texts of a wager's record: some the same event, the others refused by the contract."""
    r = dict(record)
    body = _dumps(r)
    return [
        json.dumps(dict(reversed(list(r.items()))), separators=(",", ":")),  # keys in another order
        " { " + body[1:-1].replace(",", " ,\t") + " } \r",  # whitespace where JSON allows it
        body.replace(f'"wager_id":"{r["wager_id"]}"', '"wager_id":"\\u%04x%s"' % (ord(r["wager_id"][0]), r["wager_id"][1:])),
        body[:-1] + f',"seq":{r["seq"]}}}',  # a key twice (the same value: msgspec keeps the last)
        body.replace(f'"amount_cents":{r["amount_cents"]}', f'"amount_cents":{r["amount_cents"]}.0'),
        body.replace(f'"amount_cents":{r["amount_cents"]}', f'"amount_cents":{r["amount_cents"]}e0'),
        body.replace(f'"position":{r["position"]}', '"position":true'),
        body.replace(f'"key_id":"{r["key_id"]}"', '"key_id":null'),
        body[:-1] + ',"extra":1}',
        body[:-1] + ',"reason":"voluntary"}',  # a ShooterChanged's field
        body.replace(f'"seq":{r["seq"]}', '"seq":18446744073709551616'),
        body.replace(f'"wager_id":"{r["wager_id"]}"', '"wager_id":"<script>alert(1)</script>"'),
        body.replace(f'"wager":"{r["wager"]}"', '"wager":"' + "x" * 65 + '"'),
        body.replace(f'"wager_id":"{r["wager_id"]}"', '"wager_id":"w\u00e9"'),
        body.replace(f'"tag":"{r["tag"]}"', '"tag":"' + "A" * 129 + '"'),
        body.replace(f'"key_id":"{r["key_id"]}"', '"key_id":""'),
        body.replace(f'"seq":{r["seq"]}', '"seq":0'),
        body[:-1] + "}}",
        body.replace(f'"position":{r["position"]}', f'"position":0{r["position"]}'),
    ]


def odd_throws(record: dict) -> list[str]:
    """Other texts of a throw's record: the same event without its default, or refused."""
    r = dict(record)
    body = _dumps(r)
    same = [_dumps({k: v for k, v in r.items() if k != "valid"})] if r.get("valid", True) is True else []
    return same + [
        body.replace('"valid":true', '"valid":1').replace('"valid":false', '"valid":0'),
        body.replace(f'"die1":{r["die1"]}', f'"die1":{r["die1"]}.0'),
        body[:-1] + ',"wager":"fire"}',
        body.replace('"type":"DiceThrown"', '"type":"DiceThrown "'),
    ]


def floor_text(seed: int, accept_untagged: bool) -> tuple[list[str], object, int]:
    """`history`'s items as JSON lines, every 11th wager preceded by its odd lines; and how many
    of the history's events are wagers or shooter changes."""
    items, ring = history(seed, accept_untagged)
    quiet = sum(1 for i in items if type(i) in (WagerPlaced, ShooterChanged))
    lines: list[str] = []
    wagers = throws = 0
    for item in items:
        if type(item) is tuple:
            record = item[0]
            lines.append(record if type(record) is str else _dumps(record))
            continue
        record = event_to_record(item)
        if type(item) is WagerPlaced and item.tag is not None:
            wagers += 1
            if wagers % 11 == 0:
                lines += odd_lines(record)
        if type(item) is DiceThrown and item.tag is not None:
            throws += 1
            if throws % 13 == 0:
                lines += odd_throws(record)
        lines.append(_dumps(record))
    lines.insert(len(lines) // 2, "")  # a blank line, numbered as the plain path numbers it
    return [line + "\n" for line in lines], ring, quiet


def settle_both(lines: list[str], ring, accept_untagged: bool):
    """(through the lane, the plain path): (outputs as records, tally, untagged, tables' records,
    [quiet lines the lane settled, throws it applied, throws it left to the Python core])."""
    results = []
    for lane in (True, False):
        replay = Replay(WATCH, tags=TagCheck(ring, accept_untagged=accept_untagged))
        ran = [0, 0, 0]  # quiet lines, throws applied natively, throws left to the Python core
        outputs = []
        if lane:
            assert replay._lane is not None
            replay._lane = counted(replay._lane, ran)
            for batch in line_batches(lines, "f", size=89):
                outputs += replay.feed_batch(batch)
        else:
            replay._lane = replay._quiet = None
            for batch in json_line_batches(lines, "f", size=89):
                outputs += replay.feed_batch(batch)
        tally = replay.tally
        results.append(([output_to_record(o) for o in outputs], dataclasses.asdict(tally), tally.untagged,
                         {t: s.to_record() for t, s in replay.tables.items()}, ran))
    return results


@pytest.mark.parametrize("seed,accept_untagged", [(4, False), (9, True)])
def test_lines_settle_through_the_lane_as_by_the_plain_path(seed, accept_untagged):
    lines, ring, quiet = floor_text(seed, accept_untagged)
    (out, tally, untagged, tables, ran), (out0, tally0, untagged0, tables0, ran0) = settle_both(lines, ring, accept_untagged)
    assert ran0 == [0, 0, 0]
    assert ran[0] > quiet // 2, (ran, quiet)
    assert ran[1] > 100 and ran[2] > 0, ran  # throws applied natively, and some the Python core's
    assert out == out0
    assert tally == tally0
    assert untagged == untagged0
    assert tables == tables0
    reasons = tally["rejections_by_reason"]
    # The odd lines met the contract's checks and the tag check, in the plain path's words.
    for reason in ("bad_signature", "invalid_id", "field_too_long", "malformed"):
        assert reasons.get(reason, 0) > 0, (reason, reasons)
    assert tally["duplicates"] > 0  # the same event written otherwise: applied once, then a duplicate


def test_a_batch_without_the_lane_is_read_line_by_line():
    lines, ring, _ = floor_text(4, False)
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
    lines, ring, _ = floor_text(4, False)
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
