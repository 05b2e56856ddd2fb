"""Read JSON Lines straight into the core's events: the fast path of JSON Lines replays.

The plain path is `json.loads` (a dict per line), then the contract check `record_to_event`, field
by field in Python: together most of a JSON Lines replay's time. Here msgspec decodes each line
into the core's event itself (a frozen Struct, `craps_streams.rules.events`), validating as it parses,
in one pass and in C: a tagged union on `type`, every field with its exact type (a str is a str, an
int an int, never a bool or a float), non-empty strings, seq >= 1, ts >= 0, no unknown fields;
then the ids' characters (`_ids_valid`: msgspec checked their length; a pattern there cost a
regular expression per id, half of a line's decoding). A
line it decodes is the event `record_to_event` would build, equal field by field; any other line
(a TableOpened, with its rules to parse; a null optional field; a line that is not JSON, or breaks
the contract) comes out as the plain path's item, the `json.loads` record (or the torn line as
str) with its "file:line", and `record_to_event` decides it. So the contract's
rejections keep their reasons and exact messages (the checker words them, in its order of checks),
and msgspec is only ever the faster way to the same yes.

Why that is safe: msgspec's JSON reads the same values `json.loads` does wherever both accept
(duplicate keys: the last wins in both; integers of any size; the same escapes; a lone surrogate
escape or a control character is refused by msgspec, so the plain path reads it), and its Structs
accept a subset of what the contract accepts. tests/replay/test_json_fast_read.py compares the two
paths line by line on simulated floors, on a corpus of odd and hostile lines and on generated
records; tests/golden pins the command's bytes.

A JSON Lines replay reads its file as `LineBatch`es of raw lines: with the native code in use,
`Replay.feed_batch` settles their wager, shooter and throw lines from the text itself (the lane,
native/src/lane.rs: a stricter subset still, with the same yes) and reads every other line here
(`LineBatch.item`); without it, `LineBatch.items()` reads them all here.
"""
from __future__ import annotations

import json
from itertools import islice
from typing import Iterable, Iterator, Union

import msgspec

from craps_streams.rules.contract import ID_FIELDS, valid_id
from craps_streams.rules.events import INPUT_TYPES, TableOpened

# The kinds msgspec decodes straight into the core's events (their annotations are the contract's
# types); a TableOpened's rules need the contract's own check (`rules_from_record`).
KINDS = tuple(cls for cls in INPUT_TYPES.values() if cls is not TableOpened)
_decode = msgspec.json.Decoder(Union[KINDS]).decode
_ERRORS = (msgspec.DecodeError, msgspec.ValidationError)
# The id other than the table's that each kind carries (a wager's, a shooter's), or None.
_OTHER_ID = {cls: next((n for n in cls.__struct_fields__ if n in ID_FIELDS and n != "table_id"), None)
             for cls in KINDS}
KNOWN_TABLES = 20_000  # table ids remembered as valid (a floor has hundreds)


def _ids_valid(event, known: set) -> bool:
    """Whether the event's ids are of the contract's format (msgspec has checked their length,
    1 to 32: `craps_streams.rules.events.Id`). A table id found valid is remembered (one set lookup
    after); an id of letters and digits alone passes by two string tests; any other id meets the
    contract's pattern (`valid_id`)."""
    table_id = event.table_id
    if table_id not in known:
        if not valid_id(table_id):
            return False
        if len(known) < KNOWN_TABLES:
            known.add(table_id)
    name = _OTHER_ID[type(event)]
    if name is None:
        return True
    value = getattr(event, name)
    return (value.isascii() and value.isalnum()) or valid_id(value)


def line_item(line: str, known: set | None = None):
    """The core event of one JSON line, or None when the plain path must read it (`known`: the
    table ids found valid so far, `LineBatch.item`'s)."""
    try:
        event = _decode(line)
    except _ERRORS:
        return None
    return event if _ids_valid(event, set() if known is None else known) else None


class LineBatch:
    """Lines of a JSON Lines stream as read, numbered from `first` as `json_line_batches` numbers
    them: a list of str (`line_batches`), or a block of the file's bytes that ends where a line
    ends (`line_blocks`; a line is what lies between two newlines, and `item`, `after` and the
    lane take the byte offset of a line's start where a list takes its index). `Replay.feed_batch`
    settles such a batch through the native lane where it can (native/src/lane.rs: a wager,
    shooter change or throw read, checked, authenticated and applied from its text) and reads every
    line the lane stops at by `item`; without the lane, `items()` is the batch `json_line_batches`
    yields."""

    __slots__ = ("lines", "first", "name", "known", "count", "at", "number")

    def __init__(self, lines: list | bytes, first: int, name: str, known: set):
        self.lines = lines
        self.first = first
        self.name = name
        self.known = known  # table ids found valid, shared by the stream's batches
        # A block's number of lines: set by the caller that settled it line by line (the lane
        # counts the lines it settles; `close`), else counted when asked (`len`).
        self.count = len(lines) if type(lines) is not bytes else None
        # The cursor of a caller that settles the batch line by line through the lane: where the
        # next line starts (an index or a byte offset, as the lane takes it) and its number.
        self.at = 0
        self.number = first

    def settled(self, ran: int, stop: int) -> bool:
        """The lane settled `ran` lines from the cursor and stopped at `stop`: the cursor moved
        there; whether a line is left (the one at `stop`)."""
        self.number += ran
        self.at = stop
        return stop < len(self.lines)

    def step(self) -> None:
        """Past the line at the cursor (one the lane read itself)."""
        self.at = self.after(self.at)
        self.number += 1

    def read(self):
        """The item of the line at the cursor (`item`), the cursor moved past it."""
        at, number = self.at, self.number
        self.step()
        return self.item(at, number)

    def close(self) -> None:
        """The cursor has passed every line: their number is the batch's count."""
        self.count = self.number - self.first

    def __len__(self) -> int:
        """The number of lines."""
        count = self.count
        if count is None:
            lines = self.lines
            count = self.count = lines.count(b"\n") + (lines[-1:] not in (b"\n", b""))
        return count

    def after(self, k: int) -> int:
        """Where the line after line k starts (k + 1 in a list; past k's newline in a block)."""
        lines = self.lines
        if type(lines) is not bytes:
            return k + 1
        end = lines.find(b"\n", k)
        return len(lines) if end < 0 else end + 1

    def item(self, k: int, number: int | None = None):
        """Line k's item: its core event where msgspec decodes it, else `(record, "name:n")` (the
        record as `json.loads` reads it, or the stripped line as str when it is not JSON); None
        for a blank line. `number`: the line's number in the stream, which a block's caller
        counts (the lane tells it how many lines it settled); a list's is `first + k`."""
        lines = self.lines
        if type(lines) is bytes:
            # A block holds no carriage return (`line_blocks`), so its lines are a text stream's.
            line = lines[k:self.after(k)].decode("utf-8", "replace")
        else:
            line = lines[k]
            number = self.first + k
        event = line_item(line, self.known)
        if event is not None:
            return event
        line = line.strip()
        if not line:
            return None
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: hostile nesting, e.g. 2,000 '['
            record = line
        return record, f"{self.name}:{number}"

    def items(self) -> list:
        """The batch's items, blank lines left out."""
        batch = self
        if type(self.lines) is bytes:
            batch = LineBatch(_text_lines(self.lines), self.first, self.name, self.known)
        item = batch.item
        return [x for x in map(item, range(len(batch.lines))) if x is not None]


def _text_lines(block: bytes) -> list:
    """The lines of a piece of a UTF-8 stream that ends where a line ends, as a text stream reads
    them (`open(..., encoding="utf-8", errors="replace")`: a carriage return, alone or before a
    newline, ends a line as a newline does), each with its newline (the last one's, if any)."""
    text = block.decode("utf-8", "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    last = lines.pop()
    lines = [line + "\n" for line in lines]
    if last:
        lines.append(last)
    return lines


def line_batches(lines: Iterable[str], name: str, size: int = 512) -> Iterator[LineBatch]:
    """A text stream's lines in `LineBatch`es of `size`, numbered from 1."""
    known: set = set()
    first = 1
    lines = iter(lines)
    while True:
        chunk = list(islice(lines, size))
        if not chunk:
            return
        yield LineBatch(chunk, first, name, known)
        first += len(chunk)


BLOCK = 1 << 18  # bytes read at a time by `line_blocks` (about a thousand lines of a history)


def line_blocks(stream, name: str, size: int = BLOCK) -> Iterator[LineBatch]:
    """A binary stream's lines in `LineBatch`es of about `size` bytes, each ending where a line
    ends (the last where the stream does), numbered from 1: the lines `line_batches` reads from the
    same bytes opened as UTF-8 text (`errors="replace"`, universal newlines), the lane reading a
    block's bytes without a str made per line. A block holding a carriage return is handed on as
    its text lines instead (`_text_lines`), so that every line ends where a text stream ends it.

    The stream is read into one buffer (`readinto`), and each block copied out of it once, up to
    its last newline; the line begun after that moves to the buffer's start and the next read
    follows it. A line longer than the buffer doubles it: a hostile line of many blocks costs its
    length, not its length squared."""
    known: set = set()
    first = 1
    readinto = stream.readinto
    buf = bytearray(max(size, 1))
    view = memoryview(buf)
    filled = 0  # bytes at the buffer's start that follow the last block: a line begun
    while True:
        if filled == len(buf):
            view.release()  # a bytearray with a view on it cannot grow
            buf.extend(bytes(len(buf)))
            view = memoryview(buf)
        n = readinto(view[filled:])
        if n:
            end = filled + n
            cut = buf.rfind(b"\n", filled, end) + 1
            if cut == 0:  # no line ends in what was read: read on
                filled = end
                continue
            block = bytes(view[:cut])
            view[:end - cut] = buf[cut:end]
            filled = end - cut
        elif filled:  # the stream's last line, without its newline
            block = bytes(view[:filled])
            filled = 0
        else:
            view.release()
            return
        if b"\r" in block:
            lines = _text_lines(block)
            yield LineBatch(lines, first, name, known)
            first += len(lines)
        else:
            batch = LineBatch(block, first, name, known)
            yield batch
            first += len(batch)  # counted by its reader, as a rule


def json_line_batches(lines: Iterable[str], name: str, size: int = 512) -> Iterator[list]:
    """The batches of `Replay.feed_batch` from JSON lines (a text stream) as lists: core events for
    the lines msgspec decodes, `(record, "name:n")` for the others (`LineBatch.item`), blank lines
    skipped, numbered from 1 as `engine.json_lines` numbers them."""
    for batch in line_batches(lines, name, size):
        items = batch.items()
        if items:
            yield items
