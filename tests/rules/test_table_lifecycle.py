"""Opening, closing, reopening, duplicates and serialization of a table (docs/rules.md "Readings",
"Bad input"; the Rules Submission § 601a.2 in force is the latest opening's)."""
import json

import pytest

from craps_streams.rules import (
    EventRejected,
    MarkerCleared,
    MarkerPlaced,
    SurveillanceAlerted,
    TableState,
    WagerSettled,
    apply,
    record_to_event,
)

from .table_script import Script, assert_settled, output_bytes, snapshot

ALL = [("f", "fire", 500), ("s", "all_small", 100), ("t", "all_tall", 200), ("a", "all_or_nothing", 300),
       ("h", "hot_roller", 400), ("j", "hot_shooter", 600)]


def busy_table(rules=None):
    """Wagers of every kind in action with marks, a second window's wagers not yet in action."""
    s = Script().open("hybrid", rules)
    s.shooter("ann", 3)
    for wid, kind, cents in ALL:
        assert s.wager(wid, kind, cents, 3) == []
    s.roll(1, 3)
    s.roll(2, 2)           # point 4 made: Fire 1 point; Hot Roller number 4; Bonus total 4
    s.roll(5, 6)           # 11
    s.roll(5, 5)           # point 10 on
    return s


def test_close_pushes_every_pending_wager_at_the_close_seq_rules_md():
    """docs/rules.md: closing a table pushes every wager still pending (stake returned), settled at the
    close's seq; every layout is cleared."""
    s = busy_table()
    s.throw(7)                                    # seven-out: everything in action settles
    s.shooter("bob", 4, "seven_out")
    for wid, kind, cents in ALL:                  # a new window's wagers, not yet in action
        s.wager("n" + wid, kind, cents, 4)
    s.roll(1, 3)                                  # now in action (point 4)
    out = s.close()
    close = s.seq
    settled = [o for o in out if type(o) is WagerSettled]
    assert sorted(w.wager_id for w in settled) == sorted("n" + wid for wid, _, _ in ALL)
    for w in settled:
        assert_settled(s, w.wager_id, "push", 0, seq=close, detail="table closed")
    cleared = [o for o in out if type(o) is MarkerCleared]
    assert sorted(c.layout for c in cleared) == ["bonus_craps", "fire", "hot_roller"]
    assert all(c.reason == "table_closed" and c.seq == close for c in cleared)
    assert s.state.closed and s.state.pending == {} and s.state.last_seq == close


def test_close_pushes_wagers_still_in_their_window_rules_md():
    s = Script().open("hybrid")
    s.shooter("ann", 1)
    s.wager("f", "fire", 100, 1)
    s.wager("h", "hot_shooter", 100, 1)
    s.close()
    assert_settled(s, "f", "push", 0, seq=s.seq)
    assert_settled(s, "h", "push", 0, seq=s.seq)


def test_close_with_nothing_pending_settles_nothing():
    """docs/rules.md, Closing a table: nothing pending, nothing settled."""
    s = Script().open("live")
    assert s.close() == []
    assert s.state.closed


def test_reopen_after_close_new_rules_fresh_game_601a_2():
    s = busy_table({"bonus_paytable": "standard"})
    s.resend(3)                                   # one duplicate before the close
    s.close()
    assert s.open("live", {"bonus_paytable": "alternate"}).last == []
    st = s.state
    assert not st.closed and st.table_kind == "live" and st.shooter_id is None and st.point == 0
    assert st.pending == {} and st.hand == 0 and st.opened_seq == s.seq
    assert st.duplicates == 1, "the duplicate count survives a reopening"
    assert st.rules.bonus.name == "bonus-623b.3"
    s.shooter("cy", 1)
    s.wager("s", "all_small", 100, 1)
    s.throw(2, 3, 4, 5, 6)
    assert s.settlements("s")[-1].won_cents == 3000
    s.rejected("hot_shooter_live_table", s.wager, "hs", "hot_shooter", 100, 1)


def test_table_opened_on_an_open_table_rejected():
    """docs/rules.md, Bad input (engine reading): a TableOpened on an open table is `table_already_open`."""
    s = busy_table()
    before = snapshot(s.state)
    r, = s.open("fully_automated", {"hot_roller_paytable": "B"}).last
    assert type(r) is EventRejected and r.reason == "table_already_open"
    assert snapshot(s.state) == before


@pytest.mark.parametrize("index", [0, 1, 3, -1])
def test_duplicate_counted_never_applied_rules_md(index):
    """docs/rules.md Duplicates: seq at or below the last applied seq: counted, no output."""
    s = busy_table()
    before = snapshot(s.state)
    assert s.resend(index) == []
    after = snapshot(s.state)
    assert after.pop("duplicates") == before.pop("duplicates") + 1
    assert after == before


def test_duplicate_even_if_different_content_rules_md():
    """A seq at or below the last applied is a duplicate whatever it carries."""
    s = busy_table()
    s.throw(7)
    before = snapshot(s.state)
    earlier = s.record("DiceThrown", seq=s.seq - 2, die1=9, die2=9, valid=True)
    assert s.send(earlier) == []
    assert s.send(s.record("TableClosed", seq=1)) == []
    assert s.state.duplicates == before["duplicates"] + 2 and not s.state.closed


def test_rejected_event_resent_is_rejected_again_not_a_duplicate():
    """docs/rules.md, Duplicates: a rejected event was never applied, so its seq is not a duplicate."""
    s = busy_table()
    bad = s.record("WagerPlaced", wager_id="x", position=1, wager="fire", amount_cents=100)
    assert s.send(bad)[0].reason == "out_of_window"
    assert s.send(dict(bad))[0].reason == "out_of_window"
    assert s.state.duplicates == 0


def test_duplicate_after_close_is_a_duplicate_not_a_rejection():
    """docs/rules.md, Duplicates: counted even on a closed table."""
    s = busy_table()
    s.close()
    assert s.resend(-2) == [] and s.resend(-1) == []
    assert s.state.duplicates == 2


def test_output_ids_are_deterministic_and_unique():
    """docs/rules.md (nothing paid twice): settlement ids `{table}/{seq}/settle/{wager}`; markers and
    alerts `{table}/{seq}/{index}`."""
    s = busy_table({"large_win_alert_cents": 1})
    s.throw(10, 4, 4, 5, 5, 6, 6, 8, 8, 9, 7)     # Fire: 4, 10, 5, 6, 8 made: 249 to 1
    s.close()
    ids = [o.id for o in s.outputs]
    assert len(ids) == len(set(ids))
    by_seq = {}
    for o in s.outputs:
        by_seq.setdefault(o.seq, []).append(o)
    for seq, outs in by_seq.items():
        for i, o in enumerate(outs):
            if type(o) is WagerSettled:
                assert o.id == f"T1/{seq}/settle/{o.wager_id}"
            elif type(o) in (MarkerPlaced, MarkerCleared, SurveillanceAlerted):
                assert o.id == f"T1/{seq}/{i}"
    assert any(type(o) is SurveillanceAlerted and o.alert == "large_win" for o in s.outputs)


# ---------------------------------------------------------------- serialization


@pytest.mark.parametrize("stage", ["opened", "shooter", "in_window", "busy", "point_on_after_change",
                                   "come_bets_only", "sevened_out", "closed", "reopened"])
def test_state_record_round_trip(stage):
    """docs/rules.md (replay equals live):
    `TableState.from_record(s.to_record()).to_record() == s.to_record()`, through JSON too,
    and the restored state plays on exactly like the original."""
    s = Script().open("hybrid", {"surrender": {"hot_roller": "push"}, "limits": {"all_tall": [100, 900]}})
    if stage != "opened":
        s.shooter("ann", 3)
    if stage not in ("opened", "shooter"):
        for wid, kind, cents in ALL:
            s.wager(wid, kind, cents, 3)
    if stage not in ("opened", "shooter", "in_window"):
        s.roll(1, 3)
        s.roll(2, 2)
        s.roll(5, 6)
        s.roll(2, 3)
    if stage == "point_on_after_change":
        s.shooter("bob", 4, "voluntary")
        s.wager("bf", "fire", 100, 4)
    if stage == "come_bets_only":
        s.roll(4, 1)
        s.come_bets_only(True)
        s.roll(2, 2)
    if stage in ("sevened_out", "closed", "reopened"):
        s.throw(7)
        s.wager("nf", "fire", 200, 5)
    if stage in ("closed", "reopened"):
        s.close()
    if stage == "reopened":
        s.resend(2)
        s.open("live", {"hot_roller_paytable": "B"})
    record = s.state.to_record()
    restored = TableState.from_record(json.loads(json.dumps(record)))
    assert restored.to_record() == record
    assert restored.pending.keys() == s.state.pending.keys()

    # play on both with the same events
    twin = Script(state=restored, seq=s.seq)
    mark = len(s.outputs)
    for x in (s, twin):
        if x.state.closed:
            x.open("hybrid")
        if x.state.shooter_id is None:
            x.shooter("zed", 9)
        if x.state.must_pass:
            x.shooter("zed", 9, "seven_out")
        if x.state.come_bets_only:
            x.come_bets_only(False)
        for wid, kind, cents in ALL:              # accepted or rejected: the same on both
            x.wager("z" + wid, kind, cents, 9)
        x.throw(5, 9, 9, 4, 4, 6, 8, 8, 10, 10, 6, 3, 12, 6, 7)
        x.close()
    assert any(type(o) is WagerSettled for o in twin.outputs)
    assert output_bytes(s.outputs[mark:]) == output_bytes(twin.outputs)
    assert s.state.to_record() == twin.state.to_record()


def test_state_record_is_json():
    """docs/rules.md (Money is integer cents): the state record is plain JSON."""
    s = busy_table()
    text = json.dumps(s.state.to_record(), sort_keys=True)
    assert json.loads(text) == s.state.to_record()


def test_unknown_table_state_stays_none():
    """docs/rules.md, Bad input: an unknown table is rejected and no table comes into being."""
    state, out, _ = apply(None, record_to_event(
        {"type": "DiceThrown", "table_id": "nowhere", "seq": 4, "ts": 0, "die1": 1, "die2": 1}))
    assert state is None and out[0].reason == "unknown_table"
