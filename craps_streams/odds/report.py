"""The theoretical odds as JSON-ready records and as a readable table.

    python -m craps_streams.odds.report          # text table
    python -m craps_streams.odds.report --json   # records
"""
from __future__ import annotations

import json
import sys
from fractions import Fraction

from craps_streams.odds.catalog import all_wager_odds
from craps_streams.odds.model import WagerOdds


def _ratio(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def odds_record(odds: WagerOdds) -> dict:
    return {
        "wager": odds.wager,
        "paytable": odds.paytable,
        "reading": odds.reading,
        "house_edge": _ratio(odds.house_edge),
        "house_edge_float": float(odds.house_edge),
        "house_edge_percent": float(odds.house_edge * 100),
        "variance": _ratio(odds.variance),
        "variance_float": float(odds.variance),
        "std_dev": odds.std_dev,
        "outcomes": [
            {
                "label": o.label,
                "probability": _ratio(o.probability),
                "probability_float": float(o.probability),
                "net_per_unit": _ratio(o.net_per_unit),
                "net_per_unit_float": float(o.net_per_unit),
            }
            for o in odds.outcomes
        ],
    }


def odds_records() -> list[dict]:
    return [odds_record(o) for o in all_wager_odds()]


def _net(net: Fraction) -> str:
    if net == -1:
        return "lose"
    if net == 0:
        return "push"
    return f"{net} to 1"


def format_text() -> str:
    rows = all_wager_odds()
    head = ("wager", "paytable", "reading", "house edge %", "std dev")
    table = [(o.wager, o.paytable, o.reading or "-", f"{float(o.house_edge * 100):.4f}",
              f"{o.std_dev:.4f}") for o in rows]
    widths = [max(len(r[i]) for r in [head, *table]) for i in range(len(head))]

    def line(cells) -> str:
        return "  ".join(c.ljust(w) if i < 3 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [line(head), line(["-" * w for w in widths])]
    out += [line(r) for r in table]
    for o in rows:
        out.append("")
        out.append(f"{o.wager}  {o.paytable}" + (f"  {o.reading}" if o.reading else ""))
        label_width = max(len(x.label) for x in o.outcomes)
        for x in o.outcomes:
            out.append(f"  {x.label.ljust(label_width)}  {_net(x.net_per_unit):>11}"
                       f"  p = {float(x.probability):.10f}  (1 in {float(1 / x.probability):,.1f})"
                       if x.probability else
                       f"  {x.label.ljust(label_width)}  {_net(x.net_per_unit):>11}  p = 0")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--json" in argv:
        json.dump(odds_records(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
