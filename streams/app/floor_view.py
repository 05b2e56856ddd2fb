"""What the floor page shows of a table: shooter, point, each side wager's markers, hold vs theory."""
from __future__ import annotations

from streams.rules.bonus_craps import marked_totals
from streams.rules.hot_roller import COMBO_BIT, completed_numbers


def table_view(state, book) -> dict:
    cohorts = {g: [c for c in ([state.open_cohorts[g]] if state.open_cohorts[g] else []) + state.cohorts[g]]
               for g in state.cohorts}
    fire = cohorts["fire"][0].points if cohorts["fire"] else ()
    bonus = marked_totals(cohorts["bonus_craps"][0].marks) if cohorts["bonus_craps"] else []
    roller = cohorts["hot_roller"][0].marks if cohorts["hot_roller"] else 0
    hold = []
    for (wager, paytable), t in sorted(book.lines.items() if book is not None else ()):
        hold.append({"wager": wager, "paytable": paytable, "handle_cents": t.handle_cents,
                     "house_win_cents": t.house_win_cents,
                     "expected_house_win_cents": round(t.expected_house_win_cents),
                     "z_score": round(t.z_score, 2)})
    return {
        "table_id": state.table_id, "kind": state.table_kind, "closed": state.closed,
        "shooter": state.shooter_id, "position": state.shooter_position, "hand": state.hand,
        "point": state.point or None, "throws_this_hand": state.shooter_throws,
        "come_bets_only": state.come_bets_only, "last_seq": state.last_seq,
        "suspended": bool(state.held), "held_events": len(state.held),
        "wagers_in_action": len(state.pending),
        "fire_points": list(fire),
        "bonus_marked": bonus,
        "hot_roller_combos": [f"{lo}-{hi}" for (lo, hi), bit in COMBO_BIT.items() if roller & bit],
        "hot_roller_numbers": completed_numbers(roller),
        "hot_shooter_throws": [c.throws for c in cohorts["hot_shooter"]],
        "hold": hold,
    }
