"""The lockstep harness: every native path of the accelerator held to its Python specification,
the same inputs through both, compared after every step (tests/native/test_lockstep.py runs every
registered path on every hostile floor).

A native path is a `NativePath`: its name, the entry points of the extension it holds, how a floor
becomes its inputs, its Python side and its native side (each made fresh for a run: a callable
taking one input and returning that step's result) and how two results are compared.
`lockstep(path, inputs)` steps both sides input by input and stops at the first divergence,
saying which input (its index and repr) and both results. `PATHS` registers every path; a test
checks that every entry point the extension exposes belongs to a registered path, so a native
function without a lockstep fails the suite.

The floors (`FLOORS`) are the hostile floors the suite generates, as a JSON Lines file holds
them: the simulator's floors with bad input (refused records, torn lines, duplicates), delayed
events (gaps, held events, releases), tables recovered from the changelog, other Rules
Submissions with voluntary removals, loaded dice, a drifting shaker and a past-poster, forged,
altered, misbound and untagged events, odd JSON lines (the same event written otherwise,
oversized fields, script in an id, non-ASCII text), the golden floor and the contract corpus.
Every contract event of a floor carries an honest tag of its table's key, but for the hostile
copies the floor itself holds.

The tests need the accelerator installed (the package's build compiles it where cargo is on PATH).
Where it is not, they are skipped, saying why: the Python core, which every other test runs, is
then the only core. The paths the replay takes only where the native code is in use (the quiet
run, the lane, the watch, the Avro reader, the writer) are skipped too under CRAPS_CORE=python.
CI (infra/test.sh) sets CRAPS_CORE=native wherever cargo is present, and with that an accelerator
that is missing, stale or refused is an error at import (craps_streams/rules/__init__.py), so there
these tests can never be skipped."""
from __future__ import annotations

import dataclasses
import io
import json
import random
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

import msgspec
import pytest

from craps_streams.app.shell import state_from_text, state_to_text
from craps_streams.authenticity import KeyRing, TagCheck, signed
from craps_streams.authenticity.canonical import canonical_bytes_general
from craps_streams.authenticity.native_tags import formats
from craps_streams.accelerator.rules import chosen
from craps_streams.rules import ContractError, event_to_record, output_to_record, record_to_event
from craps_streams.accelerator import rules as native
from craps_streams.rules.events import DiceThrown, SurveillanceAlerted, TableOpened, WagerPlaced, WagerSettled
from craps_streams.rules.table import apply as python_apply
from craps_streams.rules.verdict import APPLIED
from craps_streams.sim.floor import Fault, floor_events
from craps_streams.surveillance import HoldWatch
from craps_streams.surveillance.dice_watch import DiceWatch
from craps_streams.surveillance.table_watch import TableWatch, Thresholds
from tests.authenticity.authenticity_keys import ring_for

ROOT = Path(__file__).resolve().parents[2]

requires_accelerator = pytest.mark.skipif(
    native.PROBLEM is not None, reason=f"no native accelerator to compare: {native.PROBLEM}")
# Why a path the replay takes only with the native code in use cannot be compared here.
NOT_IN_USE = None if chosen().native else "the native code is not in use (not installed, or CRAPS_CORE=python)"

_dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


# ---------------------------------------------------------------- the harness


@dataclass(frozen=True)
class Floor:
    """A floor as its paths read it: the lines of its JSON Lines history, the key ring its tags are
    of, whether untagged history is accepted, and (the core) the share of events before which the
    native side's table is replaced by what a worker taking the partition over reads back from the
    changelog."""
    lines: tuple = ()
    ring: KeyRing = field(default_factory=lambda: ring_for([]))
    accept_untagged: bool = False
    recover: float = 0.0


@dataclass(frozen=True)
class NativePath:
    """One native path: `python(floor)` and `native(floor)` make a fresh side (input -> the step's
    result; a side may keep `counts`, a Counter, of what it did), `compare(python, native)` says
    how two results differ (None: they agree), `inputs(floor)` the floor as this path's inputs,
    `entry_points` the names of `craps_streams.accelerator._native` the path holds, `in_use` why it cannot be
    compared (None: it can)."""
    name: str
    entry_points: frozenset
    inputs: Callable[[Floor], list]
    python: Callable[[Floor], Callable[[Any], Any]]
    native: Callable[[Floor], Callable[[Any], Any]]
    compare: Callable[[Any, Any], str | None]
    in_use: Callable[[], str | None] = lambda: native.PROBLEM

    def __repr__(self) -> str:
        return f"NativePath({self.name})"


class Divergence(AssertionError):
    """The first step whose results differ: the input's index and repr, both results."""


def equal(python, native_result) -> str | None:
    """Equal values of the same types (element by element for tuples and lists)."""
    if python != native_result:
        return "different values"
    if type(python) is not type(native_result):
        return f"a {type(native_result).__name__} for a {type(python).__name__}"
    if isinstance(python, (tuple, list)):
        for a, b in zip(python, native_result):
            why = equal(a, b)
            if why:
                return why
    return None


def lockstep(path: NativePath, inputs: Iterable, floor: Floor = Floor()) -> dict:
    """Both sides of `path` over the same inputs, one at a time, their results compared after
    every step; raises `Divergence` at the first that differ. Returns what the run did: `steps`,
    and the `python` and `native` sides' counts."""
    python, nat = path.python(floor), path.native(floor)
    steps = 0
    for i, item in enumerate(inputs):
        expected = python(item)
        got = nat(item)
        why = path.compare(expected, got)
        if why is not None:
            raise Divergence(f"{path.name}: step {i} diverges ({why})\n  input: {_short(item)}\n"
                             f"  python: {_short(expected)}\n  native: {_short(got)}")
        steps += 1
    return {"steps": steps, "python": getattr(python, "counts", Counter()), "native": getattr(nat, "counts", Counter())}


def _short(value, limit: int = 2000) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


# ---------------------------------------------------------------- a floor's lines


def records_of(lines) -> Iterable[dict]:
    """The JSON objects among a floor's lines."""
    for line in lines:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # torn and 2,000-deep lines
            continue
        if type(record) is dict:
            yield record


def events_of(records_or_lines) -> Iterable:
    """Contract records (or a floor's lines, and torn lines) to events, skipping what the contract
    refuses."""
    for r in records_or_lines:
        if type(r) is str:
            try:
                r = json.loads(r)
            except (ValueError, RecursionError):
                continue
        if type(r) is not dict:
            continue
        try:
            yield record_to_event(r)
        except ContractError:
            continue


def delayed(records, seed: int, rate: float = 0.01, span: int = 6):
    """The floor's records with some held back a few places: gaps, held events, releases."""
    rng = random.Random(seed)
    out: list = []
    late: list = []  # (release index, record)
    for r in records:
        out.append(r)
        if type(r) is dict and rng.random() < rate:
            late.append((len(out) + rng.randint(1, span), out.pop()))
        while late and late[0][0] <= len(out):
            out.append(late.pop(0)[1])
    out.extend(r for _, r in late)
    return out


def signed_floor(records, recover: float = 0.0) -> Floor:
    """A floor of the simulator's records (dicts and torn lines) or text lines: every contract
    event signed by its table's key (`ring_for` the floor's tables), the rest as it is."""
    parsed = []
    for r in records:
        if type(r) is str:
            try:
                record = json.loads(r)
            except (ValueError, RecursionError):
                record = None
            parsed.append((r, record if type(record) is dict else None))
        else:
            parsed.append((None, r))
    events = {}
    for n, (_, record) in enumerate(parsed):
        if record is not None:
            try:
                events[n] = record_to_event(record)
            except ContractError:
                pass
    ring = ring_for(sorted({e.table_id for e in events.values()}))
    lines = []
    for n, (text, record) in enumerate(parsed):
        if n in events:
            e = events[n]
            lines.append(_dumps(event_to_record(signed(ring.get(f"k-{e.table_id}"), e))))
        else:
            lines.append(text if text is not None else _dumps(record) if type(record) is dict else str(record))
    return Floor(tuple(lines), ring, False, recover)


def history(seed: int, accept_untagged: bool, tables: int = 5, hours: float = 2.0) -> tuple[list, object]:
    """A floor's items as `feed_batch` takes them, signed, with hostile copies mixed in before the
    genuine events (as an attacker would send them: the genuine event still comes): every 29th
    event's copy with its tag altered, every 53rd's signed by another table's key, every 67th's with
    another event's tag; every 41st event untagged (in place where the replay accepts untagged
    history, else as a copy before it); records the contract refuses and torn lines as
    `(record, where)`; a few events swapped with their successors (held, then released) and one
    lost (a gap that table waits on)."""
    rng = random.Random(seed)
    records = list(floor_events(tables, hours, seed, bad_rate=0.03))
    ring = ring_for([f"T{n:03d}" for n in range(1, tables + 1)])
    keys = {k.key_id: k for k in ring.keys}
    items: list = []
    previous = None
    for n, r in enumerate(records):
        try:
            if type(r) is not dict:
                raise ContractError("malformed", "not a JSON object")
            event = record_to_event(r)
        except ContractError:
            items.append((r, f"floor:{n}"))
            continue
        own = keys.get(f"k-{event.table_id}")
        if own is None:
            items.append(event)
            continue
        tagged = signed(own, event)
        if n % 29 == 0:
            items.append(msgspec.structs.replace(tagged, tag=("A" if tagged.tag[0] != "A" else "B") + tagged.tag[1:]))
        elif n % 53 == 0:
            items.append(signed(keys[f"k-T{(int(event.table_id[1:]) % tables) + 1:03d}"], event))
        elif n % 67 == 0 and previous is not None:
            items.append(msgspec.structs.replace(tagged, tag=previous.tag))
        elif n % 41 == 0:
            if accept_untagged:
                tagged = event  # neither key id nor tag, in its place
            else:
                items.append(event)
        previous = tagged
        items.append(tagged)
    for _ in range(12):
        k = rng.randrange(len(items) // 10, len(items) - 1)
        items[k], items[k + 1] = items[k + 1], items[k]
    del items[len(items) * 9 // 10]
    return items, ring


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


def history_floor(seed: int, accept_untagged: bool, odd: bool) -> Floor:
    """`history`'s items as JSON lines; with `odd`, every 11th tagged wager and every 13th tagged
    throw preceded by its odd lines, and a blank line in the middle."""
    items, ring = history(seed, accept_untagged)
    lines: list[str] = []
    wagers = throws = 0
    for item in items:
        if type(item) is tuple:
            record = item[0]
            lines.append(record if type(record) is str else _dumps(record))
            continue
        record = event_to_record(item)
        if odd and type(item) is WagerPlaced and item.tag is not None:
            wagers += 1
            if wagers % 11 == 0:
                lines += odd_lines(record)
        if odd and type(item) is DiceThrown and item.tag is not None:
            throws += 1
            if throws % 13 == 0:
                lines += odd_throws(record)
        lines.append(_dumps(record))
    if odd:
        lines.insert(len(lines) // 2, "")  # a blank line, numbered as the plain path numbers it
    return Floor(tuple(lines), ring, accept_untagged)


def _corpus() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from tests.golden.contract_corpus import corpus_lines

    return corpus_lines()


FAULTS = {"T001": Fault.parse("loaded-dice:4/36"), "T002": Fault.parse("shaker-drift:0.2"),
          "T003": Fault.parse("past-posting:16")}

RULES = [
    {"hot_roller_come_out_seven": "pay_by_table", "bonus_paytable": "alternate", "hot_roller_paytable": "B"},
    {"surrender": {"fire": "push", "hot_roller": "push", "all_small": "push"}, "large_win_alert_cents": 5000},
    {"limits": {"fire": [200, 400], "hot_roller": [500, 1000], "all_tall": [100, 2000]}},
    {"fire_custom": {"3": 5, "4": 30, "5": 300, "6": 2000}, "large_win_alert_cents": 0},
    {"large_win_alert_cents": 1},
]

# The hostile floors, by name: how each is made (all on fixed seeds).
FLOOR_MAKERS: dict[str, Callable[[], Floor]] = {
    **{f"bad-input-{seed}": (lambda seed=seed: signed_floor(floor_events(8, 3, seed, bad_rate=0.05)))
       for seed in (1, 2, 3)},
    "delayed": lambda: signed_floor(delayed(list(floor_events(6, 3, 7, bad_rate=0.02)), seed=7)),
    "recovered": lambda: signed_floor(delayed(list(floor_events(8, 3, 2, bad_rate=0.05)), seed=2, rate=0.005),
                                      recover=0.3),
    **{f"rules-{n}": (lambda r=r: signed_floor(floor_events(6, 2, 5, bad_rate=0.03, rules=r, voluntary_rate=0.05)))
       for n, r in enumerate(RULES)},
    "faults": lambda: signed_floor(floor_events(4, 6.0, 7, bad_rate=0.02, faults=FAULTS)),
    "faults-busy": lambda: signed_floor(floor_events(5, 3.0, 11, bad_rate=0.02, faults=FAULTS)),
    "forged-tags": lambda: history_floor(3, False, odd=False),
    "untagged-accepted": lambda: history_floor(8, True, odd=False),
    "untagged-accepted-2": lambda: history_floor(21, True, odd=False),
    "odd-lines": lambda: history_floor(4, False, odd=True),
    "odd-lines-untagged": lambda: history_floor(9, True, odd=True),
    # tests/golden/test_replay_golden.py's floor (simulate --tables 6 --hours 1 --seed 11 --bad-rate 0.05)
    "golden": lambda: signed_floor(floor_events(6, 1, 11, bad_rate=0.05)),
    "contract-corpus": lambda: signed_floor(_corpus()),
}
FLOORS = tuple(FLOOR_MAKERS)


@lru_cache(maxsize=None)
def floor_of(name: str) -> Floor:
    return FLOOR_MAKERS[name]()


# ---------------------------------------------------------------- the rules core


class CoreSide:
    """A core settling each event on its own tables, as the worker keeps them; the step's result:
    (verdict, outputs, their types, their records as JSON text, the table's record as JSON text or
    None). The native side's table is, on a fixed draw, first read back from the changelog."""

    def __init__(self, apply, recover: float = 0.0, is_native: bool = False):
        self.apply, self.recover, self.is_native = apply, recover, is_native
        self.tables: dict = {}
        self.draw = random.Random(15).random
        self.counts = Counter()

    def __call__(self, e):
        before = self.tables.get(e.table_id)
        if self.recover and before is not None and self.draw() < self.recover:
            before = state_from_text(state_to_text(before))[0]
            self.counts["recovered"] += 1
        fallbacks = sum(native.FALLBACKS.values())
        state, out, verdict = self.apply(before, e)
        if self.is_native and sum(native.FALLBACKS.values()) == fallbacks:
            self.counts["native"] += 1
        self.counts[verdict] += 1
        self.counts["outputs"] += len(out)
        if state is not None:
            self.tables[e.table_id] = state
        return (verdict, out, [type(o) for o in out], [json.dumps(output_to_record(o)) for o in out],
                None if state is None else json.dumps(state.to_record()))


def _compare_core(python, native_result) -> str | None:
    if python[0] is not native_result[0]:  # the same verdict object
        return "verdict"
    return equal(python[1:], native_result[1:])


CORE_PATH = NativePath(
    "core", frozenset({"init", "apply", "Table"}),
    inputs=lambda floor: list(events_of(floor.lines)),
    python=lambda floor: CoreSide(python_apply),
    native=lambda floor: CoreSide(native.apply, floor.recover, is_native=True),
    compare=_compare_core,
)


# ---------------------------------------------------------------- the surveillance watch

# Low enough that every kind of alert fires many times (and re-arms) on a few hours of play.
TOUCHY = Thresholds(tail_alert=0.2, check_z=0.0, position_alert=1e-2, dice=DiceWatch(4.0, 5.0, 5.0))


def normal(dump) -> tuple:
    """A watch's dump with its lines in a fixed order (the native positions are a hash map)."""
    dice, holds, positions, prev, last, raised = dump
    return (tuple(map(lambda v: tuple(v) if isinstance(v, list) else v, dice)),
            sorted((h[0], h[1], h[2:5], tuple(h[5]), h[6:]) for h in holds),
            sorted((p[:5], tuple(p[5]), p[6:]) for p in positions), prev, last, sorted(raised))


class WatchSide:
    """`settle_event` with a hold watch (the Python `TableWatch` or the native watch); the step's
    result: (the outputs, the table's watch as a normalized dump after a throw or an opening, the
    table's hold book as its record)."""

    def __init__(self, thresholds: Thresholds, native_watch: bool):
        from craps_streams.surveillance.native_watch import watch_factory

        self.watch = HoldWatch(thresholds, table_watch=watch_factory(thresholds)) if native_watch \
            else HoldWatch(thresholds)
        self.tables: dict = {}
        self.books: dict = {}
        self.counts = Counter()

    def __call__(self, event):
        from craps_streams.settle.step import settle_event
        from craps_streams.surveillance.native_watch import dump_of

        _, _, out = settle_event(self.tables, self.books, self.watch, event, apply=chosen().apply)
        for o in out:
            if type(o) is SurveillanceAlerted:
                self.counts[o.alert] += 1
        dump = None
        if type(event) in (DiceThrown, TableOpened) and event.table_id in self.books:
            watch = self.books[event.table_id].watch
            if type(watch) is TableWatch:
                self.counts["python watches"] += 1  # on the native side: a watch that declined
                dump = normal(dump_of(watch))
            else:
                dump = normal(watch.dump())
                if type(event) is DiceThrown and any(type(o) is WagerSettled for o in out):
                    self.counts["booked natively"] += 1  # the throw's settlements, by `book_observe`
        # The table's hold book: booked by `HoldWatch.watch` on the Python side, by the native
        # watch's `book_observe` (a throw's settlements) on the native side.
        book = self.books.get(event.table_id)
        return out, [output_to_record(o) for o in out], dump, None if book is None else book.to_record()


def _watch_path(name: str, thresholds: Thresholds) -> NativePath:
    return NativePath(
        name, frozenset({"WatchConfig", "Watch"}),
        inputs=lambda floor: list(events_of(floor.lines)),
        python=lambda floor: WatchSide(thresholds, native_watch=False),
        native=lambda floor: WatchSide(thresholds, native_watch=True),
        compare=equal,
        in_use=lambda: NOT_IN_USE,
    )


WATCH_PATH = _watch_path("watch", Thresholds())
TOUCHY_WATCH_PATH = _watch_path("watch-touchy", TOUCHY)


# ---------------------------------------------------------------- the tag check


def native_keys(ring: KeyRing):
    return native._native.TagKeys([(k.key_id, k.secret, tuple(k.tables), k.not_before, k.not_after)
                                   for k in ring.keys], formats())


class TagSide:
    """The tag check of each event; the step's result: (authentic, the canonical bytes, whether
    the event names a key of the ring). The reference: `TagCheck.problem_plain` and
    canonical.py; the native keys: `authentic` and `canonical_bytes` (None: left to Python)."""

    def __init__(self, ring: KeyRing, is_native: bool):
        self.check = native_keys(ring) if is_native else TagCheck(ring)
        self.key_ids = {k.key_id for k in ring.keys}
        self.is_native = is_native
        self.counts = Counter()

    def __call__(self, event):
        known = event.key_id in self.key_ids
        if self.is_native:
            says, written = self.check.authentic(event), self.check.canonical_bytes(event)
            self.counts["written"] += written is not None
        else:
            says, written = self.check.problem_plain(event) is None, canonical_bytes_general(event)
            self.counts["opened"] += says and type(event) is TableOpened
        self.counts["authentic"] += says
        return says, written, known


def _compare_tags(python, native_result) -> str | None:
    """Never authentic where the reference says no; the canonical bytes the native code writes are
    the reference's; where it writes them and the key is the ring's, the reference's answer."""
    (reference, expected, _), (says, written, known) = python, native_result
    if says and not reference:
        return "authentic natively where the reference says no"
    if written is not None and written != expected:
        return "other canonical bytes"
    if written is not None and known and says != reference:
        return "another answer where the native check wrote the bytes"
    return None


def tag_inputs(floor: Floor) -> list:
    """The floor's events, and before every 7th a copy altered after signing (a forgery)."""
    out = []
    for n, e in enumerate(events_of(floor.lines)):
        if n % 7 == 0 and e.tag is not None:
            out.append(msgspec.structs.replace(e, ts=e.ts + 1))
        out.append(e)
    return out


TAGS_PATH = NativePath(
    "tags", frozenset({"TagKeys"}),
    inputs=tag_inputs,
    python=lambda floor: TagSide(floor.ring, is_native=False),
    native=lambda floor: TagSide(floor.ring, is_native=True),
    compare=_compare_tags,
)


# ---------------------------------------------------------------- the replay's quiet run and lane

# Low thresholds, so that the surveillance alerts too (the runs must not change what it sees).
WATCH = HoldWatch(Thresholds(tail_alert=0.05, check_z=0.5, position_alert=0.3, dice=DiceWatch(4.0, 6.0, 6.0)))


def counted(run, ran: list):
    """`run` (a quiet run or the lane) counting into `ran`: [events or lines it settled, throws it
    applied natively (finished in the run, or handed back with their outputs), throws it left to
    the Python core, throws the run finished itself]."""
    def counting(tables, books, chunk, start, *out, **kw):
        stop, applied, untagged, thrown = run(tables, books, chunk, start, *out, **kw)
        ran[0] += applied
        if out or kw.get("out") is not None:  # given `out`: the throws among what it settled, it finished
            finished = sum(1 for x in chunk[start:stop] if type(x) is DiceThrown or (type(x) is str and '"DiceThrown"' in x))
            ran[1] += finished
            ran[3] += finished
        if thrown is not None:
            ran[1 if thrown[1] is not None else 2] += 1
        return stop, applied, untagged, thrown

    return counting


class ReplaySide:
    """A replay fed the floor in batches: of items (events, and `(record, where)` for the rest) or
    of JSON lines (`(first line number, lines)`); with the native run (`quiet`) or lane (`lane`),
    or the plain path, `settle_event` alone. The step's result: (the batch's outputs as records,
    the tally so far, the untagged count, every table's record)."""

    def __init__(self, floor: Floor, quiet: bool = False, lane: bool = False):
        from craps_streams.replay.engine import Replay

        self.replay = Replay(WATCH, tags=TagCheck(floor.ring, accept_untagged=floor.accept_untagged))
        self.ran = [0, 0, 0, 0]
        for name, on in (("_quiet", quiet), ("_lane", lane)):
            if on:
                assert getattr(self.replay, name) is not None, f"no native {name[1:]} run to compare"
                setattr(self.replay, name, counted(getattr(self.replay, name), self.ran))
            else:
                setattr(self.replay, name, None)
        self.lane = lane
        self.known: set = set()
        self.alerts: Counter = Counter()

    @property
    def counts(self) -> Counter:
        """What the side met: quiet events or lines the native run settled, throws it applied and
        left to the Python core; the tally's untagged events, duplicates and rejections by reason
        (`rejected <reason>`); the alerts by name (`alert <name>`)."""
        tally = self.replay.tally
        return Counter(settled=self.ran[0], throws_native=self.ran[1], throws_python=self.ran[2],
                       throws_finished=self.ran[3],
                       untagged=tally.untagged, duplicates=tally.duplicates,
                       **{f"rejected {r}": n for r, n in tally.rejections_by_reason.items()},
                       **{f"alert {a}": n for a, n in self.alerts.items()})

    def __call__(self, batch):
        from craps_streams.replay.jsonread import LineBatch

        if type(batch) is tuple:
            batch = LineBatch(list(batch[1]), batch[0], "f", self.known)
            if not self.lane:
                batch = batch.items()
        outputs = self.replay.feed_batch(batch) if len(batch) else []
        self.alerts.update(o.alert for o in outputs if type(o) is SurveillanceAlerted)
        tally = self.replay.tally
        return ([output_to_record(o) for o in outputs], dataclasses.asdict(tally), tally.untagged,
                {t: s.to_record() for t, s in self.replay.tables.items()})


def item_batches(floor: Floor, size: int = 97) -> list:
    """The floor's lines as `feed_batch` items: the contract's event, else `(record, where)`."""
    items = []
    for n, line in enumerate(floor.lines, 1):
        if not line:
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            items.append((line, f"f:{n}"))
            continue
        try:
            items.append(record_to_event(record) if type(record) is dict else None)
        except ContractError:
            items.append((record, f"f:{n}"))
        if items[-1] is None:
            items[-1] = (record, f"f:{n}")
    return [items[k:k + size] for k in range(0, len(items), size)]


def line_batches_of(floor: Floor, size: int = 89) -> list:
    """The floor's lines in batches, each `(its first line's number, its lines)`."""
    lines = [line + "\n" for line in floor.lines]
    return [(k + 1, tuple(lines[k:k + size])) for k in range(0, len(lines), size)]


QUIET_PATH = NativePath(
    "quiet-run", frozenset({"settle_quiet"}),
    inputs=item_batches,
    python=lambda floor: ReplaySide(floor),
    native=lambda floor: ReplaySide(floor, quiet=True),
    compare=equal,
    in_use=lambda: NOT_IN_USE,
)

LANE_PATH = NativePath(
    "json-lane", frozenset({"settle_lines"}),
    inputs=line_batches_of,
    python=lambda floor: ReplaySide(floor),
    native=lambda floor: ReplaySide(floor, lane=True),
    compare=equal,
    in_use=lambda: NOT_IN_USE,
)


class KafkaMessage:
    """A table event as the worker's consumer hands it over: its value, offset and topic."""

    def __init__(self, value: bytes, offset: int):
        self.value, self.offset, self.topic = value, offset, "table-events"


def message_batches(floor: Floor, size: int = 97) -> list:
    """The floor's lines as the worker reads them, Avro messages in batches: each line's record
    encoded (`encode_event`), or the line's own bytes when it is no record the codec encodes (the
    worker rejects those as undecodable, raw bytes kept)."""
    from craps_streams.codec import encode_event

    values = []
    for line in floor.lines:
        if not line:
            continue
        try:
            values.append(encode_event(json.loads(line)))
        except Exception:  # not JSON, not a record, not encodable: sent as the raw line
            values.append(line.encode("utf-8", "surrogatepass"))
    messages = [KafkaMessage(v, offset) for offset, v in enumerate(values)]
    return [messages[k:k + size] for k in range(0, len(messages), size)]


class ShellSide:
    """The worker's shell settling the floor's messages a batch at a time (`items_of`,
    `handle_batch`): with its quiet runs (counted: `settled`), or without (`settle_event` alone).
    The step's result: the batch's messages by topic (key, Avro bytes), the tables it changed in
    order, its verdicts counted, each message not applied (its verdict, table and messages), and
    the stored record of every table it changed."""

    def __init__(self, floor: Floor, quiet: bool):
        from craps_streams.app.shell import SettlementShell

        self.shell = SettlementShell(lambda table_id: None, WATCH,
                                     tags=TagCheck(floor.ring, accept_untagged=floor.accept_untagged))
        self.ran = [0, 0, 0, 0]
        if quiet:
            assert self.shell.quiet is not None, "no native quiet run to compare"
            self.shell.quiet = counted(self.shell.quiet, self.ran)
        else:
            self.shell.quiet = None
        self.counts = Counter()

    def __call__(self, batch: list):
        shell = self.shell
        settled = shell.handle_batch(shell.items_of(batch, 0, {}))
        self.counts["settled"] = self.ran[0]
        verdicts = Counter(h.verdict for h in settled.handled) + Counter({APPLIED: settled.quiet})
        self.counts.update(verdicts)
        # A quiet run only applies: every other answer is a Handled on both sides, in order.
        rest = [(h.verdict, h.table_id, list(h.messages)) for h in settled.handled if h.verdict is not APPLIED]
        return (settled.records, list(settled.changed), dict(sorted(verdicts.items())), rest,
                {t: shell.stored_text(t) for t in settled.changed})


SHELL_PATH = NativePath(
    "worker-batch", frozenset({"settle_quiet"}),
    inputs=message_batches,
    python=lambda floor: ShellSide(floor, quiet=False),
    native=lambda floor: ShellSide(floor, quiet=True),
    compare=equal,
    in_use=lambda: NOT_IN_USE,
)


# ---------------------------------------------------------------- the Avro block reader


class AvroSide:
    """A container's bytes read by `fastread.read_event_batches`: natively (the native block reader
    where the native code is in use, counting the blocks it reads itself) or with `native=False`
    (the generated decoder, itself held to fastavro's datums in tests/replay/test_fast_read.py).
    The step's result: the items, with their types, or "CodecError"."""

    def __init__(self, is_native: bool):
        self.is_native = is_native
        self.dir = tempfile.TemporaryDirectory(prefix="lockstep-avro-")
        self.counts = Counter()

    def __call__(self, data: bytes):
        from craps_streams.codec import CodecError, default_codec
        from craps_streams.codec import fastread

        path = Path(self.dir.name) / "container.avro"
        path.write_bytes(data)
        real = fastread._setup(default_codec())[2]
        counts = self.counts

        class Counting:
            def decode(self, *args):
                items = real.decode(*args)
                counts["blocks read natively" if items is not None else "blocks declined"] += 1
                return items

        if self.is_native:
            assert real, "the native code is in use but fastread has no native reader"
            fastread._NATIVE = Counting()
        try:
            items = [x for batch in read(path, native=self.is_native) for x in batch]
        except CodecError:
            return "CodecError"
        finally:
            fastread._NATIVE = real
        return items, [type(x) for x in items]


def read(path, native: bool):
    from craps_streams.codec.fastread import read_event_batches

    return read_event_batches(path, lambda n: f"f:{n}", native=native)


def container(records: list, codec: str = "null", sync_interval: int = 64_000) -> bytes:
    from craps_streams.codec import write_container

    buf = io.BytesIO()
    write_container(buf, records, codec=codec, sync_interval=sync_interval)
    return buf.getvalue()


def avro_inputs(floor: Floor) -> list:
    """The floor's records the Avro schema takes, as containers of 400 (one block, many blocks,
    deflated), and each again with three bytes changed at pinned places after its header."""
    from craps_streams.codec import CodecError, default_codec

    codec = default_codec()
    records = []
    for r in records_of(floor.lines):
        try:
            codec.event_datum(r)
            json.dumps(r, ensure_ascii=False).encode()  # lone surrogates: no Avro string holds them
        except (CodecError, KeyError, TypeError, ValueError):
            continue
        records.append(r)
    rng = random.Random(len(records))
    out = []
    for n, k in enumerate(range(0, len(records), 400)):
        data = container(records[k:k + 400], *[("null", 64_000), ("null", 300), ("deflate", 2_000)][n % 3])
        out.append(data)
        changed = bytearray(data)
        for _ in range(3):
            at = rng.randrange(len(data) // 4, len(data))
            changed[at] ^= rng.choice((0x80, 0x01, 0xFF))
        out.append(bytes(changed))
    return out


AVRO_PATH = NativePath(
    "avro-reader", frozenset({"BlockReader"}),
    inputs=avro_inputs,
    python=lambda floor: AvroSide(is_native=False),
    native=lambda floor: AvroSide(is_native=True),
    compare=equal,
    in_use=lambda: NOT_IN_USE,
)


# ---------------------------------------------------------------- the output writer


class WriterSide:
    """A batch of outputs as JSON lines: the json module's text of each output's record
    (`run._general_line`), or the native writer's text (None: the batch left to msgspec)."""

    def __init__(self, is_native: bool):
        from craps_streams.replay import run

        self.lines = run._native_lines().lines if is_native else None
        assert self.lines is not None or not is_native, "the native code is in use but there is no native writer"
        self.counts = Counter()

    def __call__(self, batch: list):
        from craps_streams.replay.run import _general_line

        if self.lines is None:
            return "".join(_general_line(o) + "\n" for o in batch)
        text = self.lines(batch)
        self.counts["written" if text is not None else "left"] += 1
        return text


def outputs_per_event(floor: Floor) -> list:
    """The outputs of settling the floor (the Python core), a list for each event that gave any."""
    tables: dict = {}
    per_event = []
    for e in events_of(floor.lines):
        state, out, _ = python_apply(tables.get(e.table_id), e)
        if state is not None:
            tables[e.table_id] = state
        if out:
            per_event.append(out)
    return per_event


def writer_inputs(floor: Floor) -> list:
    """The outputs of settling the floor (the Python core): each event's, and in batches of 64."""
    per_event = outputs_per_event(floor)
    outputs = [o for out in per_event for o in out]
    return per_event + [outputs[k:k + 64] for k in range(0, len(outputs), 64)]


WRITER_PATH = NativePath(
    "writer", frozenset({"LineWriter"}),
    inputs=writer_inputs,
    python=lambda floor: WriterSide(is_native=False),
    native=lambda floor: WriterSide(is_native=True),
    compare=lambda python, text: None if text is None or text == python else "other text",
    in_use=lambda: NOT_IN_USE,
)


# ---------------------------------------------------------------- the worker's Avro messages


class MessageSide:
    """A batch of outputs as the worker's messages, (topic, key, Avro message) each: the plain
    path's (`encode_output(output_to_record(o))`) or the native writer's (craps_streams/codec/fastwrite.py),
    which leaves to the plain path what it is not sure of (counted: `written natively`)."""

    def __init__(self, is_native: bool):
        from craps_streams.app.shell import TOPIC_OF
        from craps_streams.codec.fastwrite import _native_writer, output_writer

        self.raw = _native_writer(TOPIC_OF) if is_native else None
        assert self.raw is not None or not is_native, "the native code is in use but there is no native message writer"
        self.write = output_writer(TOPIC_OF, native=is_native)
        self.counts = Counter()

    def __call__(self, batch: list):
        if self.raw is not None and batch:
            self.counts["written natively"] += sum(m is not None for m in self.raw(list(batch)))
        return self.write(batch)


MESSAGES_PATH = NativePath(
    "avro-writer", frozenset({"OutputWriter"}),
    inputs=writer_inputs,
    python=lambda floor: MessageSide(is_native=False),
    native=lambda floor: MessageSide(is_native=True),
    compare=equal,
    in_use=lambda: NOT_IN_USE,
)



# ---------------------------------------------------------------- the ledger's reading of the outputs


class OutputReaderSide:
    """A batch of the worker's Avro messages as the records the ledger reads of them: the plain
    path's (`decode_output`) or the native reader's (craps_streams/codec/fastoutput.py), which leaves
    to the plain path what it is not sure of (counted: `read natively`); a refused message as its
    CodecError's text."""

    def __init__(self, is_native: bool):
        from craps_streams.accelerator.avro import output_reader as native_reader
        from craps_streams.codec import decode_output
        from craps_streams.codec.fastoutput import _formats, output_reader
        from craps_streams.codec.wire import default_codec

        self.raw = native_reader(_formats(default_codec())) if is_native else None
        assert self.raw is not None or not is_native, "the native code is in use but there is no native output reader"
        self.decode = output_reader(native=True) if is_native else decode_output
        self.counts = Counter()

    def __call__(self, batch: list):
        from craps_streams.codec import CodecError

        read = []
        for message in batch:
            if self.raw is not None:
                self.counts["read natively"] += self.raw(message) is not None
            try:
                read.append(self.decode(message))
            except CodecError as e:
                read.append(("CodecError", str(e)))
        return read


def reader_inputs(floor: Floor) -> list:
    """The floor's outputs as the worker's messages, in batches of 64, and after them the first
    messages damaged: cut short by one byte, one byte longer, their last byte changed."""
    from craps_streams.codec import encode_output

    messages = [encode_output(output_to_record(o)) for batch in writer_inputs(floor) if len(batch) < 64
                for o in batch]
    damaged = [bad for m in messages[:300] for bad in (m[:-1], m + b"\x00", m[:-1] + bytes([m[-1] ^ 0x41]))]
    return [messages[k:k + 64] for k in range(0, len(messages), 64)] + \
        [damaged[k:k + 64] for k in range(0, len(damaged), 64)]


OUTPUT_READER_PATH = NativePath(
    "avro-output-reader", frozenset({"OutputReader"}),
    inputs=reader_inputs,
    python=lambda floor: OutputReaderSide(is_native=False),
    native=lambda floor: OutputReaderSide(is_native=True),
    compare=equal,
    in_use=lambda: NOT_IN_USE,
)

# ---------------------------------------------------------------- the Chernoff minimum


def tail_inputs(floor: Floor) -> list:
    """The Chernoff minimums the surveillance asks for while settling the floor under touchy
    thresholds: `(distribution, (stake, decisions) pairs, h, scale)`, as `chernoff_lower_tail`
    passes them."""
    from craps_streams.settle.step import settle_event
    from craps_streams.surveillance import tails

    calls = []
    minimum = tails._minimum or tails._chosen_minimum()

    def recording(dist, items, h, scale):
        calls.append((tuple(dist), tuple(map(tuple, items)), h, scale))
        return minimum(dist, items, h, scale)

    tails._minimum = recording
    try:
        watch, tables, books = HoldWatch(TOUCHY), {}, {}
        for e in events_of(floor.lines):
            settle_event(tables, books, watch, e, apply=chosen().apply)
    finally:
        tails._minimum = minimum
    return calls


class TailSide:
    """One Chernoff minimum: `tails.chernoff_minimum` or native/src/tails.rs; the double as hex
    (bit for bit: an alert and its message could differ otherwise)."""

    def __init__(self, is_native: bool):
        from craps_streams.surveillance.tails import chernoff_minimum

        self.minimum = native._native.chernoff_minimum if is_native else chernoff_minimum
        self.counts = Counter()

    def __call__(self, call):
        dist, items, h, scale = call
        value = self.minimum(dist, list(items), h, scale)
        self.counts["below one"] += value < 0
        return value.hex()


TAILS_PATH = NativePath(
    "chernoff-minimum", frozenset({"chernoff_minimum"}),
    inputs=tail_inputs,
    python=lambda floor: TailSide(is_native=False),
    native=lambda floor: TailSide(is_native=True),
    compare=equal,
)


# ---------------------------------------------------------------- a report's books

# Half-hour shifts of a UTC gaming day: a floor's first hours span them; the report is of the third
# (01:00 to 01:30), so its books have lines before it (the year to date) and lines after it are
# not fed.
REPORT_CALENDAR_SHIFTS = (("a", "00:00"), ("b", "00:30"), ("c", "01:00"), ("d", "01:30"))


def report_books(rp) -> tuple:
    """A report pass's books so far as plain data, the same shape whichever keeps them: (lines,
    before, outcomes, hourly, series) as `ReportBook.rows` gives them, then the ids of the alerts
    and rejections kept."""
    c = rp.c
    if rp.book is not None:
        lines, before, outcomes, hourly, series = rp.book.rows()
        hourly = [(table, list(memoryview(cents).cast("q")) if type(cents) is bytes else cents)
                  for table, cents in hourly]
    else:
        def rows(books: dict) -> list:
            return [(key, dataclasses.astuple(line.money), (line.decisions, line.dice_handle_cents,
                                                            line.dice_house_win_cents), dict(line.stakes))
                    for key, line in books.items()]

        lines, before = rows(c.lines), rows(c.before)
        outcomes, hourly = list(c.outcomes.items()), [(table, list(cents)) for table, cents in c.hourly.items()]
        series = [(table, [list(p) for p in points]) for table, points in c.series.items()]
    noted = c.noted
    return (lines, before, outcomes, hourly, series, [o.id for o in noted.alerts.items],
            [o.id for o in noted.rejections.items + noted.undated.items])


class ReportSide:
    """A report's pass (craps_streams/report/build.py `ReportPass`) fed the floor's JSON lines a
    batch at a time, its books kept by the Python code (`_book`: the specification) or natively
    (`ReportBook`). The step's result: `report_books` after the batch."""

    def __init__(self, floor: Floor, native_books: bool):
        from datetime import time as clock

        from craps_streams.report import GamingCalendar, Period, ReportSettings
        from craps_streams.report.build import ReportPass
        from craps_streams.sim.floor import FLOOR_EPOCH_MS

        cal = GamingCalendar("UTC", clock(0, 0), tuple((n, clock(*map(int, t.split(":"))))
                                                      for n, t in REPORT_CALENDAR_SHIFTS))
        day = cal.gaming_day(FLOOR_EPOCH_MS)
        self.rp = ReportPass(ReportSettings(cal, Period(day, day, "c")),
                             TagCheck(floor.ring, accept_untagged=floor.accept_untagged), watch=WATCH,
                             native_books=native_books)
        assert (self.rp.book is not None) == native_books, "no native books to compare"
        self.known: set = set()
        self.counts = Counter()

    def __call__(self, batch):
        from craps_streams.replay.jsonread import LineBatch

        self.rp.feed([LineBatch(list(batch[1]), batch[0], "f", self.known)])
        books = report_books(self.rp)
        self.counts = Counter(lines=len(books[0]), before=len(books[1]), series=len(books[4]))
        return books


REPORT_PATH = NativePath(
    "report-books", frozenset({"ReportBook"}),
    inputs=line_batches_of,
    python=lambda floor: ReportSide(floor, native_books=False),
    native=lambda floor: ReportSide(floor, native_books=True),
    compare=equal,
    in_use=lambda: NOT_IN_USE,
)


# ---------------------------------------------------------------- the floor's seq walk

class SeqWalkSide:
    """`archive verify`'s seq walk over a floor's item batches, by the rule
    (craps_streams/archive/verify.py `walk_seqs`) or with its native runs (`seq_walk`). The step's
    result: the batch's findings and every table's last seq after it."""

    def __init__(self, is_native: bool):
        from craps_streams.archive.verify import seq_walk, walk_seqs

        self.walk = seq_walk() if is_native else walk_seqs
        assert (self.walk is not walk_seqs) == is_native, "no native walk to compare"
        self.last: dict = {}
        self.counts = Counter()

    def __call__(self, items):
        found = self.walk(items, self.last)
        self.counts.update(f[1] for f in found)
        return found, sorted(self.last.items())


def seq_batches(floor: Floor) -> list:
    """The floor's items in batches (`item_batches`), then the same again with every third event's
    seq moved (back two, on by three): duplicates, gaps and tables beyond 64-bit seqs."""
    batches = item_batches(floor)
    moved = []
    for batch in batches:
        out = []
        for k, item in enumerate(batch):
            if type(item) is not tuple and k % 3 == 0:
                item = msgspec.structs.replace(item, seq=item.seq + (-2, 3, 2 ** 63)[k % 9 // 3])
            out.append(item)
        moved.append(out)
    return batches + moved


SEQS_PATH = NativePath(
    "seq-walk", frozenset({"walk_seqs"}),
    inputs=seq_batches,
    python=lambda floor: SeqWalkSide(is_native=False),
    native=lambda floor: SeqWalkSide(is_native=True),
    compare=equal,
    in_use=lambda: NOT_IN_USE,
)


# ---------------------------------------------------------------- the audit's distinct ids

class DistinctSide:
    """The audit's check that the settlements carry distinct ids (craps_streams/replay/agreement.py
    `DistinctIds`) over batches of settlements, by the rule (`add_distinct`) or with its native
    runs (native/src/distinct.rs). The step's result: the batch's answer and every table's kept
    seq and ids after it."""

    def __init__(self, is_native: bool):
        from craps_streams.replay.agreement import DistinctIds

        self.ids = DistinctIds(native=is_native)
        assert (self.ids.run is not None) == is_native, "no native check to compare"
        self.counts = Counter()
        if is_native:
            run = self.ids.run

            def counted_run(settled, start, latest):
                stop, distinct = run(settled, start, latest)
                self.counts["checked natively"] += stop - start
                return stop, distinct

            self.ids.run = counted_run

    def __call__(self, settled):
        answer = self.ids.add(settled)
        self.counts[answer] += 1
        return answer, sorted((t, seq, sorted(ids)) for t, (seq, ids) in self.ids.latest.items())


def settlement_batches(floor: Floor, size: int = 53) -> list:
    """The floor's settlements (`outputs_per_event`, the first 2,000; the golden floor's where it
    settles none) in batches; then the same again with every seventh repeated in the next batch,
    every eleventh's seq moved back by one and every nineteenth's past 64 bits, and one output of
    another kind (a marker, a rejection) put among each batch's settlements."""
    settled, others = [], []
    for out in outputs_per_event(floor):
        for o in out:
            (settled if type(o) is WagerSettled else others).append(o)
    if not settled and floor is not floor_of("golden"):  # a floor that settles nothing (the contract corpus)
        return settlement_batches(floor_of("golden"), size)
    settled = settled[:2000]
    batches = [settled[k:k + size] for k in range(0, len(settled), size)]
    changed, carried = [], []
    for b, batch in enumerate(batches):
        out = list(carried)
        carried = []
        for k, o in enumerate(batch):
            if k % 7 == 3:
                carried.append(o)
            if k % 11 == 5:
                o = msgspec.structs.replace(o, seq=o.seq - 1)
            elif k % 19 == 7:
                o = msgspec.structs.replace(o, seq=o.seq + 2 ** 63)
            out.append(o)
        if others:
            out.insert(len(out) // 2, others[b % len(others)])
        changed.append(out)
    return batches + changed


DISTINCT_PATH = NativePath(
    "distinct-ids", frozenset({"distinct_ids"}),
    inputs=settlement_batches,
    python=lambda floor: DistinctSide(is_native=False),
    native=lambda floor: DistinctSide(is_native=True),
    compare=equal,
    in_use=lambda: NOT_IN_USE,
)


# ---------------------------------------------------------------- the registry

PATHS: dict[str, NativePath] = {p.name: p for p in (
    CORE_PATH, WATCH_PATH, TOUCHY_WATCH_PATH, TAGS_PATH, QUIET_PATH, SHELL_PATH, LANE_PATH, AVRO_PATH,
    WRITER_PATH, MESSAGES_PATH, OUTPUT_READER_PATH, TAILS_PATH, REPORT_PATH, SEQS_PATH, DISTINCT_PATH)}

# What the extension exposes that is no path to compare: facts it is checked on at import
# (craps_streams/accelerator/rules.py: the kinds and groups against the registry, the sources' digest
# and where they are).
NOT_PATHS = frozenset({"KINDS", "GROUPS", "SOURCE_DIGEST", "SOURCE_DIR"})
