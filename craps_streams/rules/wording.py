"""The casino's words for the codes the rules core writes: wager kinds, table kinds, layout markers,
why a layout was cleared, and a settlement's detail. The pages and the report say these, never
the codes; a code these do not know is shown as it is.
"""
from __future__ import annotations

import re

from craps_streams.rules import bonus_craps, fire_bet, hot_roller, hot_shooter

WAGER_NAMES = {"fire": "Fire Bet", "all_small": "All Small", "all_tall": "All Tall",
               "all_or_nothing": "All or Nothing", "hot_roller": "Hot Roller", "hot_shooter": "Hot Shooter"}
LAYOUT_NAMES = {"fire": "Fire Bet", "bonus_craps": "Bonus Craps", "hot_roller": "Hot Roller",
                "hot_shooter": "Hot Shooter"}
TABLE_KIND_WORDS = {"live": "live", "hybrid": "hybrid", "fully_automated": "fully automated electronic"}
# MarkerCleared.reason (craps_streams/rules/table.py and the kind modules).
CLEARED_WORDS = {"seven_out": "cleared at the seven-out", "seven": "cleared by a 7",
                 "settled": "cleared: every wager on it settled",
                 "surrendered": "cleared: its wagers pushed at the surrender of the dice",
                 "table_closed": "cleared: the table closed"}
# ShooterChanged.reason
SHOOTER_CHANGE_WORDS = {"seven_out": "seven-out", "voluntary": "voluntary", "compulsory": "compulsory",
                        "table_open": "table opened"}


def _pattern(template: str) -> re.Pattern:
    """A marker or detail template ("combo-{low}-{high}") as a pattern with one group per field."""
    parts = re.split(r"\{(\w+)\}", template)
    return re.compile("^" + "".join(re.escape(p) if i % 2 == 0 else rf"(?P<{p}>[\w,]+)"
                                    for i, p in enumerate(parts)) + "$")


_MARKERS = (
    (_pattern(fire_bet.POINT_MARKER), "point {point} made ({count} distinct)"),
    (_pattern(bonus_craps.TOTAL_MARKER), "{total} rolled ({count} of %d totals marked)" % len(bonus_craps.LAYOUT_TOTALS)),
    (_pattern(hot_roller.COMBO_MARKER), "{low}-{high} thrown ({count} of %d combinations)" % len(hot_roller.COMBO_BIT)),
    (_pattern(hot_roller.NUMBER_MARKER), "{number} complete ({count} numbers complete)"),
)
_DETAILS = (
    (_pattern(fire_bet.SETTLED_DETAIL), "{count} distinct points"),
    (_pattern(hot_roller.SETTLED_DETAIL), "{count} numbers complete at the seven-out"),
    (_pattern(hot_roller.COME_OUT_SEVEN_DETAIL), "come-out 7 with {count} numbers complete"),
    (_pattern(hot_shooter.SETTLED_DETAIL), "{throws} throws, come-out to seven-out"),
    (_pattern(bonus_craps.COMPLETE_DETAIL), "{wager} complete"),
    (_pattern(bonus_craps.SEVEN_DETAIL), "7 with {marked} marked"),
)


def _worded(patterns, code: str, **extra) -> str | None:
    for pattern, words in patterns:
        m = pattern.match(code)
        if m:
            fields = {k: v.replace(",", ", ") for k, v in m.groupdict().items()}
            if "wager" in fields:
                fields["wager"] = WAGER_NAMES.get(fields["wager"], fields["wager"])
            return words.format(**fields, **extra)
    return None


def marker_words(layout: str, marker: str, count: int) -> str:
    """A MarkerPlaced in words: "Hot Roller: 1-3 thrown (1 of 14 combinations)"."""
    said = _worded(_MARKERS, marker, count=count) or f"{marker} ({count})"
    return f"{LAYOUT_NAMES.get(layout, layout)}: {said}"


def cleared_words(layout: str, reason: str) -> str:
    """A MarkerCleared in words: "Fire Bet: cleared at the seven-out"."""
    return f"{LAYOUT_NAMES.get(layout, layout)}: {CLEARED_WORDS.get(reason, 'cleared (' + reason + ')')}"


def detail_words(detail: str) -> str:
    """A settlement's detail in words: "points=4" -> "4 distinct points"."""
    return _worded(_DETAILS, detail) or detail


def table_kind_words(kind) -> str:
    return TABLE_KIND_WORDS.get(kind, "" if kind is None else str(kind))
