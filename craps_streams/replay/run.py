"""The replay command's loop: history batches through the core, outputs sliced, filtered, written.

Shared by `craps-streams replay` in one process and by each job of a parallel replay
(`craps_streams.replay.parallel`), so both write the same bytes and count the same summary.
"""
from __future__ import annotations

import dataclasses
import gc
import json
from contextlib import contextmanager
from functools import lru_cache
from typing import Callable, Iterable

import msgspec

from craps_streams.replay.engine import Replay, ReplayTally
from craps_streams.replay.jsonread import LineBatch
from craps_streams.rules import EventRejected, WagerSettled, output_to_record
from craps_streams.rules.events import OUTPUT_TYPES
from craps_streams.rules.hold import HoldLedger
from craps_streams.surveillance import HoldWatch

# --only kind -> output types
OUTPUT_KINDS = {
    "settlements": ("WagerSettled",),
    "markers": ("MarkerPlaced", "MarkerCleared"),
    "alerts": ("SurveillanceAlerted",),
    "rejections": ("EventRejected",),
    "none": (),  # no outputs written: the summary alone
}

dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
_encoder = msgspec.json.Encoder(order="sorted")
_encode, _encode_lines = _encoder.encode, _encoder.encode_lines
_UNENCODABLE = (UnicodeEncodeError, msgspec.EncodeError, TypeError, OverflowError)


def _general_line(o) -> str:
    """An output's JSON line as the contract defines it: `dumps(output_to_record(o))`."""
    return dumps(output_to_record(o))


def _plain(line: bytes) -> bool:
    """Whether msgspec's bytes are the json module's text: printable ASCII and no escape. The two
    differ only where the json module escapes (every non-ASCII character and DEL; msgspec writes
    them as they are); a backslash means some escape, which the line's id splice must not meet."""
    return line.isascii() and b"\\" not in line and b"\x7f" not in line


def _struct_line(o, encode=_encode, plain=_plain, general=_general_line) -> str:
    try:
        line = encode(o)
    except _UNENCODABLE:  # a lone surrogate in a string: the json module escapes it
        return general(o)
    return line.decode() if plain(line) else general(o)


def _line_makers() -> dict:
    """output class -> a function giving an output's JSON line, the very text of
    `dumps(output_to_record(o))` (sorted keys, compact, ASCII with the json module's escapes):
    msgspec encodes the output Struct (its `type` tag among the sorted keys), and a line that is
    not plain printable ASCII takes the general path. A rejection (its raw event may hold floats,
    which the two write differently) always takes the general path."""
    makers = {cls: _struct_line for cls in OUTPUT_TYPES.values()}
    makers[EventRejected] = _general_line
    return makers


LINE_OF = _line_makers()


def _native_lines():
    """The native line writer (native/src/lines.rs: each class's keys sorted once, a line written
    from the Struct's slots; `lines(outputs) -> str | None`, None for a batch holding anything it
    leaves to msgspec, and `write(outputs, fd)`, the same text written to a file descriptor), where
    the native code is in use (craps_streams/accelerator/lane.py), else None. Made at its first
    use, after the command chose its core."""
    from craps_streams.accelerator.lane import line_writer
    from craps_streams.rules.contract import field_names

    return line_writer([(cls, field_names(cls)) for cls in OUTPUT_TYPES.values() if cls is not EventRejected])


@lru_cache(maxsize=16)
def _classes(wanted: frozenset) -> tuple:
    """The classes of a `wanted` set as the native writer takes them."""
    return tuple(wanted)


_LATER = object()
_NATIVE_LINES = _LATER  # the native writer, None (the Python paths), or _LATER: made at its first use


def native_writer():
    """The native line writer (`_native_lines`), or None where the Python paths write."""
    global _NATIVE_LINES
    native = _NATIVE_LINES
    if native is _LATER:
        native = _NATIVE_LINES = _native_lines()
    return native


def output_lines(outputs: list, wanted: frozenset | None = None) -> str:
    """The JSON lines of outputs (with `wanted`, of those of its classes alone), each ended by a
    newline: the text `LINE_OF` gives them one by one; natively for a batch the native writer
    takes whole, else in one msgspec call for a batch without a rejection when the batch's text is
    plain (compared to the json module's text on floors and odd strings: msgspec's in
    tests/replay/test_json_fast_read.py, the native writer's in tests/native/test_lockstep.py)."""
    native = native_writer()
    if native is not None and outputs and type(outputs) is list:
        text = native.lines(outputs, None if wanted is None else _classes(wanted))
        if text is not None:
            return text
    return _python_lines(outputs, wanted)


def _python_lines(outputs: list, wanted: frozenset | None) -> str:
    """`output_lines` of a batch the native writer leaves (or where it is not in use)."""
    if wanted is not None:
        outputs = [o for o in outputs if type(o) in wanted]
    if outputs and EventRejected not in map(type, outputs):
        try:
            text = _encode_lines(outputs)
        except _UNENCODABLE:
            text = None
        if text is not None and _plain(text):
            return text.decode()
    line_of = LINE_OF
    return "".join([line_of[type(o)](o) + "\n" for o in outputs])


class OutputFile:
    """A text stream a replay writes its output lines to (the command's `-o` file, stdout, a job's
    segment): `put(outputs, wanted)` writes a batch's lines as `output_lines` gives them.

    Where the native writer is in use and the stream is an ASCII-compatible file with a descriptor
    (and lines end in "\\n" on this system), a batch it takes whole goes from its buffer straight to
    the descriptor: no str is made and none encoded (a replay's lines are as many bytes as its
    history). The stream's own buffer is flushed before that whenever text went through it since,
    so the lines keep their order; a batch the native writer leaves goes through the stream."""

    __slots__ = ("stream", "fd", "dirty")

    def __init__(self, stream):
        self.stream = stream
        self.fd = _descriptor(stream)
        self.dirty = False  # text written to the stream since its last flush

    def put(self, outputs: list, wanted: frozenset | None = None) -> None:
        native = native_writer() if self.fd is not None and outputs and type(outputs) is list else None
        if native is None:
            text = output_lines(outputs, wanted)
        else:
            if self.dirty:
                self.stream.flush()
                self.dirty = False
            if native.write(outputs, self.fd, None if wanted is None else _classes(wanted)) is not None:
                return
            text = _python_lines(outputs, wanted)  # the native writer left it: not asked twice
        if text:
            self.stream.write(text)
            self.dirty = True


def _descriptor(stream) -> int | None:
    """The file descriptor under a text stream whose lines the native writer's bytes are, else None."""
    import codecs
    import os

    encoding = getattr(stream, "encoding", None)
    if os.linesep != "\n" or not encoding or codecs.lookup(encoding).name not in ("utf-8", "ascii"):
        return None
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return None


def wanted_types(only: str | None) -> frozenset | None:
    """The output classes an `--only` list asks for (None: all); ValueError on an unknown kind."""
    if not only:
        return None
    names: set = set()
    for kind in only.split(","):
        if kind not in OUTPUT_KINDS:
            raise ValueError(f"unknown kind {kind!r}; choose from {', '.join(OUTPUT_KINDS)}")
        names.update(OUTPUT_KINDS[kind])
    return frozenset(OUTPUT_TYPES[n] for n in names)


@contextmanager
def batch_gc(threshold: int = 50_000):
    """The cyclic garbage collector tuned for a long replay: the core makes no reference cycles
    (events, states, outputs are freed by reference counting), but with the default threshold
    (700 allocations) the collector walks every batch's young objects many times over, about a
    tenth of a replay's time. A larger first-generation threshold still collects any cycle, so
    memory stays bounded; objects from before the replay are frozen out of the collector's walks,
    as they are (no full collection first: it walked every object the imports made, about a
    twentieth of a short replay's command, to free next to nothing)."""
    old = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(threshold, old[1], old[2])
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


class ReplayRun:
    """One replay: `feed(batches)` (as often as needed), then `tally()`.

    `sl` a `sources.Slice` (tables, since/until: outputs kept by their deciding `ts`, the hold of
    the kept settlements), `wanted` the output classes to write (None: all), `out` the text
    stream they are written to (`OutputFile`; None: nothing written; `write_to` changes it),
    `tick(n)` told of every n items read, `tags` the tag check before the core
    (`craps_streams.authenticity.TagCheck`), `thresholds` the surveillance's (the worker's, for
    the replay to match; None: the defaults)."""

    def __init__(self, sl=None, wanted: frozenset | None = None, out=None,
                 tick: Callable[[int], object] | None = None, tags=None, thresholds=None):
        self.replay = Replay(HoldWatch(thresholds) if thresholds is not None else None, tags=tags)
        self.sl = sl if sl is not None and sl.active else None
        self.slice_hold = HoldLedger() if self.sl is not None else None
        self.wanted = wanted
        self.write_to(out)
        self.tick = tick
        self.outputs = 0  # outputs of the core (kept by the slice), written or not

    def write_to(self, out) -> None:
        """Write the outputs from now on to the text stream `out` (None: nowhere)."""
        self.out = OutputFile(out) if out is not None and (self.wanted is None or self.wanted) else None

    def feed(self, batches: Iterable[list]) -> None:
        feed_batch = self.replay.feed_batch
        sl, wanted, tick = self.sl, self.wanted, self.tick
        put = self.out.put if self.out is not None else None
        feeds = keeps = add = None
        if sl is not None:
            feeds, keeps, add = sl.feeds, sl.keeps, self.slice_hold.add
        for items in batches:
            if feeds is not None:
                if type(items) is LineBatch:  # the slice reads events: no lane
                    items = items.items()
                items = [i for i in items if feeds(i[0] if type(i) is tuple else i)]
            outputs = feed_batch(items)
            if tick is not None:  # once fed: a block of lines knows its count then
                tick(len(items))
            if not outputs:
                continue
            if keeps is not None:
                kept = []
                for o in outputs:
                    if keeps(o):
                        kept.append(o)
                        if type(o) is WagerSettled:
                            add(o)
                outputs = kept
            self.outputs += len(outputs)
            if put is not None and outputs:
                put(outputs, wanted)

    def tally(self) -> ReplayTally:
        """The replay's tally; with a slice, its hold is the hold of the kept settlements."""
        t = self.replay.tally
        if self.slice_hold is None:
            return t
        return dataclasses.replace(t, hold=self.slice_hold)
