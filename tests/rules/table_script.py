"""A dealer's log for the rules core: each call builds one contract record, assigns `seq` and
`ts`, turns it into an event with `record_to_event` (as the shell does) and applies it.

    s = Script().open("live")
    s.shooter("ann", 3)
    s.wager("f1", "fire", 500, pos=3)
    s.throw(4, 4, 7)            # come-out 4, point made, come-out 7 (naturals)
    s.settlement("f1")          # the WagerSettled of f1, or AssertionError

Every call returns the outputs of that event; `s.outputs` holds them all, in order.
"""
from __future__ import annotations

import copy
import json

from craps_streams.rules import (
    EventRejected,
    MarkerCleared,
    MarkerPlaced,
    SurveillanceAlerted,
    TableState,
    WagerSettled,
    apply,
    output_to_record,
    record_to_event,
)

# One pair of dice per total, chosen so that no total's pair is a Hot Roller combination twice.
DICE = {2: (1, 1), 3: (1, 2), 4: (1, 3), 5: (1, 4), 6: (1, 5), 7: (3, 4), 8: (2, 6), 9: (3, 6),
        10: (4, 6), 11: (5, 6), 12: (6, 6)}

TS0 = 1_700_000_000_000


def snapshot(state):
    """A deep, comparable copy of a state's game record (None for a table never opened).

    Leaves out the feed's cursor: a rejected event was still received, so the cursor moves past its
    seq (craps_streams/rules/sequence.py) while the game stays exactly as it was (docs/rules.md, Bad input)."""
    if state is None:
        return None
    record = copy.deepcopy(state.to_record())
    del record["received_seq"]
    return record


def output_bytes(outputs) -> bytes:
    return "\n".join(json.dumps(output_to_record(o), sort_keys=True) for o in outputs).encode()


class Script:
    def __init__(self, table_id: str = "T1", *, state: TableState | None = None, seq: int = 0):
        self.table_id = table_id
        self.state = state
        self.seq = seq
        self.outputs: list = []
        self.last: list = []
        self.records: list[dict] = []  # every record sent, in order
        self.placed: dict[str, dict] = {}  # wager id -> the WagerPlaced record that was accepted

    # ------------------------------------------------------------ sending

    def record(self, type_: str, *, seq: int | None = None, **fields) -> dict:
        if seq is None:
            self.seq += 1
            seq = self.seq
        return {"type": type_, "table_id": self.table_id, "seq": seq, "ts": TS0 + 1000 * seq, **fields}

    def send(self, record: dict) -> list:
        event = record_to_event(record)
        self.records.append(record)
        self.state, out, _ = apply(self.state, event)
        self.last = out
        self.outputs.extend(out)
        return out

    def _send(self, type_: str, seq: int | None = None, **fields) -> list:
        return self.send(self.record(type_, seq=seq, **fields))

    # ------------------------------------------------------------ the dealer's vocabulary

    def open(self, kind: str = "live", rules: dict | None = None) -> Script:
        fields = {"table_kind": kind}
        if rules is not None:
            fields["rules"] = rules
        self._send("TableOpened", **fields)
        return self

    def shooter(self, shooter_id: str, pos: int = 1, reason: str = "table_open") -> list:
        return self._send("ShooterChanged", shooter_id=shooter_id, position=pos, reason=reason)

    def wager(self, wager_id: str, kind: str, cents: int, pos: int = 1) -> list:
        out = self._send("WagerPlaced", wager_id=wager_id, position=pos, wager=kind, amount_cents=cents)
        if not any(type(o) is EventRejected for o in out):
            self.placed[wager_id] = self.records[-1]
        return out

    def change(self, wager_id: str, cents: int) -> list:
        return self._send("WagerChangeRequested", wager_id=wager_id, amount_cents=cents)

    def roll(self, d1: int, d2: int, valid: bool = True) -> list:
        return self._send("DiceThrown", die1=d1, die2=d2, valid=valid)

    def throw(self, *totals: int) -> list:
        """Valid throws of these totals; returns the outputs of all of them."""
        out = []
        for t in totals:
            out += self.roll(*DICE[t])
        return out

    def come_bets_only(self, active: bool = True) -> list:
        return self._send("ComeBetsOnly", active=active)

    def close(self) -> list:
        return self._send("TableClosed")

    def resend(self, index: int = -1) -> list:
        """Send an already-sent record again (a duplicate delivery)."""
        return self.send(dict(self.records[index]))

    # ------------------------------------------------------------ checking

    def rejected(self, reason: str, action, *args, **kwargs) -> EventRejected:
        """Run `action(*args)`; assert it yields exactly one EventRejected with this reason and
        leaves the table's state record exactly as it was."""
        before = snapshot(self.state)
        dups = self.state.duplicates if self.state is not None else 0
        out = action(*args, **kwargs)
        assert len(out) == 1 and type(out[0]) is EventRejected, out
        r = out[0]
        assert r.reason == reason, (r.reason, r.message)
        assert r.event == self.records[-1], "the rejection carries the offending event"
        assert r.seq == self.records[-1]["seq"] and r.table_id == self.records[-1]["table_id"]
        assert r.message
        assert snapshot(self.state) == before, "a rejected event must leave the state unchanged"
        if self.state is not None:
            assert self.state.duplicates == dups
        return r

    def settlements(self, wager_id: str | None = None) -> list[WagerSettled]:
        return [o for o in self.outputs if type(o) is WagerSettled
                and (wager_id is None or o.wager_id == wager_id)]

    def settlement(self, wager_id: str) -> WagerSettled:
        found = self.settlements(wager_id)
        assert len(found) == 1, f"{wager_id} settled {len(found)} times: {found}"
        return found[0]

    def unsettled(self, wager_id: str) -> bool:
        return not self.settlements(wager_id) and wager_id in self.state.pending

    def markers(self, layout: str | None = None, out=None) -> list[MarkerPlaced]:
        return [o for o in (self.outputs if out is None else out)
                if type(o) is MarkerPlaced and (layout is None or o.layout == layout)]

    def cleared(self, layout: str | None = None, out=None) -> list[MarkerCleared]:
        return [o for o in (self.outputs if out is None else out)
                if type(o) is MarkerCleared and (layout is None or o.layout == layout)]

    def alerts(self, alert: str | None = None, out=None) -> list[SurveillanceAlerted]:
        return [o for o in (self.outputs if out is None else out)
                if type(o) is SurveillanceAlerted and (alert is None or o.alert == alert)]

    def rejections(self, out=None) -> list[EventRejected]:
        return [o for o in (self.outputs if out is None else out) if type(o) is EventRejected]


def assert_settled(s: Script, wager_id: str, outcome: str, won_cents: int = 0, *, seq: int | None = None,
                   detail: str | None = None, paytable: str | None = None) -> WagerSettled:
    w = s.settlement(wager_id)
    assert (w.outcome, w.won_cents) == (outcome, won_cents), w
    placed = s.placed[wager_id]
    assert w.stake_cents == placed["amount_cents"] and w.position == placed["position"]
    assert w.wager == placed["wager"] and w.placed_seq == placed["seq"]
    assert w.id == f"{s.table_id}/{w.seq}/settle/{wager_id}"
    if seq is not None:
        assert w.seq == seq, (w.seq, seq)
    if detail is not None:
        assert w.detail == detail, w.detail
    if paytable is not None:
        assert w.paytable == paytable, w.paytable
    return w
