"""`odds`: the exact outcome distribution, house edge and standard deviation of every wager."""
from __future__ import annotations

import json


def cmd_odds(args, settings) -> int:
    from craps_streams.odds.report import format_text, odds_records

    if args.format == "json":
        print(json.dumps(odds_records(), indent=2))
    else:
        print(format_text())
    return 0


def register(sub) -> None:
    o = sub.add_parser("odds", help="exact outcome distribution, house edge and std dev of every wager",
                       description="The exact outcome distribution, house edge and standard deviation of every "
                                   "side wager and paytable.")
    o.add_argument("--format", choices=("text", "json"), default="text",
                   help="text tables or JSON records (default text)")
    o.set_defaults(run=cmd_odds)
