"""The rules core's fourth round of speed tricks (issue 15) held to their plain definitions, on
generated play (hypothesis, derandomized in CI): every output the same as the plain path gives."""
from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from streams.rules import DiceThrown, ShooterChanged, TableOpened, WagerPlaced, rules_from_record
# The Python core's own tricks are tested here, on the Python core whichever core streams.rules.apply is.
from streams.rules.table import apply
from streams.rules.events import SurveillanceAlerted, WagerSettled
from streams.rules.kinds import WAGER_KINDS

KINDS = tuple(WAGER_KINDS)
_RECORD = {"large_win_alert_cents": 1}
# The 4 and the 5 made with both their combinations (two Hot Roller numbers), then a come-out 7,
# which pays the Hot Roller by the table under `pay_by_table` (§ 623c.1(g)).
_PAYS = {"large_win_alert_cents": 1, "hot_roller_come_out_seven": "pay_by_table"}
_COME_OUT_PAYS = [(1, 3), (2, 2), (1, 4), (2, 3), (3, 4)]
# Four points made (4, 5, 6, 8: the Fire Bet pays), 18 throws (the Hot Shooter pays), a seven-out.
_FOUR_POINTS = [(2, 2), (1, 3), (2, 3), (1, 4), (3, 3), (2, 4), (4, 4), (3, 5), (1, 1), (6, 6),
                (3, 3), (1, 2), (2, 4), (5, 5), (6, 4), (2, 2), (5, 5), (3, 4), (2, 2), (3, 4)]


@st.composite
def play(draw):
    """A hybrid table (every kind offered) with a small large-win threshold, wagers of every kind
    at each new shooter's come-out and between points, and a run of dice."""
    threshold = draw(st.sampled_from([0, 1, 2500, 5000, 100_000]))
    record = {"large_win_alert_cents": threshold,
              "hot_roller_come_out_seven": draw(st.sampled_from(["lose", "pay_by_table"]))}
    events = [TableOpened("T", 1, 0, "hybrid", rules_from_record(record), record)]
    dice = draw(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)), min_size=1, max_size=120))
    bets = draw(st.lists(st.tuples(st.sampled_from(KINDS), st.sampled_from([100, 300, 500, 2000])),
                         min_size=1, max_size=6))
    return threshold, events, dice, bets


def _run(threshold, events, dice, bets):
    """Plays the dice, a new shooter after each seven-out, the bets placed while their windows are
    open (a rejected bet is fine: judged and answered); every output and the state's record."""
    state, out, _ = apply(None, events[0])
    seq, n, shooter, outputs = 1, 0, 0, list(out)
    pending_shooter = True
    for d1, d2 in dice:
        if pending_shooter:
            seq += 1
            shooter += 1
            state, out, _ = apply(state, ShooterChanged("T", seq, seq, f"S{shooter}", 1,
                                                        "table_open" if shooter == 1 else "seven_out"))
            outputs += out
            pending_shooter = False
        for kind, amount in bets:
            seq += 1
            n += 1
            state, out, _ = apply(state, WagerPlaced("T", seq, seq, f"w{n}", 1 + n % 16, kind, amount))
            outputs += out
        seq += 1
        state, out, _ = apply(state, DiceThrown("T", seq, seq, d1, d2))
        outputs += out
        if state.must_pass:
            pending_shooter = True
    return state, outputs


@settings(max_examples=300)
@given(play())
@example((1, [TableOpened("T", 1, 0, "hybrid", rules_from_record(_RECORD), _RECORD)], _FOUR_POINTS,
          [(k, 500) for k in KINDS]))
@example((1, [TableOpened("T", 1, 0, "hybrid", rules_from_record(_PAYS), _PAYS)], _COME_OUT_PAYS,
          [(k, 500) for k in KINDS]))
@example((5000, [TableOpened("T", 1, 0, "hybrid", rules_from_record({"large_win_alert_cents": 5000}),
                             {"large_win_alert_cents": 5000})], _FOUR_POINTS * 3,
          [(k, a) for k in KINDS for a in (100, 2000)]))
def test_large_wins_alerted_exactly_as_the_plain_scan(case):
    """A seven-out scans its settlements for large wins only when a cohort paid, and any other
    throw forgets settled wagers (and alerts their large wins) only when it paid a Bonus Craps
    wager: the alerts are still exactly one per settlement winning at least the threshold, after
    that throw's settlements, in their order (docs/rules.md, Large wins), and a settled wager is
    no longer pending."""
    threshold, events, dice, bets = case
    state, outputs = _run(threshold, events, dice, bets)
    by_seq: dict[int, list] = {}
    for o in outputs:
        by_seq.setdefault(o.seq, []).append(o)
    for seq, outs in by_seq.items():
        wins = [o.wager_id for o in outs
                if type(o) is WagerSettled and threshold and o.won_cents >= threshold]
        alerts = [o.wager_ids[0] for o in outs if type(o) is SurveillanceAlerted and o.alert == "large_win"]
        assert alerts == wins
    assert not {o.wager_id for o in outputs if type(o) is WagerSettled} & set(state.pending)


def test_a_states_inline_kinds_are_those_offered_without_limits():
    """`apply` places inline only the kinds the state's table offers (§ 623c.4(a)) with no table
    limit set (streams/rules/table.py, `_placing_at`); a state rebuilt from its record has the same."""
    from streams.rules import TableState
    from streams.rules.kinds import COHORT_CLASS, SPEC_OF
    from streams.rules.table import _PLACING

    for table_kind in ("live", "hybrid", "fully_automated"):
        for limits in (None, {"fire": [200, 400]}, {"hot_roller": [500, 10000], "all_tall": [100, 900]}):
            record = {"limits": limits} if limits else None
            state, _, _ = apply(None, TableOpened("T", 1, 0, table_kind, rules_from_record(record), record))
            offered = {k for k in KINDS
                       if (SPEC_OF[k].table_kinds is None or table_kind in SPEC_OF[k].table_kinds)
                       and state.rules.limits_for(k) is None}
            assert set(state.placing) == offered
            for kind, (group, window_open, stakes) in state.placing.items():
                plain_group, plain_window, _, plain_stakes, spec = _PLACING[kind]
                assert (group, stakes) == (plain_group, plain_stakes) and spec.cohort is COHORT_CLASS[group]
                # None stands for the first throw's window, which apply tests inline.
                assert window_open is (None if plain_window is TableState.fire_and_bonus_window_open
                                       else plain_window)
            assert TableState.from_record(state.to_record()).placing == state.placing


def test_no_open_cohort_is_told_by_one_comparison():
    """`_on_dice_thrown` tells that no window's cohort is open by comparing `open_cohorts` with
    `_NONE_OPEN`: the same answer as `any(open_cohorts.values())` for every set of open groups,
    on a fresh state and on one rebuilt from its record."""
    from itertools import combinations

    from streams.rules import TableState
    from streams.rules.kinds import COHORT_CLASS, GROUPS
    from streams.rules.table import _NONE_OPEN

    opened, _, _ = apply(None, TableOpened("T", 1, 0, "hybrid", rules_from_record(None), None))
    for state in (opened, TableState.from_record(opened.to_record())):
        for n in range(len(GROUPS) + 1):
            for open_groups in combinations(GROUPS, n):
                for g in GROUPS:
                    state.open_cohorts[g] = COHORT_CLASS[g](f"{g}-2") if g in open_groups else None
                assert (state.open_cohorts != _NONE_OPEN) == any(state.open_cohorts.values()) == bool(open_groups)


def _ids_as_defined(outputs):
    """Every output's id as `output_id` defines it (table, seq, position among the outputs of its
    event), a settlement's as `settlement_id` does, a rejection's as `rejected` does."""
    from streams.rules.events import EventRejected, settlement_id

    position: dict[int, int] = {}
    for o in outputs:
        i = position.get(o.seq, 0)
        position[o.seq] = i + 1
        if type(o) is WagerSettled:
            assert o.id == settlement_id(o.table_id, o.seq, o.wager_id)
        elif type(o) is EventRejected:
            assert o.id == f"{o.table_id}/{o.seq}/rejected"
        else:
            assert o.id == f"{o.table_id}/{o.seq}/{i}", (o, i)


@settings(max_examples=200)
@given(play())
@example((1, [TableOpened("T", 1, 0, "hybrid", rules_from_record(_RECORD), _RECORD)], _FOUR_POINTS,
          [(k, 500) for k in KINDS]))
def test_marker_ids_as_output_id_defines_them(case):
    """The marker sites write `output_id` out (streams/rules/wager.py, `INDEX_TEXT`): the same ids."""
    state, outputs = _run(*case)
    _ids_as_defined(outputs)


def test_marker_ids_beyond_the_kept_texts():
    """An event with more outputs than `INDEX_TEXT` holds: a come-out 7 collecting 300 Bonus Craps
    wagers clears its markers at position 300, its id formatted from the int."""
    from streams.rules.wager import INDEX_TEXT

    state, _, _ = apply(None, TableOpened("T", 1, 0, "live", rules_from_record(None), None))
    state, _, _ = apply(state, ShooterChanged("T", 2, 2, "S", 1, "table_open"))
    for i in range(300):
        state, out, _ = apply(state, WagerPlaced("T", 3 + i, 3 + i, f"w{i}", 1 + i % 16, "all_small", 100))
        assert not out
    state, out, _ = apply(state, DiceThrown("T", 303, 303, 3, 4))
    assert len(out) == 301 > len(INDEX_TEXT) and out[-1].id == "T/303/300"
    _ids_as_defined(out)


def test_every_cohort_made_as_cohort_init_makes_it():
    """Each kind's cohort writes `Cohort.__init__` out (streams/rules/wager.py): the same id, a dict
    of its own when none is given, the one given otherwise; and its record round trip."""
    from streams.rules.kinds import COHORT_CLASS
    from streams.rules.wager import Cohort

    for group, cls in COHORT_CLASS.items():
        plain = Cohort.__new__(cls)
        Cohort.__init__(plain, f"{group}-7")
        a, b = cls(f"{group}-7"), cls(f"{group}-7")
        assert (a.cohort_id, a.wagers) == (plain.cohort_id, plain.wagers) == (f"{group}-7", {})
        assert a.wagers is not b.wagers
        given = {"w1": ("w1", 3, "fire", 500, 9)}
        c = cls(f"{group}-9", given)
        assert c.wagers is given and c.cohort_id == f"{group}-9"
        assert cls.from_record(c.to_record()).to_record() == c.to_record()
