"""Every side wager's theoretical distribution, for a Rules Submission or for every named paytable."""
from __future__ import annotations

from functools import lru_cache

from msgspec.structs import replace

from craps_streams.odds import bonus_craps, fire_bet, hot_roller, hot_shooter
from craps_streams.odds.bonus_craps import bonus_odds
from craps_streams.odds.fire_bet import fire_odds
from craps_streams.odds.hot_roller import hot_roller_odds
from craps_streams.odds.hot_shooter import hot_shooter_odds
from craps_streams.odds.model import WagerOdds
from craps_streams.rules.paytables import (
    BONUS_PAYTABLES,
    FIRE_PAYTABLES,
    HOT_ROLLER_PAYTABLES,
    HOT_SHOOTER_PAYTABLES,
)
from craps_streams.rules.submission import (
    BONUS_KINDS,
    DEFAULT_RULES,
    HOT_ROLLER_COME_OUT_SEVEN_CHOICES,
    WAGER_KINDS,
    RulesSubmission,
)


@lru_cache(maxsize=256)
def wager_odds(wager: str, rules: RulesSubmission = DEFAULT_RULES) -> WagerOdds:
    """The exact distribution of `wager` under the paytable and reading `rules` put in force.

    Assumes a normal game from a new shooter's come-out: no voluntary or compulsory passes and no
    come-bets-only mode (those change who throws, not the dice).
    """
    if wager == "fire":
        return fire_odds(rules.fire)
    if wager in BONUS_KINDS:
        return bonus_odds(wager, rules.bonus)
    if wager == "hot_roller":
        return hot_roller_odds(rules.hot_roller, rules.hot_roller_come_out_seven)
    if wager == "hot_shooter":
        return hot_shooter_odds(rules.hot_shooter)
    raise ValueError(f"unknown wager {wager!r}; known: {WAGER_KINDS}")


def clear_caches() -> None:
    """Forget every cached result (for timing runs and tests)."""
    for f in (wager_odds, fire_odds, fire_bet.distinct_points_distribution, bonus_odds,
              bonus_craps.all_before_seven, hot_roller_odds, hot_roller.seven_distribution,
              hot_shooter_odds, hot_shooter.throws_distribution):
        f.cache_clear()


def all_wager_odds() -> list[WagerOdds]:
    """Every wager under every named paytable and every reading, in WAGER_KINDS order."""
    rules: list[tuple[str, RulesSubmission]] = []
    rules += [("fire", replace(DEFAULT_RULES, fire=p)) for p in FIRE_PAYTABLES.values()]
    rules += [(kind, replace(DEFAULT_RULES, bonus=p))
              for kind in BONUS_KINDS for p in BONUS_PAYTABLES.values()]
    rules += [("hot_roller", replace(DEFAULT_RULES, hot_roller=p, hot_roller_come_out_seven=seven))
              for p in HOT_ROLLER_PAYTABLES.values() for seven in HOT_ROLLER_COME_OUT_SEVEN_CHOICES]
    rules += [("hot_shooter", replace(DEFAULT_RULES, hot_shooter=p))
              for p in HOT_SHOOTER_PAYTABLES.values()]
    return [wager_odds(wager, r) for wager, r in rules]
