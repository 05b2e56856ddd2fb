"""The accelerator settles by the facts the Python core holds, not by its own: a paytable added
and selected by a Rules Submission, and the words of markers, details and alerts changed in Python
(monkeypatched, then handed over again by `native.configure()`), change what the accelerator
settles and writes exactly as they change the Python core, with no Rust edit."""
from __future__ import annotations

import pytest

from craps_streams.accelerator import rules as native
from craps_streams.rules import bonus_craps, fire_bet, hot_roller, hot_shooter, paytables, submission
from craps_streams.rules import table as python_table
from craps_streams.rules.events import MarkerPlaced, SurveillanceAlerted, WagerSettled
from craps_streams.rules.paytables import PUSH, BonusPaytable, Paytable
from craps_streams.sim.floor import floor_events
from tests.native.lockstep import CORE_PATH, lockstep, requires_accelerator
from tests.native.lockstep import events_of as _events

pytestmark = requires_accelerator

# A casino's own paytables, added in Python and chosen by name (or, the Fire Bet's, by its bands).
RULES = {
    "fire_custom": {"2": 3, "3": 7, "4": 50, "6": 400},
    "bonus_paytable": "bonus-test",
    "hot_roller_paytable": "hot-roller-test",
    "hot_shooter_paytable": "hot-shooter-test",
    "hot_roller_come_out_seven": "pay_by_table",
    "large_win_alert_cents": 1500,
}


@pytest.fixture
def changed_facts(monkeypatch):
    monkeypatch.setitem(submission.BONUS_PAYTABLES, "bonus-test", BonusPaytable("bonus-test", 7, 8, 90))
    monkeypatch.setitem(submission.HOT_ROLLER_PAYTABLES, "hot-roller-test",
                        Paytable("hot-roller-test", ((1, 2), (3, 15), (6, 500))))
    monkeypatch.setitem(submission.HOT_SHOOTER_PAYTABLES, "hot-shooter-test",
                        Paytable("hot-shooter-test", ((4, PUSH), (10, 3), (20, 9))))
    texts = {
        (fire_bet, "POINT_MARKER"): "fire-point:{point}",
        (fire_bet, "SETTLED_DETAIL"): "{count} distinct points",
        (bonus_craps, "TOTAL_MARKER"): "bonus-total:{total}",
        (bonus_craps, "COMPLETE_DETAIL"): "{wager} made",
        (bonus_craps, "SEVEN_DETAIL"): "a 7 against {marked}",
        (hot_roller, "COMBO_MARKER"): "{low}&{high}",
        (hot_roller, "NUMBER_MARKER"): "all of {number}",
        (hot_roller, "SETTLED_DETAIL"): "{count} numbers",
        (hot_roller, "COME_OUT_SEVEN_DETAIL"): "come-out 7 after {count} numbers",
        (hot_shooter, "SETTLED_DETAIL"): "{throws} rolls",
        (python_table, "FOUR_POINTS_ALERT"): "FOUR POINTS: {table_id}/{shooter_id}/{position}: {wagers} ({counts})",
        (python_table, "FIRE_COHORT_COUNT"): "{cohort_id}={points}",
        (python_table, "LARGE_WIN_ALERT"): "LARGE WIN {won_cents} on {wager} {wager_id} at {position} [{detail}]",
    }
    for (module, name), text in texts.items():
        monkeypatch.setattr(module, name, text)
    native.configure()
    yield
    monkeypatch.undo()
    native.configure()  # the facts as they are again, for the tests after this one


def test_the_accelerator_settles_and_words_as_the_python_core_after_a_change(changed_facts):
    events = list(_events(floor_events(6, 3, 21, bad_rate=0.02, rules=RULES, voluntary_rate=0.02)))
    counts = lockstep(CORE_PATH, events)
    assert counts["native"]["native"] > 0.9 * counts["steps"], counts
    # The changes are in force (so the comparison above is of the changed facts, on both sides).
    from craps_streams.rules.table import apply

    tables: dict = {}
    outputs = []
    for e in events:
        state, out, _ = apply(tables.get(e.table_id), e)
        if state is not None:
            tables[e.table_id] = state
        outputs += out
    settled = [o for o in outputs if type(o) is WagerSettled]
    papers = {o.paytable for o in settled}
    assert {"bonus-test", "hot-roller-test", "hot-shooter-test"} <= papers, papers
    assert any(o.paytable.startswith("fire-custom-2x3-3x7") for o in settled)
    details = {o.detail for o in settled}
    assert any(d.endswith("distinct points") for d in details)
    assert any(d.endswith(" rolls") for d in details)
    assert any(d.startswith("a 7 against") for d in details)
    markers = {o.marker for o in outputs if type(o) is MarkerPlaced}
    assert any(m.startswith("fire-point:") for m in markers) and any("&" in m for m in markers)
    alerts = [o.message for o in outputs if type(o) is SurveillanceAlerted]
    assert any(m.startswith("LARGE WIN") for m in alerts), alerts[:5]


def test_the_facts_handed_over_are_the_python_core_s():
    """Every marker and detail of a small count is rendered from the Python text it comes from."""
    facts = native.facts()
    assert facts["point_marker"][6] == fire_bet.POINT_MARKER.format(point=6)
    assert facts["combo_marker"][6 * 2 + 4] == hot_roller.COMBO_MARKER.format(low=3, high=5)
    assert facts["fire_stakes"] == (submission.FIRE_MIN_CENTS, submission.FIRE_MAX_CENTS, submission.FIRE_STEP_CENTS)
    assert facts["table_kinds"][-1] == hot_shooter.HOT_SHOOTER_TABLE_KINDS
    assert facts["large_win_message"] is python_table.large_win_message
    assert facts["push_odds"] == paytables.PUSH
    # The numbers the table's state machine marks by: the points, Bonus Craps totals, Hot Roller
    # combinations (native/src/table.rs, bonus_craps.rs, hot_roller.rs hold none of them).
    assert facts["point_numbers"] == list(python_table.POINT_NUMBERS)
    assert facts["bonus_needs"][1:] == [bonus_craps.NEEDS[k] for k in ("all_small", "all_tall", "all_or_nothing")]
    assert facts["combo_bits"][6 * 1 + 5] == hot_roller.COMBO_BIT[(2, 6)] and facts["combo_bits"][6 * 5 + 1] == 0
    assert facts["number_masks"][8] == hot_roller.NUMBER_MASK[8] and facts["number_masks"][7] == 0


def test_the_points_are_the_python_core_s(monkeypatch):
    """A point number taken out in Python (a table where a 10 sets no point) changes what the
    accelerator settles exactly as it changes the Python core: in lockstep on a floor."""
    monkeypatch.setattr(python_table, "POINT_NUMBERS", (4, 5, 6, 8, 9))
    native.configure()
    try:
        counts = lockstep(CORE_PATH, _events(floor_events(2, 1, 5, bad_rate=0.0)))
        assert counts["native"]["native"] > 0.9 * counts["steps"], counts
    finally:
        monkeypatch.undo()
        native.configure()


@pytest.mark.parametrize("fact, value", [("point_numbers", [3]), ("combo_bits", [1] * 36),
                                         ("bonus_needs", [0, 1 << 14, 0, 0]), ("number_masks", [1 << 20] * 13)])
def test_facts_the_native_core_cannot_keep_are_refused(fact, value):
    """Bits beyond what its marks hold, combinations sharing a bit, a point that is no total: `init`
    refuses them, saying which, and the context in use stays."""
    from craps_streams.rules import events
    from craps_streams.rules.submission import rules_from_record
    from craps_streams.rules.verdict import APPLIED

    facts = {**native.facts(), fact: value}
    with pytest.raises(ValueError, match=fact):
        native._native.init(events, APPLIED, native._fallback, native._view, rules_from_record, facts)
    counts = lockstep(CORE_PATH, _events(floor_events(1, 1, 6, bad_rate=0.0)))
    assert counts["native"]["native"] > 0.9 * counts["steps"], counts


class _Shifted:
    """A DiceThrown look-alike whose `seq` attribute is not what its `seq` slot holds: the layout
    a msgspec storing its fields otherwise would show to the accelerator's raw slot reads."""
    __slots__ = ("table_id", "seq", "ts", "die1", "die2", "valid")
    __struct_fields__ = __slots__

    def __init__(self, *values):
        for name, value in zip(self.__slots__, values):
            object.__setattr__(self, name, value)

    def __getattribute__(self, name):
        return object.__getattribute__(self, "ts" if name == "seq" else name)


def test_structs_laid_out_otherwise_are_refused_and_the_accelerator_in_use_stays():
    """native/src/slots.rs `check_layout`: a class whose slot does not hold its field's value, or
    whose field is no slot, is refused by `init` with the reason; the context in use is kept."""
    import types

    from craps_streams.rules import events
    from craps_streams.rules.submission import rules_from_record
    from craps_streams.rules.verdict import APPLIED

    class NoSlots:  # fields in the instance's __dict__
        __struct_fields__ = ("table_id",)

        def __init__(self, table_id):
            self.table_id = table_id

    for odd, reason in ((_Shifted, "does not hold the field's value"), (NoSlots, "is not a slot")):
        fake = types.SimpleNamespace(**vars(events))
        fake.INPUT_TYPES = {**events.INPUT_TYPES, "DiceThrown": odd}
        with pytest.raises(TypeError, match=reason):
            native._native.init(fake, APPLIED, native._fallback, native._view, rules_from_record, native.facts())
    counts = lockstep(CORE_PATH, _events(floor_events(2, 1, 4, bad_rate=0.02)))
    assert counts["native"]["native"] > 0.9 * counts["steps"], counts


def test_a_refused_accelerator_leaves_the_python_core_saying_why():
    """At import (craps_streams/accelerator/rules.py): the refusal becomes PROBLEM and the Python core runs."""
    import subprocess
    import sys

    import inspect

    script = (
        "from craps_streams.rules import events\n"  # the accelerator not loaded yet
        + inspect.getsource(_Shifted) +
        "events.INPUT_TYPES['DiceThrown'] = _Shifted\n"
        "from craps_streams.accelerator import rules as native\n"
        "print(native.rules_core('auto').name)\n"
        "print(native.PROBLEM)\n"
    )
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**__import__("os").environ, "CRAPS_CORE": "python", "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=root,
                          check=True)
    core, problem = done.stdout.splitlines()
    assert core == "python"
    assert problem.startswith("the native accelerator refused this installation: _Shifted.seq: the slot"), problem
