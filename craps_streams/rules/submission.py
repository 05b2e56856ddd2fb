"""The Rules Submission (§ 601a.2): the per-casino paytables and readings, with docs/rules.md defaults.

A `TableOpened` may carry a `rules` object overriding any of these; the rules in force are the
ones of the table's latest opening, so replaying old history uses the rules then in force.
"""
from __future__ import annotations

import msgspec

from craps_streams.rules.kinds import SPEC_OF, WAGER_KINDS, kinds_of_group
from craps_streams.rules.paytables import (
    BONUS_PAYTABLES,
    BONUS_STANDARD,
    FIRE_PAYTABLES,
    FIRE_STANDARD,
    HOT_ROLLER_A,
    HOT_ROLLER_PAYTABLES,
    HOT_SHOOTER_PAYTABLES,
    HOT_SHOOTER_STANDARD,
    BonusPaytable,
    Paytable,
)

BONUS_KINDS = kinds_of_group("bonus_craps")

# On a voluntary or compulsory surrender before a loser 7 (§ 623a.11(a)(2), used for every side
# wager by default): "carry" keeps the wager in action with the successor, "push" returns it.
SURRENDER_CHOICES = ("carry", "push")
# § 623c.1(g) literal reading: a come-out 7 loses. Alternative: it pays by the same table.
HOT_ROLLER_COME_OUT_SEVEN_CHOICES = ("lose", "pay_by_table")

# § 623a.11(b)(1): Fire Bet minimum $1, maximum $5, in $1 increments.
FIRE_MIN_CENTS = 100
FIRE_MAX_CENTS = 500
FIRE_STEP_CENTS = 100


class RulesError(ValueError):
    """A `rules` object in a TableOpened that cannot be a Rules Submission."""


class RulesSubmission(msgspec.Struct, frozen=True):
    fire: Paytable = FIRE_STANDARD
    bonus: BonusPaytable = BONUS_STANDARD
    hot_roller: Paytable = HOT_ROLLER_A
    hot_shooter: Paytable = HOT_SHOOTER_STANDARD
    hot_roller_come_out_seven: str = "lose"
    # kind -> "carry" | "push"; a kind not listed carries.
    surrender: tuple[tuple[str, str], ...] = ()
    # kind -> (min cents, max cents), table limits; a kind not listed takes any positive stake.
    limits: tuple[tuple[str, int, int], ...] = ()
    # A single win at or above this many cents is reported to surveillance; 0 turns it off.
    large_win_alert_cents: int = 100_000

    def surrender_for(self, kind: str) -> str:
        for k, choice in self.surrender:
            if k == kind:
                return choice
        return "carry"

    def limits_for(self, kind: str) -> tuple[int, int] | None:
        for k, low, high in self.limits:
            if k == kind:
                return low, high
        return None

    def paytable_for(self, kind: str) -> Paytable | BonusPaytable:
        return getattr(self, SPEC_OF[kind].paytable)

    def to_record(self) -> dict:
        return {
            **({"fire_paytable": self.fire.name} if self.fire.name in FIRE_PAYTABLES else {}),
            "bonus_paytable": self.bonus.name,
            "hot_roller_paytable": self.hot_roller.name,
            "hot_shooter_paytable": self.hot_shooter.name,
            "hot_roller_come_out_seven": self.hot_roller_come_out_seven,
            "surrender": {k: v for k, v in self.surrender},
            "limits": {k: [low, high] for k, low, high in self.limits},
            "large_win_alert_cents": self.large_win_alert_cents,
            **({"fire_custom": _bands_record(self.fire)} if self.fire.name not in FIRE_PAYTABLES else {}),
        }


DEFAULT_RULES = RulesSubmission()

_KEYS = {
    "fire_paytable", "fire_custom", "bonus_paytable", "hot_roller_paytable", "hot_shooter_paytable",
    "hot_roller_come_out_seven", "surrender", "limits", "large_win_alert_cents",
}


def _bands_record(paytable: Paytable) -> dict:
    return {str(count): odds for count, odds in paytable.bands}


def _pick(table: dict, name, default, aliases: dict[str, str]):
    if name is None:
        return default
    if not isinstance(name, str):
        raise RulesError(f"paytable name must be a string, got {name!r}")
    if name == "standard":
        return default
    name = aliases.get(name, name)
    if name not in table:
        raise RulesError(f"unknown paytable {name!r}; known: {sorted(table)}")
    return table[name]


def _fire_custom(record) -> Paytable:
    """A casino's own Fire Bet paytable: {"4": odds, "5": odds, "6": odds} (counts 1..6)."""
    if not isinstance(record, dict) or not record:
        raise RulesError("fire_custom must be an object of points -> odds")
    bands = []
    for count, odds in record.items():
        try:
            c = int(count)
        except (TypeError, ValueError):
            raise RulesError(f"fire_custom point count {count!r} is not a number") from None
        if not 1 <= c <= 6 or type(odds) is not int or odds < 1:
            raise RulesError(f"fire_custom entry {count!r}: {odds!r} is not points 1..6 -> odds >= 1")
        bands.append((c, odds))
    bands.sort()
    return Paytable("fire-custom-" + "-".join(f"{c}x{o}" for c, o in bands), tuple(bands))


def rules_from_record(record) -> RulesSubmission:
    """Overrides from a TableOpened `rules` object on top of docs/rules.md defaults."""
    if record is None:
        return DEFAULT_RULES
    if not isinstance(record, dict):
        raise RulesError("rules must be an object")
    unknown = set(record) - _KEYS
    if unknown:
        raise RulesError(f"unknown rules keys: {sorted(unknown)}")
    fire = _pick(FIRE_PAYTABLES, record.get("fire_paytable"), FIRE_STANDARD, {})
    if "fire_custom" in record:
        fire = _fire_custom(record["fire_custom"])
    bonus = _pick(BONUS_PAYTABLES, record.get("bonus_paytable"), BONUS_STANDARD,
                  {"alternate": "bonus-623b.3"})
    hot_roller = _pick(HOT_ROLLER_PAYTABLES, record.get("hot_roller_paytable"), HOT_ROLLER_A,
                       {"A": "hot-roller-623c.1h-A", "B": "hot-roller-623c.1h-B"})
    hot_shooter = _pick(HOT_SHOOTER_PAYTABLES, record.get("hot_shooter_paytable"),
                        HOT_SHOOTER_STANDARD, {})
    seven = record.get("hot_roller_come_out_seven", "lose")
    if seven not in HOT_ROLLER_COME_OUT_SEVEN_CHOICES:
        raise RulesError(f"hot_roller_come_out_seven must be one of {HOT_ROLLER_COME_OUT_SEVEN_CHOICES}")
    surrender = record.get("surrender", {})
    if not isinstance(surrender, dict):
        raise RulesError("surrender must be an object of wager kind -> carry|push")
    for kind, choice in surrender.items():
        if kind not in WAGER_KINDS or choice not in SURRENDER_CHOICES:
            raise RulesError(f"surrender {kind!r}: {choice!r} is not a wager kind -> carry|push")
    limits = record.get("limits", {})
    if not isinstance(limits, dict):
        raise RulesError("limits must be an object of wager kind -> [min_cents, max_cents]")
    limit_rows = []
    for kind, pair in limits.items():
        if (kind not in WAGER_KINDS or not isinstance(pair, (list, tuple)) or len(pair) != 2
                or any(type(x) is not int for x in pair) or not 0 < pair[0] <= pair[1]):
            raise RulesError(f"limits {kind!r}: {pair!r} is not a wager kind -> [min, max] cents")
        limit_rows.append((kind, pair[0], pair[1]))
    large = record.get("large_win_alert_cents", DEFAULT_RULES.large_win_alert_cents)
    if type(large) is not int or large < 0:
        raise RulesError("large_win_alert_cents must be a whole number of cents >= 0")
    return RulesSubmission(
        fire=fire, bonus=bonus, hot_roller=hot_roller, hot_shooter=hot_shooter,
        hot_roller_come_out_seven=seven,
        surrender=tuple(sorted(surrender.items())),
        limits=tuple(sorted(limit_rows)),
        large_win_alert_cents=large,
    )
