"""Surveillance over settled results: a table's hold against the exact theory, alerts on anomalies.

Pure like the rules core (standard library, the rules and the odds only), so the live worker and
replay derive the same books and the same alerts from the same history.
"""
from craps_streams.surveillance.hold_watch import HoldBook, HoldLine, HoldWatch

__all__ = ["HoldBook", "HoldLine", "HoldWatch"]
