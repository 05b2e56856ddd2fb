"""What a table's layout shows and says, from the Rules Submission in force (§ 601a.2): the numbers
each layout marks, and each wager's paytable in words.

Every face (the floor view's pages, the report) takes the point numbers, the Bonus Craps totals,
the Hot Roller combinations and the paytables' words from `board_facts`, so a table whose Rules
Submission sets its own Fire Bet paytable shows its own pays, and the facts are written once,
beside the rules that use them.
"""
from __future__ import annotations

import json
from functools import lru_cache

from craps_streams.rules.bonus_craps import LAYOUT_TOTALS, TOTALS
from craps_streams.rules.hot_roller import COMBINATIONS
from craps_streams.rules.hot_shooter import HOT_SHOOTER_TABLE_KINDS
from craps_streams.rules.paytables import PUSH, BonusPaytable, Paytable
from craps_streams.rules.submission import DEFAULT_RULES, RulesError, RulesSubmission, rules_from_record
from craps_streams.rules.table import POINT_NUMBERS
from craps_streams.rules.wording import WAGER_NAMES, table_kind_words

# The most a count can reach, where it has a most: six distinct points (§ 623a.11), six numbers
# (§ 623c.1). The Hot Shooter's throws have none.
_MOST = {"fire": len(POINT_NUMBERS), "hot_roller": len(COMBINATIONS)}
_UNIT = {"fire": ("point", "points"), "hot_roller": ("complete number", "complete numbers"),
         "hot_shooter": ("throw", "throws")}


def _counted(n: int, kind: str) -> str:
    one, many = _UNIT[kind]
    return f"{n} {one if n == 1 else many}"


def _result(odds: int) -> str:
    return "push" if odds == PUSH else f"{odds} to 1"


def band_words(paytable: Paytable, kind: str) -> list[str]:
    """Each band of a count paytable in words, lowest first, the losing counts first of all:
    ["3 points or fewer lose", "4 points 24 to 1", ..., "50 throws or more 99 to 1"]."""
    most = _MOST.get(kind)
    bands = paytable.bands
    out = []
    if bands and bands[0][0] > 0:
        out.append(f"fewer than {bands[0][0]} {_UNIT[kind][1]} lose" if bands[0][0] > 1
                   else f"no {_UNIT[kind][1]} loses")
    for i, (low, odds) in enumerate(bands):
        high = bands[i + 1][0] - 1 if i + 1 < len(bands) else most
        if high == low:
            span = _counted(low, kind)
        elif high is None:
            span = f"{_counted(low, kind)} or more"
        else:
            span = f"{low}-{_counted(high, kind)}"
        out.append(f"{span} {_result(odds)}")
    return out


def _pays_from(paytable: Paytable) -> int | None:
    return next((low for low, odds in paytable.bands if odds != PUSH), None)


def _pushes(paytable: Paytable) -> tuple[int, int | None] | None:
    """(lowest, highest) count that pushes (highest None: no end), or None when nothing pushes."""
    bands = paytable.bands
    for i, (low, odds) in enumerate(bands):
        if odds == PUSH:
            return low, bands[i + 1][0] - 1 if i + 1 < len(bands) else None
    return None


def paytable_words(rules: RulesSubmission) -> dict[str, str]:
    """Each wager kind's paytable under these rules, in words (its section where the paytable is
    the regulations' own)."""
    bonus: BonusPaytable = rules.bonus
    come_out = ("a come-out 7 loses" if rules.hot_roller_come_out_seven == "lose"
                else "a come-out 7 pays by the same table")
    words = {
        "fire": "; ".join(band_words(rules.fire, "fire")),
        "hot_roller": "; ".join(band_words(rules.hot_roller, "hot_roller")) + f"; {come_out}",
        "hot_shooter": "; ".join(band_words(rules.hot_shooter, "hot_shooter")),
    }
    for wager in TOTALS:
        words[wager] = f"{bonus.odds_for(wager)} to 1"
    return words


def _span(totals: tuple[int, ...]) -> str:
    if totals == tuple(range(totals[0], totals[-1] + 1)):
        return f"{totals[0]}-{totals[-1]}"
    return f"all {len(totals)}" if totals == LAYOUT_TOTALS else ", ".join(map(str, totals))


def _numbers(numbers) -> str:
    numbers = list(numbers)
    return ", ".join(map(str, numbers[:-1])) + f" and {numbers[-1]}"


def board_facts(rules: RulesSubmission) -> dict:
    """The layouts' numbers and the words of each line of a table's layout, under these rules.

    points: the point numbers the Fire Bet layout marks; bonus_totals: the totals the Bonus Craps
    layout marks; bonus_needs: the totals each Bonus Craps wager needs; combinations: the Hot
    Roller's, as "low-high"; paytables: each wager kind's paytable in words (`paytable_words`);
    wager_names: each wager kind's name; words: the sentence of each layout line (fire, bonus, hot_roller, hot_shooter)."""
    pays = paytable_words(rules)
    fire_from, shooter_from = _pays_from(rules.fire), _pays_from(rules.hot_shooter)
    roller_from = _pays_from(rules.hot_roller)
    pushes = _pushes(rules.hot_shooter)
    needs = "; ".join(f"{WAGER_NAMES[w]} needs {_span(t)} ({pays[w]})" for w, t in TOTALS.items())
    push_words = ""
    if pushes is not None:
        low, high = pushes
        push_words = f"pushes at {low}-{high} throws, " if high is not None else f"pushes from {low} throws, "
    return {
        "points": list(POINT_NUMBERS),
        "bonus_totals": list(LAYOUT_TOTALS),
        "bonus_needs": {w: list(t) for w, t in TOTALS.items()},
        "combinations": [f"{lo}-{hi}" for n in sorted(COMBINATIONS) for lo, hi in COMBINATIONS[n]],
        "paytables": pays,
        "wager_names": WAGER_NAMES,
        "words": {
            "fire": (f"Fire Bet (§ 623a.11): the distinct points this shooter has made. Pays from "
                     f"{_counted(fire_from, 'fire')}, at the seven-out: {pays['fire']}"),
            "bonus": f"Bonus Craps (§ 623a.12): the totals rolled since the last 7. {needs}",
            "hot_roller": (f"Hot Roller (§ 623c.1): the {sum(map(len, COMBINATIONS.values()))} dice combinations "
                           f"of {_numbers(sorted(COMBINATIONS))} thrown since the last 7; a number is complete "
                           f"when all its combinations are. Pays at the seven-out from "
                           f"{_counted(roller_from, 'hot_roller')}: {pays['hot_roller']}"),
            "hot_shooter": (f"Hot Shooter (§ 623c.4, {' and '.join(map(table_kind_words, HOT_SHOOTER_TABLE_KINDS))} "
                            f"tables only): the throws counted so far by each group of open wagers (wagers placed "
                            f"at different come-outs count from their own come-out). {push_words.capitalize()}"
                            f"{'pays' if push_words else 'Pays'} from {_counted(shooter_from, 'hot_shooter')}: "
                            f"{pays['hot_shooter']}"),
        },
    }


@lru_cache(maxsize=64)
def _board_of_text(text: str) -> dict:
    try:
        rules = rules_from_record(json.loads(text))
    except RulesError as e:
        # Never the defaults' pays for rules that could not be read: say so on every line.
        board = board_facts(DEFAULT_RULES)
        said = f"this table's Rules Submission could not be read ({e})"
        return {**board, "paytables": {k: said for k in board["paytables"]},
                "words": {k: said for k in board["words"]}}
    return board_facts(rules)


def board_of_record(record) -> dict:
    """`board_facts` of a stored `rules` record (TableOpened's, as a table's state keeps it);
    None: the defaults. The same record gives the same (shared, not to be changed) dict. A
    record the rules refuse gives the layouts' numbers and, for every paytable, that it could
    not be read."""
    return _board_of_text(json.dumps(record, sort_keys=True))
