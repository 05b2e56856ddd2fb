"""What a wager kind is, in one place: one `WagerSpec` per kind, declared beside the kind's game
rules (its cohort module), and the registry of every kind the engine offers.

Adding a wager kind: a module with its cohort class (how a throw marks and settles it) and its
`SPECS`, one line in `_registry()` below, its paytable in the Rules Submission and its odds in
craps_streams/odds (docs/native-core.md, "Adding a wager kind", lists every file). The table
(craps_streams/rules/table.py) and the Rules Submission (submission.py) read the kinds from here; only a
kind whose wagers react to a throw in a way no existing group does also needs its call in
`_on_dice_thrown`.
"""
from __future__ import annotations

import msgspec


class WagerSpec(msgspec.Struct, frozen=True):
    kind: str  # the wager's name on the wire (WagerPlaced.wager)
    group: str  # the layout its wagers share: one cohort class, one window (docs/rules.md, Marks)
    cohort: type  # the group's cohort class
    window: str  # the TableState predicate of the group's window (docs/rules.md, Windows)
    window_why: str  # the rejection message of a wager placed out of its window, with its section
    paytable: str  # the RulesSubmission field holding the kind's paytable
    table_kinds: tuple[str, ...] | None = None  # the table kinds offering it (None: every kind)
    table_kind_rejection: tuple[str, str] | None = None  # (reason, message) on any other table
    change_locked: tuple[str, str] | None = None  # (reason, message) refusing a change request
    markers: bool = True  # does its layout carry markers (cleared when its wagers go)?


def _registry() -> tuple[WagerSpec, ...]:
    from craps_streams.rules import bonus_craps, fire_bet, hot_roller, hot_shooter

    return (
        *fire_bet.SPECS,
        *bonus_craps.SPECS,
        *hot_roller.SPECS,
        *hot_shooter.SPECS,
    )


REGISTRY: tuple[WagerSpec, ...] = _registry()
SPEC_OF: dict[str, WagerSpec] = {s.kind: s for s in REGISTRY}
WAGER_KINDS: tuple[str, ...] = tuple(SPEC_OF)
GROUPS: tuple[str, ...] = tuple(dict.fromkeys(s.group for s in REGISTRY))
GROUP_OF: dict[str, str] = {s.kind: s.group for s in REGISTRY}
COHORT_CLASS: dict[str, type] = {s.group: s.cohort for s in REGISTRY}


def kinds_of_group(group: str) -> tuple[str, ...]:
    return tuple(s.kind for s in REGISTRY if s.group == group)
