"""The native rules core behind the Python core's contract (docs/native-core.md), and the choice
of the core that settles (`rules_core`).

`apply(state, event) -> (state, outputs, verdict)`, the contract of craps_streams/rules/table.py, by the
Rust extension `craps_streams.accelerator._native` (native/, built by the package's build where cargo is
present: setup.py). The extension keeps a
table's state natively (`Table`, whose `to_record()` is exactly `TableState.to_record()` of the
same history) and judges the common path itself: in-order events of an open table with nothing
held, accepted WagerPlaced of every kind, DiceThrown valid or not, ShooterChanged, under the
rules it takes (any paytables, either Hot Roller come-out reading, large-win alerts, table
limits; no surrender that pushes). It decides that before changing anything, and hands every
other event here, to `_fallback`: the Python core, the reference, on the table converted by
record (`TableState.from_record(table.to_record())`), its result converted back
(`Table.load(state.to_record())`, in place, so the caller's table object stays the table). So
one rule lives in one place for every rare case (rejections and their wording, the feed's held
events and duplicates, openings, closings, change requests, come-bets-only, surrenders, limits).

A table the native core cannot keep (events held beyond a gap, odd types in its record) stays a
`TableState` until it can: each event is then the Python core's, and its result is offered to
the native core again.

The extension takes its classes, its way back here and every rule fact (paytables through the
table's Rules Submission; positions, stakes, point numbers, the totals and combinations the
Bonus Craps and Hot Roller wagers mark, marker names, details and alert wordings through
`facts()`) from the Python core at `configure()`: the Rust code holds none of them.

Which core settles is chosen once, by the command that runs (craps_streams/cli.py `main` reads
`CRAPS_CORE`), with `choose`: `rules_core(choice)` says what a choice gives, as a `RulesCore`
whose `apply` the settling step is handed (craps_streams/settle/step.py); the accelerator's other
paths (craps_streams/accelerator/) are in use exactly when the chosen core is the native one.
"""
from __future__ import annotations

import importlib.util
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import msgspec

from craps_streams.rules import events as _events
from craps_streams.rules import table as _table
from craps_streams.rules.kinds import GROUPS, WAGER_KINDS
from craps_streams.rules.submission import rules_from_record
from craps_streams.rules.table import TableState
from craps_streams.rules.verdict import APPLIED

# How the accelerator is built: by the package's own build (setup.py, setuptools-rust), where cargo is on PATH.
_BUILD = "install the package where cargo is on PATH (`pip install -e .` in a checkout) to build it"
_native = None
PROBLEM: str | None = None
if importlib.util.find_spec("craps_streams.accelerator._native") is None:
    PROBLEM = f"the native accelerator is not installed: {_BUILD}"
else:
    try:
        from craps_streams.accelerator import _native
    except ImportError as error:  # built for another interpreter, or broken
        PROBLEM = f"the native accelerator does not load ({error}): {_BUILD}"


def stale_build(extension, sources: Path | None = None) -> str | None:
    """Why `extension` may not settle, when it was built from other sources than `sources` holds
    (native/source_digest.py: a rule edited in native/src/, or a checkout updated, without a
    rebuild would otherwise settle by the old rule); None when they agree, or when there are no
    sources to compare with (an installation outside a checkout). `sources`: by default the
    directory the extension was built from, compiled into it (`SOURCE_DIR`). Reads the sources:
    once, at import, the way the extension itself is loaded from disk; `apply` does no I/O."""
    if sources is None:
        sources = Path(getattr(extension, "SOURCE_DIR", "") or "/nonexistent")
    script = sources / "source_digest.py"
    if not script.is_file():
        return None
    # Loaded as a module, not run as a script: its bytecode is cached beside it like the package's.
    spec = importlib.util.spec_from_file_location("craps_native_source_digest", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    digest = module.source_digest(sources)
    if getattr(extension, "SOURCE_DIGEST", "") != digest:
        return ("the native accelerator was built from other sources than native/ holds (edited or "
                f"updated since it was built): {_BUILD}")
    return None


if _native is not None and PROBLEM is None:
    PROBLEM = stale_build(_native)
if _native is not None and PROBLEM is None:
    if tuple(_native.KINDS) != WAGER_KINDS or tuple(_native.GROUPS) != GROUPS:
        PROBLEM = (f"the native rules core knows the wager kinds {tuple(_native.KINDS)} in groups "
                   f"{tuple(_native.GROUPS)}; the Python core's registry has {WAGER_KINDS} in {GROUPS}: "
                   f"extend native/ and rebuild: {_BUILD}")

_py_apply = _table.apply
# Events the Python core judged for the native core, by type name (tests and benchmarks read it).
FALLBACKS: Counter = Counter()


def _keep(state, into=None):
    """The Python core's resulting state as a native table (`into` reloaded in place, when it is
    the table the event came in on), or the TableState itself when the native core cannot keep it."""
    if state is None or state.held:
        return state
    record = state.to_record()
    if into is not None:
        return into if into.load(record) else state
    table = Table.from_record(record)
    return state if table is None else table


def _fallback(state, event):
    """Every event the native core does not judge: the Python core's, on the state by record."""
    FALLBACKS[type(event).__name__] += 1
    if type(state) is Table:
        py_state = TableState.from_record(state.to_record())
        new, out, verdict = _py_apply(py_state, event)
        return _keep(new, state if new is py_state else None), out, verdict
    new, out, verdict = _py_apply(state, event)
    return _keep(new), out, verdict


def _view(table) -> TableState:
    """A TableState of a native table's record: what `Table.__getattr__` reads rarely used
    attributes from (cohorts, open_cohorts, pending, the windows); a copy."""
    return TableState.from_record(table.to_record())


def restore(record: dict):
    """A table from its record (pickling): native when the native core keeps it."""
    table = Table.from_record(record)
    return TableState.from_record(record) if table is None else table


def facts() -> dict:
    """The rule facts the accelerator settles by, read from the Python core now: the positions,
    the point numbers, the Bonus Craps totals and Hot Roller combinations as bits, the Fire Bet's
    stakes and four-point count, the table kinds offering each kind, and the words
    of its outputs: marker names and details of small counts rendered here from their texts, the
    rarer ones (a 7's Bonus Craps detail, the Hot Shooter's, the alerts' messages) as the Python
    functions that word them. The Rust code holds none of them (docs/native-core.md)."""
    from craps_streams.rules import bonus_craps, fire_bet, hot_roller, hot_shooter, paytables, submission
    from craps_streams.rules.kinds import SPEC_OF

    return {
        "positions": (_table.POSITIONS[0], _table.POSITIONS[-1]),
        "point_numbers": list(_table.POINT_NUMBERS),
        # By the index of the kind (the first four: fire, then the three Bonus Craps wagers): the
        # totals each needs, as bits over the total.
        "bonus_needs": [bonus_craps.NEEDS.get(k, 0) for k in WAGER_KINDS[:4]],
        # Hot Roller: the bit of each combination (index 6 x (low - 1) + (high - 1); 0: none) and
        # the bits of each number's combinations (index the number; 0: none).
        "combo_bits": [hot_roller.COMBO_BIT.get((i // 6 + 1, i % 6 + 1), 0) for i in range(36)],
        "number_masks": [hot_roller.NUMBER_MASK.get(n, 0) for n in range(13)],
        "fire_stakes": (submission.FIRE_MIN_CENTS, submission.FIRE_MAX_CENTS, submission.FIRE_STEP_CENTS),
        "four_points": fire_bet.FOUR_POINTS,
        "push_odds": paytables.PUSH,
        "table_kinds": [SPEC_OF[kind].table_kinds for kind in WAGER_KINDS],
        "point_marker": [fire_bet.POINT_MARKER.format(point=p) for p in range(13)],
        "points_detail": [fire_bet.SETTLED_DETAIL.format(count=n) for n in range(7)],
        "total_marker": [bonus_craps.TOTAL_MARKER.format(total=t) for t in range(13)],
        # By the index of the kind (the first four: fire, then the three Bonus Craps wagers).
        "complete_detail": [bonus_craps.COMPLETE_DETAIL.format(wager=k) if k in bonus_craps.NEEDS else ""
                            for k in WAGER_KINDS[:4]],
        "seven_detail": bonus_craps.seven_detail,
        "combo_marker": [hot_roller.COMBO_MARKER.format(low=i // 6 + 1, high=i % 6 + 1) for i in range(36)],
        "number_marker": [hot_roller.NUMBER_MARKER.format(number=n) for n in range(13)],
        "numbers_detail": [hot_roller.SETTLED_DETAIL.format(count=n) for n in range(7)],
        "come_out_detail": [hot_roller.COME_OUT_SEVEN_DETAIL.format(count=n) for n in range(7)],
        "throws_detail": hot_shooter.settled_detail,
        "four_points_message": _table.four_points_message,
        "large_win_message": _table.large_win_message,
    }


def configure() -> None:
    """Hands the accelerator its classes, its way back to the Python core and the rule facts: at
    import, and again after a fact changed in Python (tests)."""
    _native.init(_events, APPLIED, _fallback, _view, rules_from_record, facts())


if PROBLEM is None:
    try:
        configure()
    except (TypeError, ValueError) as error:  # Structs laid out otherwise (native/src/slots.rs), or facts it cannot take
        PROBLEM = f"the native accelerator refused this installation: {error}"
if PROBLEM is None:
    Table = _native.Table
    apply = _native.apply
else:
    Table = None

    def apply(state, event):
        raise RuntimeError(PROBLEM)


def require() -> None:
    """Raise, saying why, when the native core cannot be used."""
    if PROBLEM is not None:
        raise RuntimeError(PROBLEM)


Choice = Literal["auto", "python", "native"]
CHOICES: tuple[Choice, ...] = ("auto", "python", "native")


class RulesCore(msgspec.Struct, frozen=True):
    """The core that settles: `name` "python" (craps_streams/rules/table.py) or "native" (this
    module's), its `apply`, and `note`: why the Python core settles where the native one was
    asked for by "auto" and could not be used (None otherwise; the worker logs it)."""

    name: Literal["python", "native"]
    apply: Callable
    note: str | None = None

    @property
    def native(self) -> bool:
        """Whether the accelerator's paths are in use with this core."""
        return self.name == "native"


def rules_core(choice: Choice) -> RulesCore:
    """The core a choice gives. "python": the Python core. "native": the accelerator, or a
    RuntimeError saying why it cannot be used. "auto": the accelerator when it is installed and
    accepted, else the Python core with the reason in `note`."""
    if choice == "python":
        return RulesCore("python", _py_apply)
    if choice == "native":
        require()
        return RulesCore("native", apply)
    if choice == "auto":
        return RulesCore("native", apply) if PROBLEM is None else RulesCore("python", _py_apply, PROBLEM)
    raise ValueError(f"the rules core {choice!r}: one of {', '.join(CHOICES)}")


_chosen: list[RulesCore] = []


def choose(choice: Choice) -> RulesCore:
    """Makes `rules_core(choice)` the process's core: what the command that runs chose (its
    `main`), once, before it settles; a test chooses too. Returns it."""
    core = rules_core(choice)
    _chosen[:] = [core]
    return core


def chosen() -> RulesCore:
    """The core `choose` made the process's; "auto"'s when nothing chose (a library caller)."""
    if not _chosen:
        _chosen.append(rules_core("auto"))
    return _chosen[0]


def in_use() -> bool:
    """Whether the accelerator's paths serve: the chosen core is the native one."""
    return chosen().native
