"""The replay command's loop: history batches through the core, outputs sliced, filtered, written.

Shared by `craps-streams replay` in one process and by each job of a parallel replay
(`streams.replay.parallel`), so both write the same bytes and count the same summary.
"""
from __future__ import annotations

import dataclasses
import gc
import json
from contextlib import contextmanager
from json.encoder import encode_basestring_ascii as _esc
from typing import Callable, Iterable

from streams.replay.engine import Replay, ReplayTally
from streams.rules import WagerSettled, output_to_record
from streams.rules.events import OUTPUT_TYPES
from streams.rules.hold import HoldLedger

# --only kind -> output types
OUTPUT_KINDS = {
    "settlements": ("WagerSettled",),
    "markers": ("MarkerPlaced", "MarkerCleared"),
    "alerts": ("SurveillanceAlerted",),
    "rejections": ("EventRejected",),
    "none": (),  # no outputs written: the summary alone
}

dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


def _line_makers() -> dict:
    """output class -> a function giving an output's JSON line, the very text of
    `dumps(output_to_record(o))`, about four times as fast: for a class whose fields are all str
    and int, the line is formatted directly (keys in sorted order, strings by the json module's
    own escaping, exact ints by their repr, as the encoder does) once every value is checked to
    be an exact str or int; anything else (another type, a class with tuple or dict fields) takes
    the general path."""
    makers = {}
    for cls in OUTPUT_TYPES.values():
        kinds = {f.name: str(f.type) for f in dataclasses.fields(cls)}
        general = (lambda o: dumps(output_to_record(o)))
        if "type" in kinds or any(k not in ("str", "int") for k in kinds.values()):
            makers[cls] = general
            continue
        if cls is WagerSettled:
            kinds["id"] = "str"
        keys = sorted([*kinds, "type"])
        names = [k for k in keys if k != "type"]
        parts = []
        for k in keys:
            if k == "type":
                parts.append(f'"type":{_esc(cls.__name__)}')
            elif kinds[k] == "str":
                parts.append(f'"{k}":{{esc(v_{k})}}')
            else:
                parts.append(f'"{k}":{{v_{k}!r}}')
        checks = " and ".join(f"type(v_{k}) is {kinds[k]}" for k in names)
        text = "{{" + ",".join(parts) + "}}"
        src = (f"def line(o):\n"
               f"    {', '.join(f'v_{k}' for k in names)}, = {', '.join(f'o.{k}' for k in names)},\n"
               f"    if {checks}:\n"
               f"        return f'{text}'\n"
               f"    return general(o)\n")
        ns = {"esc": _esc, "general": general}
        exec(src, ns)  # noqa: S102 - generated from the class's own fields
        makers[cls] = ns["line"]
    return makers


LINE_OF = _line_makers()


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
    memory stays bounded; objects from before the replay are frozen out of the collector's walks."""
    old = gc.get_threshold()
    gc.collect()
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
    the kept settlements), `wanted` the output classes to write (None: all), `write` a text
    writer (None: nothing written), `tick(n)` told of every n items read, `tags` the tag check
    before the core (`streams.authenticity.TagCheck`)."""

    def __init__(self, sl=None, wanted: frozenset | None = None, write: Callable[[str], object] | None = None,
                 tick: Callable[[int], object] | None = None, tags=None):
        self.replay = Replay(tags=tags)
        self.sl = sl if sl is not None and sl.active else None
        self.slice_hold = HoldLedger() if self.sl is not None else None
        self.wanted = wanted
        self.write = write if wanted is None or wanted else None
        self.tick = tick
        self.outputs = 0  # outputs of the core (kept by the slice), written or not

    def feed(self, batches: Iterable[list]) -> None:
        feed_batch = self.replay.feed_batch
        sl, wanted, write, tick = self.sl, self.wanted, self.write, self.tick
        feeds = keeps = add = None
        if sl is not None:
            feeds, keeps, add = sl.feeds, sl.keeps, self.slice_hold.add
        for items in batches:
            if tick is not None:
                tick(len(items))
            if feeds is not None:
                items = [i for i in items if feeds(i[0] if type(i) is tuple else i)]
            outputs = feed_batch(items)
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
            if write is not None and outputs:
                line_of = LINE_OF
                lines = [line_of[type(o)](o) for o in outputs if wanted is None or type(o) in wanted]
                if lines:
                    lines.append("")
                    write("\n".join(lines))

    def tally(self) -> ReplayTally:
        """The replay's tally; with a slice, its hold is the hold of the kept settlements."""
        t = self.replay.tally
        if self.slice_hold is None:
            return t
        return dataclasses.replace(t, hold=self.slice_hold)
