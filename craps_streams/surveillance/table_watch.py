"""One table's surveillance: its dice, its hold's tail probabilities, its positions.

`observe(settings, watch, state, applied, outputs)` takes the input events the rules core applied
for one input (the input itself, then any held events its arrival released, in seq order) and the
outputs they produced, updates the table's `TableWatch` and returns the alerts:

- `dice_bias`: a dice CUSUM crossed its threshold (`craps_streams.surveillance.dice_watch`);
- `hold_anomaly`: P(house win <= observed | fair dice) of a wager kind and paytable at or below
  `tail_alert` (`craps_streams.surveillance.hold_tail`);
- `position_anomaly`: a position's results on a wager kind improbable under fair dice at or below
  `position_alert` (`craps_streams.surveillance.position_watch`).

A settlement is decided by the dice when its deciding event is a valid throw; pushes at a table's
close or at a surrender of the dice are not, and are left out of every test. The state is stored
with the table (beside its hold book) in the same transaction as the settlements and the alerts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import msgspec

from craps_streams.odds import wager_odds
from craps_streams.rules import DiceThrown, SurveillanceAlerted, TableOpened, WagerSettled
from craps_streams.surveillance.dice_watch import DiceBook, DiceWatch, describe
from craps_streams.surveillance.hold_tail import HoldTail
from craps_streams.surveillance.position_watch import PositionLine, tests_of
from craps_streams.surveillance.tails import binomial_tail, kl_divergence, unit_distribution

REARM = 10.0  # an alerted line re-arms once its tail probability is back above REARM x threshold


class Thresholds(msgspec.Struct, frozen=True):
    """The casino's surveillance settings (worker and replay must agree: both take them from the
    settings, craps_streams/settings.py)."""

    tail_alert: float = 1e-9  # hold_anomaly at or below this tail probability
    check_z: float = 3.0  # a hold line's tail is evaluated only once its z is at or below -check_z
    position_alert: float = 1e-9
    dice: DiceWatch = msgspec.field(default_factory=DiceWatch)


@dataclass(slots=True)
class TableWatch:
    dice: DiceBook = field(default_factory=DiceBook)
    holds: dict = field(default_factory=dict)  # (wager, paytable) -> HoldTail
    positions: dict = field(default_factory=dict)  # (position, wager, paytable) -> PositionLine
    last_throw_seq: int = 0  # seqs of the last two valid throws (first-throw decisions)
    prev_throw_seq: int = 0
    # (wager, paytable) -> UnitDistribution under the rules in force (not stored; emptied when the
    # table opens, so a reopening under new rules is read afresh).
    units: dict = field(default_factory=dict)
    raised: dict = field(default_factory=dict)  # alert kind -> alerts raised at this table

    def to_record(self) -> dict:
        return {
            "dice": self.dice.to_record(),
            "holds": {f"{w}|{p}": t.to_record() for (w, p), t in sorted(self.holds.items())},
            "positions": {f"{pos}|{w}|{p}": line.to_record()
                          for (pos, w, p), line in sorted(self.positions.items())},
            "throw_seqs": [self.prev_throw_seq, self.last_throw_seq],
            "raised": dict(sorted(self.raised.items())),
        }

    @classmethod
    def from_record(cls, r: dict | None) -> "TableWatch":
        """A stored watch; None (a record stored before the watch existed) gives a fresh one."""
        if r is None:
            return cls()
        positions = {}
        for k, v in r["positions"].items():
            pos, w, p = k.split("|", 2)
            positions[(int(pos), w, p)] = PositionLine.from_record(v)
        return cls(DiceBook.from_record(r["dice"]),
                   {tuple(k.split("|", 1)): HoldTail.from_record(v) for k, v in r["holds"].items()},
                   positions, r["throw_seqs"][1], r["throw_seqs"][0], raised=dict(r.get("raised", {})))

    def smallest_position_tail(self) -> float:
        """The smallest position p-value as last evaluated (1.0 if none could alert), for metrics."""
        return min((line.last_p for line in self.positions.values()), default=1.0)


def _alert(state, s_or_event, kind: str, suffix: str, message: str, wager_ids=()) -> SurveillanceAlerted:
    table, seq = s_or_event.table_id, s_or_event.seq
    return SurveillanceAlerted(f"{table}/{seq}/{kind}{suffix}", table, seq, s_or_event.ts, kind,
                               state.shooter_id or "", message, tuple(wager_ids))


def settled_groups(outputs) -> dict:
    """The settlements among `outputs` by decision: (deciding seq, wager kind, paytable) -> the
    settlements in output order, the decisions in the order they first appear. One pass, shared by
    the hold book (`HoldWatch.watch`) and the table's surveillance (`table_watch.observe`), which
    both group a throw's settlements so (they grouped them each on their own before: about a
    fifth of the booking's time)."""
    groups: dict = {}
    for o in outputs:
        if type(o) is WagerSettled:
            key = (o.seq, o.wager, o.paytable)
            group = groups.get(key)
            if group is None:
                groups[key] = [o]
            else:
                group.append(o)
    return groups


def observe(settings: Thresholds, watch: TableWatch, state, applied: list, outputs: list,
            groups: dict | None = None) -> list:
    # The settlements by deciding seq, wager kind and paytable (`settled_groups`; given by the
    # settling step, which made them for the hold book): the decisions `_settled` books, in the
    # order they first appear (a throw's groups are then picked by seq).
    if groups is None:
        groups = settled_groups(outputs)
    alerts: list = []
    dice_settings = settings.dice
    for event in applied:
        if type(event) is not DiceThrown:
            if type(event) is TableOpened:
                watch.units = {}
            continue
        crossed = dice_settings.throw(watch.dice, event.die1, event.die2, event.valid)
        if not event.valid:
            continue
        seq = event.seq
        watch.prev_throw_seq, watch.last_throw_seq = watch.last_throw_seq, seq
        if crossed:
            book = watch.dice
            alerts.append(dice_alert(state, event, book, crossed))
            book.since = book.throws
            book.cells_since = [0] * 36
        if groups:
            decided = {(w, p): g for (at, w, p), g in groups.items() if at == seq}
            if decided:
                alerts += _settled(settings, watch, state, decided)
    if alerts:
        raised = watch.raised
        for a in alerts:
            raised[a.alert] = raised.get(a.alert, 0) + 1
    return alerts


def _settled(settings: Thresholds, watch: TableWatch, state, decisions: dict) -> list:
    """The settlements decided by one valid throw, by (wager kind, paytable): one decision per
    wager kind and paytable for the hold, one result per wager for its position."""
    alerts = []
    rules = state.rules
    first = watch.prev_throw_seq
    units, positions = watch.units, watch.positions
    line_of = positions.get
    for (wager, paytable), group in decisions.items():
        known = units.get((wager, paytable))
        if known is None:
            unit = unit_distribution(wager_odds(wager, rules))
            known = units[(wager, paytable)] = (unit, tests_of(wager, unit))
        unit, tests = known
        first_test = tests[0] if tests and tests[0][2] is None else None
        screen = math.log(len(tests) / (REARM * settings.position_alert)) - 12.0 if tests else 0.0
        if first_test is not None:
            p_first = first_test[1]
            q_first = 1 - p_first
        stake = win = 0
        for s in group:
            cents, outcome = s.stake_cents, s.outcome
            stake += cents
            key = (s.position, wager, paytable)
            line = line_of(key)
            if line is None:
                line = positions[key] = PositionLine()
            line.wagers += 1
            at_first = s.placed_seq > first
            if at_first:
                line.first_throw += 1
            results = line.results
            if outcome == "lose":
                win += cents
                results[1] = results.get(1, 0) + 1
                # A loss cannot make "lost" or "won X to 1" more extreme (and a loss on the first
                # throw not the first-throw test either): {X <= x} implies {X + B <= x + 1}. Only
                # the tests that may have moved towards an alert are evaluated.
                if at_first or first_test is None:
                    continue
                # The hot path (a Hot Roller or Bonus Craps wager lost after its first throw): a
                # chi-square screen without a logarithm, sound while log(n + 1) <= 12 (n < 160,000).
                n = line.wagers
                expected = n * p_first
                x = line.first_throw
                if x >= expected or (n < 160_000 and (x - expected) ** 2 / (expected * q_first) < screen):
                    continue
                run = tests[:1]
            else:
                won = s.won_cents
                win -= won
                value = -(won // cents) if outcome == "win" else 0
                results[value] = results.get(value, 0) + 1
                run = tests
            alert = _check_position(settings, state, s, line, tests, run)
            if alert is not None:
                alerts.append(alert)
        tail = watch.holds.get((wager, paytable))
        if tail is None:
            tail = watch.holds[(wager, paytable)] = HoldTail()
        tail.add_decision(stake, win)
        # When the house collects every stake (the largest result per unit), P(H <= observed)
        # cannot fall: {H_n <= h} implies {H_n + Y S <= h + S} as Y <= 1. Only other decisions
        # can bring an alert, so only they are checked.
        if win < stake:
            alert = _check_hold(settings, state, group[-1], tail, unit)
            if alert is not None:
                alerts.append(alert)
    return alerts


def _check_hold(settings: Thresholds, state, s: WagerSettled, tail: HoldTail, unit):
    z = tail.z_score(unit)
    if z > -settings.check_z:
        tail.alerted = False
        return None
    p, exact = tail.tail(unit)
    if p > settings.tail_alert:
        if p > REARM * settings.tail_alert:
            tail.alerted = False
        return None
    if tail.alerted:
        return None
    tail.alerted = True
    return hold_alert(settings, state, s, (tail.decisions, tail.handle_cents, tail.house_win_cents), unit, p,
                      exact, z)


# The alerts' wording, one function each: `observe` here and the native watch
# (craps_streams/surveillance/native_watch.py) word their alerts by these.


def dice_alert(state, event: DiceThrown, book: DiceBook, crossed: list[str]) -> SurveillanceAlerted:
    """The `dice_bias` alert of a throw whose CUSUMs `crossed` (read from the book's `cells_since`
    and `invalid`, before the book is reset for a new excursion)."""
    return _alert(state, event, "dice_bias", "", f"table {event.table_id} dice bias: {describe(book, crossed)}")


def hold_alert(settings: Thresholds, state, s: WagerSettled, line: tuple[int, int, int], unit, p: float,
               exact: bool, z: float) -> SurveillanceAlerted:
    """The `hold_anomaly` alert of a hold line, `line` its (decisions, handle, house win) in cents."""
    decisions, handle_cents, house_win_cents = line
    how = "exact" if exact else "Chernoff bound"
    expected = unit.mean * handle_cents
    return _alert(state, s, "hold_anomaly", f"/{s.wager}/{s.paytable}",
                  f"table {s.table_id} {s.wager} ({s.paytable}): house win {house_win_cents} cents "
                  f"against {expected:.0f} expected on {handle_cents} cents decided by the dice in "
                  f"{decisions} decisions; P(house win this low | fair dice) <= {p:.3g} ({how}; "
                  f"alert at {settings.tail_alert:g}), z = {z:.2f}", (s.wager_id,))


def position_test_words(name: str, x: int, n: int, expected: float) -> str:
    """The test that gave a position's p-value, as its alert says it."""
    return f"{name}: {x} of {n} wagers (expected {expected:.1f})"


def position_alert(settings: Thresholds, state, s: WagerSettled, which: str, p: float,
                   tests: int) -> SurveillanceAlerted:
    """The `position_anomaly` alert of a position's line: `which` test gave the p-value `p`
    (Bonferroni over `tests` tests)."""
    return _alert(state, s, "position_anomaly", f"/{s.position}/{s.wager}/{s.paytable}",
                  f"table {s.table_id} position {s.position} {s.wager} ({s.paytable}): {which}; "
                  f"P(results this lucky | fair dice) = {p:.3g} (exact binomial x {tests} "
                  f"tests; alert at {settings.position_alert:g}): past-posting or collusion?", (s.wager_id,))


def position_tail(line: PositionLine, tests, alert_at: float = 1.0, run=None) -> tuple[float, str]:
    """(Bonferroni p-value of the position's line under `tests` (`position_watch.tests_of`), the
    test that gave it), over the tests in `run` (all by default). Tails that provably cannot bring
    the p-value to `alert_at` are not evaluated (they count as 1)."""
    k = len(tests)
    n = line.wagers
    best, which = 1.0, ""
    # The tail beyond x is at least P(X = x) >= exp(-n KL(x/n, p0)) / (n + 1) (method of types,
    # `tails.binomial_tail_floor`) and KL <= chi-square: tails whose floor is above `alert_at`
    # cannot alert and are not evaluated. The chi-square screen costs no logarithm.
    limit = math.log(k / (alert_at * (n + 1)))
    for name, p0, key, lower in (tests if run is None else run):
        x = line.first_throw if key is None else line.results.get(key, 0)
        expected = n * p0
        if (lower and x >= expected) or (not lower and x <= expected):
            continue
        if (x - expected) ** 2 / (expected * (1 - p0)) < limit:
            continue
        if n * kl_divergence(x / n, p0) < limit:
            continue
        p = binomial_tail(n, x, p0, lower)
        if p < best:
            best, which = p, position_test_words(name, x, n, expected)
    return min(1.0, k * best), which


def _check_position(settings: Thresholds, state, s: WagerSettled, line: PositionLine, tests, run):
    p, which = position_tail(line, tests, REARM * settings.position_alert, run)
    full = len(run) == len(tests)
    if full:
        line.last_p = p
    if p > settings.position_alert:
        if full and p > REARM * settings.position_alert:
            line.alerted = False
        return None
    if line.alerted:
        return None
    line.alerted = True
    return position_alert(settings, state, s, which, p, len(tests))
