"""A table's state and `apply`, the one entry point of the rules core.

`apply(state, event) -> (state, outputs, verdict)`: no clock, randomness or I/O; the verdict is
one of craps_streams.rules.verdict (applied, released, held, duplicate, rejected).

The state is owned by `apply` and updated in place, not copied. Every check runs before the first
change, so a rejected event leaves the state exactly as it was. The one case left, a bug raising half-way through a change,
is handled by the caller committing in units it can roll back: the worker aborts the batch's
transaction and rebuilds the partition's tables from the committed changelog (app/worker.py);
replay stops. Serialize with `state.to_record()` / `TableState.from_record()`.
"""
from __future__ import annotations

from typing import Any, Callable

from craps_streams.rules.contract import event_to_record, record_to_event
from craps_streams.rules.events import (
    ComeBetsOnly,
    DiceThrown,
    EventRejected,
    ShooterChanged,
    SurveillanceAlerted,
    TableClosed,
    TableOpened,
    WagerChangeRequested,
    WagerPlaced,
    WagerSettled,
)
from craps_streams.rules.kinds import COHORT_CLASS, GROUP_OF, GROUPS, REGISTRY, SPEC_OF, WAGER_KINDS
from craps_streams.rules.submission import (
    FIRE_MAX_CENTS,
    FIRE_MIN_CENTS,
    FIRE_STEP_CENTS,
    RulesSubmission,
    rules_from_record,
)
from craps_streams.rules.sequence import receive
from craps_streams.rules.verdict import APPLIED, REJECTED
from craps_streams.rules.wager import KIND, Cohort, Wager, output_id, settled

POINT_NUMBERS = (4, 5, 6, 8, 9, 10)
POSITIONS = range(1, 17)  # § 623c.1(a)(2)(i): at most 16 positions, 1 left of the boxperson

# The words of the table's alerts to surveillance.
# § 623a.11(a)(6): the four-point alert, with each Fire Bet cohort's count.
FOUR_POINTS_ALERT = ("table {table_id}, shooter {shooter_id} at position {position}: four different "
                     "points made; confirm {wagers} Fire Bets ({counts})")
FIRE_COHORT_COUNT = "{cohort_id}: {points} points"
# docs/rules.md, Large wins: a single win at or above the Rules Submission's threshold.
LARGE_WIN_ALERT = "{wager} {wager_id} at position {position} won {won_cents} cents ({detail})"


def four_points_message(table_id: str, shooter_id, position: int, wagers: int, cohorts) -> str:
    """The four-point alert's message; `cohorts`: (cohort id, distinct points made) of each Fire
    Bet cohort in action."""
    counts = ", ".join(FIRE_COHORT_COUNT.format(cohort_id=c, points=n) for c, n in cohorts)
    return FOUR_POINTS_ALERT.format(table_id=table_id, shooter_id=shooter_id, position=position,
                                    wagers=wagers, counts=counts)


def large_win_message(wager: str, wager_id: str, position: int, won_cents: int, detail: str) -> str:
    return LARGE_WIN_ALERT.format(wager=wager, wager_id=wager_id, position=position,
                                  won_cents=won_cents, detail=detail)


class TableState:
    __slots__ = ("table_id", "table_kind", "rules", "rules_record", "opened_seq", "last_seq",
                 "closed", "shooter_id", "shooter_position", "shooter_throws", "hand", "must_pass",
                 "point", "come_bets_only", "cycle_fresh", "fire_alerted", "open_cohorts",
                 "cohorts", "pending", "duplicates", "received_seq", "held", "throws", "last_throw_ts")

    def __init__(self, event: TableOpened, last_duplicates: int = 0, throws: int = 0,
                 last_throw_ts: int = 0):
        self.table_id = event.table_id
        self.table_kind = event.table_kind
        self.rules: RulesSubmission = event.rules
        self.rules_record = event.rules_record
        self.opened_seq = event.seq
        self.last_seq = event.seq
        self.closed = False
        self.shooter_id: str | None = None
        self.shooter_position = 0
        self.shooter_throws = 0  # valid throws by the current shooter
        self.hand = 0  # shooters announced since the table opened
        self.must_pass = False  # the shooter sevened out (§ 623a.10(a)(1))
        self.point = 0  # 0: off
        self.come_bets_only = False  # § 623a.10(b)
        self.cycle_fresh = True  # no valid throw since the last 7 or the shooter change
        self.fire_alerted = False  # the four-point alert went out in this hand (to the seven-out)
        # Per group: the cohort still taking wagers in the open window, and the cohorts in action.
        self.open_cohorts: dict[str, Cohort | None] = {g: None for g in GROUPS}
        self.cohorts: dict[str, list] = {g: [] for g in GROUPS}
        self.pending: dict[str, Wager] = {}
        self.duplicates = last_duplicates
        # The feed (craps_streams/rules/sequence.py): the unbroken run of seqs received, and the events
        # that arrived beyond a gap, held until it is filled.
        self.received_seq = event.seq
        self.held: dict[int, object] = {}
        # Valid throws since the table first opened, and the event time of the last one: kept
        # across a reopen, so the floor's throw counters only ever grow.
        self.throws = throws
        self.last_throw_ts = last_throw_ts

    # ------------------------------------------------------------ windows (docs/rules.md, Windows)

    def fire_and_bonus_window_open(self) -> bool:
        """§ 623a.11(a)(1), § 623a.12(1): before a new shooter's initial come-out roll; open while
        the next valid throw will be a shooter's first."""
        return not self.come_bets_only and (self.must_pass or self.shooter_throws == 0)

    def hot_roller_window_open(self) -> bool:
        """§ 623c.1(b): only before the come-out roll, of a fresh cycle (shared markers)."""
        return not self.come_bets_only and self.point == 0 and self.cycle_fresh

    def hot_shooter_window_open(self) -> bool:
        """§ 623c.4(c): before the come-out roll, while the point is off."""
        return not self.come_bets_only and self.point == 0

    def window_open(self, kind: str) -> bool:
        return _WINDOW_OF_GROUP[GROUP_OF[kind]](self)

    # ------------------------------------------------------------ serialization

    def to_record(self) -> dict:
        return {
            "table_id": self.table_id, "table_kind": self.table_kind,
            "rules": self.rules_record, "opened_seq": self.opened_seq, "last_seq": self.last_seq,
            "closed": self.closed, "shooter_id": self.shooter_id,
            "shooter_position": self.shooter_position, "shooter_throws": self.shooter_throws,
            "hand": self.hand, "must_pass": self.must_pass, "point": self.point,
            "come_bets_only": self.come_bets_only, "cycle_fresh": self.cycle_fresh,
            "fire_alerted": self.fire_alerted,
            "open_cohorts": {g: (c.to_record() if c is not None else None)
                             for g, c in self.open_cohorts.items()},
            "cohorts": {g: [c.to_record() for c in cs] for g, cs in self.cohorts.items()},
            "duplicates": self.duplicates,
            "received_seq": self.received_seq,
            "held": [event_to_record(self.held[seq]) for seq in sorted(self.held)],
            "throws": self.throws, "last_throw_ts": self.last_throw_ts,
        }

    @classmethod
    def from_record(cls, r: dict) -> "TableState":
        opened = TableOpened(r["table_id"], r["opened_seq"], 0, r["table_kind"],
                             rules_from_record(r["rules"]), r["rules"])
        s = cls(opened, r["duplicates"], r.get("throws", 0), r.get("last_throw_ts", 0))
        for name in ("last_seq", "closed", "shooter_id", "shooter_position", "shooter_throws",
                     "hand", "must_pass", "point", "come_bets_only", "cycle_fresh", "fire_alerted"):
            setattr(s, name, r[name])
        # States stored before the feed existed: nothing held, the cursor at the last applied seq.
        s.received_seq = r.get("received_seq", r["last_seq"])
        s.held = {e.seq: e for e in map(record_to_event, r.get("held", ()))}
        for g in GROUPS:
            c = r["open_cohorts"][g]
            s.open_cohorts[g] = COHORT_CLASS[g].from_record(c) if c is not None else None
            s.cohorts[g] = [COHORT_CLASS[g].from_record(c) for c in r["cohorts"][g]]
        for c in s.all_cohorts():
            s.pending.update(c.wagers)
        return s

    def all_cohorts(self):
        for g in GROUPS:
            if self.open_cohorts[g] is not None:
                yield self.open_cohorts[g]
            yield from self.cohorts[g]


_WINDOW_OF_GROUP = {s.group: getattr(TableState, s.window) for s in REGISTRY}
_HAS_MARKERS = {s.group: s.markers for s in REGISTRY}


# ---------------------------------------------------------------- the entry point


def apply(state: TableState | None, event) -> tuple[TableState | None, list, str]:
    """Apply one event to a table's state; returns the state, the outputs of the event and its
    verdict (craps_streams.rules.verdict). The state is None only for an event of a table never opened.

    A duplicate (seq at or below the last applied seq) only counts (docs/rules.md, Duplicates);
    events of an open table go through its feed, in seq order (craps_streams/rules/sequence.py).
    """
    if state is None:
        return _HANDLERS[type(event)](state, event)  # an opening, or the rejection of an unknown table
    if event.seq - state.received_seq != 1 or state.held or type(event) is TableOpened:
        # Out of order, behind held events, or a reopening (a new state): the feed
        # (craps_streams/rules/sequence.py).
        return receive(state, event, _dispatch)
    # In order with nothing held: judged, and the seq is received. Each handler returns its own
    # verdict (REJECTED with its rejection as the only output: the checks run before any change).
    judged = _HANDLERS[type(event)](state, event)
    state.received_seq = event.seq
    return judged


def _dispatch(state, event):
    """(state, outputs) of one in-order event, for the feed (craps_streams/rules/sequence.py)."""
    state, out, _ = _HANDLERS[type(event)](state, event)
    return state, out


def rejected(event, reason: str, message: str) -> EventRejected:
    return EventRejected(f"{event.table_id}/{event.seq}/rejected", event.table_id, event.seq,
                         event.ts, reason, message, event_to_record(event))


def _table_open_or_rejected(state: TableState | None, event) -> EventRejected | None:
    if state is None or state.closed:
        return _not_open(state, event)
    return None


def _not_open(state: TableState | None, event) -> EventRejected:
    """The rejection of an event for a table never opened, or closed."""
    if state is None:
        return rejected(event, "unknown_table", f"table {event.table_id!r} has not been opened")
    return rejected(event, "table_closed", f"table {event.table_id!r} is closed")


def _on_table_opened(state: TableState | None, event: TableOpened):
    if state is not None and not state.closed:
        return state, [rejected(event, "table_already_open",
                                "the table is open: close it before opening it with new rules")], REJECTED
    # A reopened table starts a fresh game under the rules now in force (docs/rules.md, rule versions).
    if state is None:
        return TableState(event), [], APPLIED
    return TableState(event, state.duplicates, state.throws, state.last_throw_ts), [], APPLIED


def _on_shooter_changed(state: TableState | None, event: ShooterChanged):
    if state is None or state.closed:
        return state, [_not_open(state, event)], REJECTED
    if event.position not in POSITIONS:
        return state, [rejected(event, "position_out_of_range",
                                f"position {event.position} is not 1..16 (§ 623c.1(a)(2)(i))")], REJECTED
    reason = event.reason
    if reason == "table_open":
        ok = state.shooter_id is None
        why = "the table already has a shooter"
    elif reason == "seven_out":
        ok = state.must_pass
        why = "the shooter has not sevened out"
    elif reason in ("voluntary", "compulsory"):
        ok = state.shooter_id is not None and not state.must_pass
        why = ("there is no shooter to pass the dice" if state.shooter_id is None
               else "the shooter sevened out: the change must give reason seven_out (§ 623a.10(a)(1))")
    else:
        return state, [rejected(event, "unknown_reason", f"shooter change reason {reason!r} is not one "
                                "of table_open, seven_out, voluntary, compulsory (§ 623a.10)")], REJECTED
    if not ok:
        return state, [rejected(event, "reason_mismatch", f"shooter change {reason}: {why}")], REJECTED

    out: list = []
    if reason in ("voluntary", "compulsory"):
        _surrender(state, event, out)
    state.last_seq = event.seq
    state.shooter_id = event.shooter_id
    state.shooter_position = event.position
    state.shooter_throws = 0
    state.hand += 1
    state.must_pass = False
    state.come_bets_only = False
    state.cycle_fresh = True
    if reason in ("table_open", "seven_out"):
        # § 623a.11(a)(6) once per hand: only a seven-out ends the hand (the point survives a
        # voluntary or compulsory change, docs/rules.md).
        state.fire_alerted = False
    # The point survives a voluntary or compulsory change (docs/rules.md): the successor throws for it.
    if out:
        _forget_settled(state, out)
    return state, out, APPLIED


def _surrender(state: TableState, event, out: list) -> None:
    """§ 623a.11(a)(2): wagers in action stay with the successor shooter by default; a Rules
    Submission may push a kind instead. Wagers still in their window have seen no throw and stay."""
    for kind in WAGER_KINDS:
        if state.rules.surrender_for(kind) != "push":
            continue
        group = GROUP_OF[kind]
        keep = []
        for cohort in state.cohorts[group]:
            for w in cohort.pop_kind(kind):
                out.append(settled(w, event, "push", 0, state.rules.paytable_for(kind).name,
                                   f"{event.reason} surrender of the dice"))
            if cohort.wagers:
                keep.append(cohort)
            elif SPEC_OF[kind].markers:
                cohort.cleared(event, out, "surrendered")
        state.cohorts[group] = keep


def _on_dice_thrown(state: TableState | None, event: DiceThrown):
    if state is None or state.closed:
        return state, [_not_open(state, event)], REJECTED
    d1, d2 = event.die1, event.die2
    if not (1 <= d1 <= 6 and 1 <= d2 <= 6):
        return state, [rejected(event, "die_out_of_range", f"dice {d1},{d2}: each die reads 1..6")], REJECTED
    if state.shooter_id is None:
        return state, [rejected(event, "no_shooter", "no shooter has been announced")], REJECTED
    if state.must_pass:
        return state, [rejected(event, "shooter_sevened_out", f"shooter {state.shooter_id} sevened out "
                                "and must pass the dice (§ 623a.10(a)(1))")], REJECTED
    state.last_seq = event.seq
    if not event.valid:
        return state, [], APPLIED  # § 623a.8: an invalid roll counts for nothing, windows included
    state.throws += 1
    state.last_throw_ts = event.ts

    out: list = []
    rules = state.rules
    cohorts = state.cohorts
    # The throw closes every open window: its wagers are in action from this throw on.
    for group, cohort in state.open_cohorts.items():
        if cohort is not None:
            cohorts[group].append(cohort)
            state.open_cohorts[group] = None
    state.shooter_throws += 1
    state.cycle_fresh = False
    for cohort in cohorts["hot_shooter"]:  # § 623c.4(d): every throw from the come-out roll counts
        cohort.throws += 1
    total = d1 + d2
    point = state.point

    if total == 7:
        seven_out = point != 0
        # § 623a.12(5): any 7 collects every Bonus Craps wager and clears its markers.
        for cohort in cohorts["bonus_craps"]:
            cohort.seven(rules.bonus, event, out)
        cohorts["bonus_craps"] = []
        # § 623c.1(g): every Hot Roller wager is settled by a 7; a come-out 7 loses (literal
        # reading) unless the Rules Submission pays it by the table.
        pays = seven_out or rules.hot_roller_come_out_seven == "pay_by_table"
        for cohort in cohorts["hot_roller"]:
            cohort.seven(rules.hot_roller, pays, event, out)
        cohorts["hot_roller"] = []
        state.cycle_fresh = True
        if seven_out:
            # § 623a.11(a)(5), § 623c.4(d): the loser 7 settles the Fire Bet and Hot Shooter wagers.
            for cohort in cohorts["fire"]:
                cohort.seven_out(rules.fire, event, out)
            cohorts["fire"] = []
            for cohort in cohorts["hot_shooter"]:
                cohort.seven_out(rules.hot_shooter, event, out)
            cohorts["hot_shooter"] = []
            state.point = 0
            state.must_pass = True  # § 623a.10(a)(1)
    else:
        # § 623c.1(d),(f): the combination, and the number once complete, are marked.
        low, high = min(d1, d2), max(d1, d2)
        for cohort in cohorts["hot_roller"]:
            cohort.dice_thrown(low, high, event, out)
        # § 623a.12(4): any throw but a 7 marks its total and pays the wagers it completes; a
        # cohort left without wagers has its markers cleared.
        bonus = cohorts["bonus_craps"]
        for cohort in bonus:
            cohort.total_thrown(total, rules.bonus, event, out)
        for cohort in bonus:
            if not cohort.wagers:
                cohort.cleared(event, out, "settled")
        cohorts["bonus_craps"] = [c for c in bonus if c.wagers]
        if point == 0:
            # § 623a.10(b): with the on/off marker off no pass-line point is established.
            if total in POINT_NUMBERS and not state.come_bets_only:
                state.point = total
        elif total == point:
            # § 623a.11(a)(4): a point made is marked on every Fire Bet in action.
            state.point = 0
            reached_four = False
            for cohort in cohorts["fire"]:
                reached_four |= cohort.point_made(point, event, out)
            if reached_four and not state.fire_alerted:
                _alert_four_points(state, event, out)
    _forget_settled(state, out)
    return state, out, APPLIED


def _alert_four_points(state: TableState, event, out: list) -> None:
    """§ 623a.11(a)(6): surveillance confirms every Fire Bet once four unique points are made."""
    state.fire_alerted = True
    fire = state.cohorts["fire"]
    ids = tuple(w for c in fire for w in c.wagers)
    message = four_points_message(event.table_id, state.shooter_id, state.shooter_position, len(ids),
                                  [(c.cohort_id, len(c.points)) for c in fire])
    out.append(SurveillanceAlerted(
        output_id(event, out), event.table_id, event.seq, event.ts, "fire_bet_four_points",
        state.shooter_id or "",  # never None here: a throw needs a shooter
        message, ids))


def _forget_settled(state: TableState, out: list) -> None:
    """Forget the wagers settled in `out` (no longer pending) and alert their large wins
    (docs/rules.md, Large wins), after the event's other outputs, in settlement order."""
    threshold = state.rules.large_win_alert_cents
    for o in [o for o in out if type(o) is WagerSettled]:
        del state.pending[o.wager_id]
        if threshold and o.won_cents >= threshold:
            out.append(SurveillanceAlerted(
                output_id(o, out), o.table_id, o.seq, o.ts, "large_win", state.shooter_id or "",
                large_win_message(o.wager, o.wager_id, o.position, o.won_cents, o.detail), (o.wager_id,)))


def _stake_problem(state: TableState, event: WagerPlaced) -> str | None:
    amount = event.amount_cents
    if amount <= 0:
        return f"stake {amount} cents is not positive"
    if event.wager == "fire" and not (FIRE_MIN_CENTS <= amount <= FIRE_MAX_CENTS
                                      and amount % FIRE_STEP_CENTS == 0):
        return f"Fire Bet stake {amount} cents is not $1..$5 in $1 increments (§ 623a.11(b)(1))"
    limits = state.rules.limits_for(event.wager)
    if limits is not None and not limits[0] <= amount <= limits[1]:
        return f"{event.wager} stake {amount} cents is outside the table limits {limits[0]}..{limits[1]}"
    return None


def _on_wager_placed(state: TableState | None, event: WagerPlaced):
    if state is None or state.closed:
        return state, [_not_open(state, event)], REJECTED
    kind = event.wager
    spec = SPEC_OF.get(kind)
    if spec is None:
        return state, [rejected(event, "unknown_wager_kind", f"wager kind {kind!r} is not one of "
                                f"{', '.join(WAGER_KINDS)}")], REJECTED
    if event.position not in POSITIONS:
        return state, [rejected(event, "position_out_of_range",
                                f"position {event.position} is not 1..16 (§ 623c.1(a)(2)(i))")], REJECTED
    if event.wager_id in state.pending:
        return state, [rejected(event, "duplicate_wager_id",
                                f"wager {event.wager_id!r} is already in action")], REJECTED
    why = _stake_problem(state, event)
    if why:
        return state, [rejected(event, "stake_out_of_limits", why)], REJECTED
    if spec.table_kinds is not None and state.table_kind not in spec.table_kinds:
        return state, [rejected(event, *spec.table_kind_rejection)], REJECTED
    if not state.window_open(kind):
        return state, [rejected(event, "out_of_window", spec.window_why)], REJECTED

    state.last_seq = event.seq
    group = spec.group
    cohort = state.open_cohorts[group]
    if cohort is None:
        cohort = state.open_cohorts[group] = spec.cohort(f"{group}-{event.seq}")
    wager = (event.wager_id, event.position, kind, event.amount_cents, event.seq)  # craps_streams/rules/wager.py
    cohort.add(wager)
    state.pending[event.wager_id] = wager
    return state, [], APPLIED


def _on_wager_change_requested(state: TableState | None, event: WagerChangeRequested):
    if state is None or state.closed:
        return state, [_not_open(state, event)], REJECTED
    wager = state.pending.get(event.wager_id)
    if wager is None:
        return state, [rejected(event, "unknown_wager", f"wager {event.wager_id!r} is not in action")], REJECTED
    locked = SPEC_OF[wager[KIND]].change_locked
    if locked is not None:
        return state, [rejected(event, *locked)], REJECTED
    return state, [rejected(event, "wager_locked", f"a {wager[KIND]} wager remains on the layout until "
                            "collected or paid (§ 623a.11(a)(3), § 623a.12(2), § 623c.4)")], REJECTED


def _on_come_bets_only(state: TableState | None, event: ComeBetsOnly):
    if state is None or state.closed:
        return state, [_not_open(state, event)], REJECTED
    if event.active:
        # § 623a.10(b): only after the shooter made the come-out point, with the point off.
        ok = (state.shooter_id is not None and not state.must_pass and state.point == 0
              and state.shooter_throws > 0 and not state.come_bets_only)
        why = "come-bets-only needs a shooter who has thrown, with the point off (§ 623a.10(b))"
    else:
        ok = state.come_bets_only
        why = "come-bets-only mode is not active"
    if not ok:
        return state, [rejected(event, "come_bets_only_not_allowed", why)], REJECTED
    state.last_seq = event.seq
    state.come_bets_only = event.active
    return state, [], APPLIED


def _on_table_closed(state: TableState | None, event: TableClosed):
    if state is None or state.closed:
        return state, [_not_open(state, event)], REJECTED
    out: list = []
    # docs/rules.md: closing a table pushes every wager still pending, settled at the close's seq.
    for cohort in state.all_cohorts():
        for w in cohort.wagers.values():
            out.append(settled(w, event, "push", 0, state.rules.paytable_for(w[KIND]).name, "table closed"))
        cohort.wagers = {}
        if _HAS_MARKERS[cohort.layout]:
            cohort.cleared(event, out, "table_closed")
    state.open_cohorts = {g: None for g in GROUPS}
    state.cohorts = {g: [] for g in GROUPS}
    state.last_seq = event.seq
    state.closed = True
    _forget_settled(state, out)
    return state, out, APPLIED


_HANDLERS: dict[type, Callable[[Any, Any], tuple[Any, list, str]]] = {
    TableOpened: _on_table_opened,
    ShooterChanged: _on_shooter_changed,
    DiceThrown: _on_dice_thrown,
    WagerPlaced: _on_wager_placed,
    WagerChangeRequested: _on_wager_change_requested,
    ComeBetsOnly: _on_come_bets_only,
    TableClosed: _on_table_closed,
}
