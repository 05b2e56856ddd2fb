"""Exact theoretical odds of the side wagers (the hold that monitoring compares against).

Every probability is a `fractions.Fraction` computed over the Markov chain of the game with fair
dice (no simulation). Standard library and `craps_streams.rules` only.

    wager_odds("fire", rules)   -> WagerOdds for the paytable and reading in force
    all_wager_odds()            -> every wager x every named paytable x every reading
"""
from craps_streams.odds.catalog import all_wager_odds, clear_caches, wager_odds
from craps_streams.odds.model import Outcome, WagerOdds

__all__ = ["Outcome", "WagerOdds", "all_wager_odds", "clear_caches", "wager_odds"]
