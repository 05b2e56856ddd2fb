"""A JSON Lines file read as blocks of its bytes (`jsonread.line_blocks`) is the same history as the
file read as text (`line_batches` over `open(path, encoding="utf-8", errors="replace")`): the
same lines, numbered the same, whatever the block size, on bytes a text stream reads in its own
way (carriage returns alone or before a newline, bytes that are not UTF-8, blank lines, a last
line without its newline, a line longer than a block); and a replay through the native lane over
blocks gives what the plain path gives over the text, to the rejection's line number
(tests/native/lockstep.py's hostile floors)."""
from __future__ import annotations

import dataclasses
import io

import pytest

from craps_streams.accelerator.rules import chosen
from craps_streams.authenticity import TagCheck
from craps_streams.replay.engine import Replay
from craps_streams.replay.jsonread import LineBatch, json_line_batches, line_batches, line_blocks
from craps_streams.replay.run import output_lines
from craps_streams.rules import output_to_record
from tests.native.lockstep import WATCH, floor_of

WAGER = (b'{"amount_cents":500,"position":1,"seq":%d,"table_id":"T1","ts":1000,"type":"WagerPlaced",'
         b'"wager":"fire","wager_id":"w%d"}')

# Byte streams a text stream reads in its own way, each line of them a history item or a rejection.
ODD_STREAMS = [
    b"",
    b"\n",
    WAGER % (1, 1),  # no newline at the end
    WAGER % (1, 1) + b"\n" + WAGER % (2, 2) + b"\n",
    WAGER % (1, 1) + b"\r\n" + WAGER % (2, 2) + b"\r\n",  # a file written on Windows
    WAGER % (1, 1) + b"\r" + WAGER % (2, 2) + b"\r",  # carriage returns alone end lines too
    b'{"amount_cents":500,\r"position":1}\n' + WAGER % (3, 3) + b"\n",  # a line cut by a carriage return
    WAGER % (1, 1) + b"\n\n  \n\t\n" + WAGER % (2, 2) + b"\n",  # blank lines are numbered, not read
    b'{"type":"WagerPlaced","wager_id":"w\xe9\xff"}\n' + WAGER % (2, 2) + b"\n",  # not UTF-8
    b'{"type":"WagerPlaced","wager_id":"w\xc3\xa9"}\n',  # UTF-8 beyond ASCII
    b"\xc3\n\xa9\n",  # a character's bytes split by a newline
    b'{"x":"' + b"y" * 5000 + b'"}\n' + WAGER % (1, 1) + b"\n",  # longer than a block
    b"not json\n[1,2]\n{}\n" + WAGER % (1, 1),
    b"\x00\x01\n\x1b[31m\n",
]


def text_items(data: bytes) -> list:
    """The stream's items as the text path reads them (`json_line_batches` of a text stream)."""
    text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace")
    return [x for batch in json_line_batches(text, "f") for x in batch]


def block_items(data: bytes, size: int) -> list:
    return [x for batch in line_blocks(io.BytesIO(data), "f", size) for x in batch.items()]


@pytest.mark.parametrize("size", [1, 7, 64, 1 << 18])
@pytest.mark.parametrize("data", ODD_STREAMS)
def test_blocks_hold_the_text_streams_lines(data, size):
    assert block_items(data, size) == text_items(data)


@pytest.mark.parametrize("size", [1, 7, 64])
def test_every_block_ends_where_a_line_ends_and_is_numbered_on(size):
    data = b"".join(WAGER % (n, n) + b"\n" for n in range(1, 40))
    first = 1
    for batch in line_blocks(io.BytesIO(data), "f", size):
        assert type(batch.lines) is bytes and batch.lines.endswith(b"\n")
        assert batch.first == first
        assert len(batch) == batch.lines.count(b"\n")
        first += len(batch)
    assert first == 40


def test_a_line_of_many_blocks_is_read_once():
    """A hostile line far longer than a block is read piece by piece into a buffer that doubles:
    every byte is read once, in a number of reads that grows with the log of the line's length
    (not one per block), and the block holds the line whole."""
    line = b'{"x":"' + b"y" * 300_000 + b'"}\n'

    class Counted(io.BytesIO):
        reads = 0
        bytes_read = 0

        def readinto(self, b):
            Counted.reads += 1
            n = super().readinto(b)
            Counted.bytes_read += n
            return n

    data = line + WAGER % (1, 1) + b"\n"
    blocks = list(line_blocks(Counted(data), "f", 1024))
    assert blocks[0].lines.startswith(line)  # the line whole, in one block
    assert b"".join(b.lines for b in blocks) == data and sum(len(b) for b in blocks) == 2
    assert Counted.bytes_read == len(data)
    assert Counted.reads <= (len(line) // 1024).bit_length() + 4


def test_a_block_with_a_carriage_return_comes_as_text_lines():
    data = WAGER % (1, 1) + b"\r\n" + WAGER % (2, 2) + b"\n"
    (batch,) = line_blocks(io.BytesIO(data), "f")
    assert type(batch.lines) is list and len(batch) == 2


def test_a_line_is_found_and_numbered_by_its_offset():
    data = b"\n" + WAGER % (1, 1) + b"\nnot json\n"
    (batch,) = line_blocks(io.BytesIO(data), "f")
    second = batch.after(0)
    third = batch.after(second)
    assert (second, third, batch.after(third)) == (1, len(WAGER % (1, 1)) + 2, len(data))
    assert batch.item(0, 1) is None  # blank
    assert batch.item(third, 3) == ("not json", "f:3")


lane_only = pytest.mark.skipif(not chosen().native, reason="the lane is the accelerator's")


@lane_only
@pytest.mark.parametrize("name", ["odd-lines", "odd-lines-untagged", "bad-input-1", "contract-corpus"])
@pytest.mark.parametrize("size", [97, 4096, 1 << 18])
def test_the_lane_over_blocks_settles_as_the_plain_path_reads_the_text(name, size):
    floor = floor_of(name)
    data = "\n".join(floor.lines).encode() + b"\n\r\n" + "\n".join(floor.lines[:50]).encode()
    replay = Replay(WATCH, tags=TagCheck(floor.ring, accept_untagged=floor.accept_untagged))
    assert replay._lane is not None
    outputs = [o for b in line_blocks(io.BytesIO(data), "f", size) for o in replay.feed_batch(b)]
    plain = Replay(WATCH, tags=TagCheck(floor.ring, accept_untagged=floor.accept_untagged))
    plain._lane = plain._quiet = None
    text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace")
    outputs0 = [o for b in json_line_batches(text, "f") for o in plain.feed_batch(b)]
    assert [output_to_record(o) for o in outputs] == [output_to_record(o) for o in outputs0]
    assert dataclasses.asdict(replay.tally) == dataclasses.asdict(plain.tally)
    assert replay.tally.rejected > 0  # the rejections' "file:line" compared above


@lane_only
def test_the_lane_counts_a_blocks_lines_as_it_settles_them():
    floor = floor_of("golden")
    data = "\n".join(floor.lines).encode() + b"\n"
    replay = Replay(WATCH, tags=TagCheck(floor.ring))
    total = blocks = 0
    for batch in line_blocks(io.BytesIO(data), "f", 4096):
        replay.feed_batch(batch)
        if type(batch.lines) is bytes:
            blocks += 1
            assert batch.count == batch.lines.count(b"\n")
        total += batch.count
    assert blocks > 10 and replay.tally.rejected > 0
    assert total == len(floor.lines)


def test_a_replay_writes_the_wanted_outputs_alone():
    floor = floor_of("golden")
    replay = Replay(WATCH, tags=TagCheck(floor.ring))
    outputs = [o for b in line_batches([line + "\n" for line in floor.lines], "f") for o in replay.feed_batch(b)]
    kinds = {type(o) for o in outputs}
    assert len(kinds) > 2
    for kind in kinds:
        wanted = frozenset({kind})
        assert output_lines(outputs, wanted) == output_lines([o for o in outputs if type(o) is kind])
    assert output_lines(outputs, frozenset()) == ""


def test_line_batch_of_a_list_keeps_its_numbering():
    batch = LineBatch(["\n", "oops\n"], 7, "f", set())
    assert len(batch) == 2 and batch.after(0) == 1
    assert batch.item(1) == ("oops", "f:8")
