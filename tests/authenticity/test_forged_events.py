"""Forged events through the worker's step (the shell, pure) and the replay command: rejected
before the rules, alerted, and the game and the money exactly as without them."""
from __future__ import annotations

import msgspec
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.authenticity.authenticity_keys import key, ring_for

from craps_streams.app.shell import SettlementShell
from craps_streams.authenticity import FORGED_EVENT, KeyRing, TableSigner, TagCheck, keyfile, sign_record, signed
from craps_streams.codec import encode_event, to_json_line
from craps_streams.rules import EventRejected, SurveillanceAlerted, event_to_record, record_to_event
from craps_streams.sim.floor import floor_events
from craps_streams.rules.verdict import REJECTED

ROOT = Path(__file__).resolve().parents[2]
RETIRED_AT = 1_767_225_600_000 + 3_600_000  # an hour into the simulated floor
# T001 and T002 sign with their keys; T001's first key was retired an hour in (a leak).
RING = KeyRing((*ring_for(["T001", "T002"]).keys, key("k-T001-old", {"T001"}, 0, RETIRED_AT)))


def honest_floor() -> list[dict]:
    signer = TableSigner(RING)
    return [sign_record(signer, r) for r in floor_events(2, 3, seed=4)]


def forgeries(floor: list[dict]) -> list[tuple[int, dict, str]]:
    """(index of the honest record it goes before, the forged record, the reason expected): each a
    throw or a wager claiming the seq of an honest event still to come, so that, if accepted, it
    would take the honest event's place (its seq would then be a duplicate)."""
    out = []
    events = [(i, record_to_event(r)) for i, r in enumerate(floor)]
    throws = [(i, e) for i, e in events if type(e).__name__ == "DiceThrown" and e.ts > RETIRED_AT]
    wagers = [(i, e) for i, e in events if type(e).__name__ == "WagerPlaced"]
    a_key, b_key, old = RING.get("k-T001"), RING.get("k-T002"), RING.get("k-T001-old")
    n = 0
    for i, e in throws[5::40]:
        dice = (6, 6) if (e.die1, e.die2) != (6, 6) else (1, 1)  # never the honest throw
        twelve = msgspec.structs.replace(e, die1=dice[0], die2=dice[1], key_id=None, tag=None)
        other = events[i - 1][1]
        cases = [
            (msgspec.structs.replace(twelve, key_id=e.key_id, tag="Q" * 43), "bad_signature"),  # a forged throw
            (msgspec.structs.replace(twelve, key_id=other.key_id, tag=other.tag), "bad_signature"),  # replayed tag
            (msgspec.structs.replace(twelve, key_id=e.key_id, tag=e.tag), "bad_signature"),  # its own tag, new dice
            (twelve, "bad_signature"),  # no tag at all
            (signed(key("k-stranger", {e.table_id}), twelve), "unknown_key"),
        ]
        if e.table_id == "T001":
            cases.append((signed(old, twelve), "bad_signature"))  # a key retired before the throw
        else:
            cases.append((signed(a_key, twelve), "bad_signature"))  # table B, table A's key
        forged, reason = cases[n % len(cases)]
        n += 1
        out.append((i, event_to_record(forged), reason))
    for i, e in wagers[3::50]:  # a bigger stake under the table's valid key id but a copied tag
        forged = msgspec.structs.replace(e, amount_cents=e.amount_cents * 100)
        out.append((i, event_to_record(forged), "bad_signature"))
    assert len({r for _, _, r in out}) == 2 and len(out) >= 10
    return out


def _shell():
    return SettlementShell(lambda t: None, tags=TagCheck(RING))  # the floor's default surveillance


def test_forged_events_are_rejected_alerted_and_change_nothing():
    floor = honest_floor()
    forged = forgeries(floor)
    clean, attacked = _shell(), _shell()
    clean_out = [clean.handle(encode_event(r), "t", 0, i).messages for i, r in enumerate(floor)]
    at = {}
    for i, record, reason in forged:
        at.setdefault(i, []).append((record, reason))
    attacked_out, seen = [], {"bad_signature": 0, "unknown_key": 0}
    offset = 0
    for i, r in enumerate(floor):
        for record, reason in at.get(i, ()):
            before = {t: attacked.stored_text(t) for t in attacked.states}
            h = attacked.handle(encode_event(record), "t", 0, offset)
            offset += 1
            assert h.verdict == REJECTED
            rejection, alert = h.outputs
            assert type(rejection) is EventRejected and rejection.reason == reason
            assert rejection.event == record  # the event as received, its tag included
            assert type(alert) is SurveillanceAlerted and alert.alert == FORGED_EVENT
            assert alert.table_id == record["table_id"] and alert.seq == record["seq"]
            assert {t: attacked.stored_text(t) for t in attacked.states} == before  # game unchanged
            seen[reason] += 1
        attacked_out.append(attacked.handle(encode_event(r), "t", 0, offset).messages)
        offset += 1
    assert all(seen.values())
    # every honest event gives the same outputs (settlements, money) as on the clean floor
    assert attacked_out == clean_out
    assert {t: attacked.stored_text(t) for t in attacked.states} == {t: clean.stored_text(t) for t in clean.states}
    assert sum(1 for h in clean_out for topic, _, _ in h if topic.endswith("settlements")) > 50


def test_the_shell_without_a_key_ring_entry_rejects_every_event_of_that_table():
    signer = TableSigner(ring_for(["T001"]))
    shell = SettlementShell(lambda t: None, tags=TagCheck(ring_for(["T002"])))
    for r in list(floor_events(1, 0.2, seed=1))[:20]:
        h = shell.handle(encode_event(sign_record(signer, r)), "t", 0, 0)
        assert h.verdict == REJECTED and h.outputs[0].reason == "unknown_key"
    assert not shell.states or all(s is None for s in shell.states.values())


# ---------------------------------------------------------------- the replay command


def _replay(tmp_path, lines, *extra, keys=None):
    path = tmp_path / f"h{len(list(tmp_path.iterdir()))}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "craps_streams.cli", "replay", str(path), "--no-progress",
                             "--keys", str(keys), *extra], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return [json.loads(x) for x in result.stdout.splitlines()], result.stderr


@pytest.fixture
def ring_file(tmp_path):
    return keyfile.save(RING, tmp_path / "keys" / "table-keys.json")


def test_replay_rejects_and_alerts_forgeries_with_the_same_settlements(tmp_path, ring_file):
    floor = honest_floor()
    forged = forgeries(floor)
    mixed = list(floor)
    for i, record, _ in sorted(forged, key=lambda f: -f[0]):
        mixed.insert(i, record)
    clean, _ = _replay(tmp_path, [to_json_line(r) for r in floor], keys=ring_file)
    attacked, summary = _replay(tmp_path, [to_json_line(r) for r in mixed], keys=ring_file)
    settled = [o for o in attacked if o["type"] == "WagerSettled"]
    assert settled == [o for o in clean if o["type"] == "WagerSettled"] and len(settled) > 50
    rejected = [o for o in attacked if o["type"] == "EventRejected" and o["reason"] in ("bad_signature", "unknown_key")]
    alerts = [o for o in attacked if o["type"] == "SurveillanceAlerted" and o["alert"] == FORGED_EVENT]
    assert len(rejected) == len(alerts) == len(forged)
    assert sorted((o["event"]["table_id"], o["event"]["seq"], o["reason"]) for o in rejected) == \
        sorted((r["table_id"], r["seq"], reason) for _, r, reason in forged)
    assert "bad_signature" in summary and "unknown_key" in summary


def test_untagged_history_replays_only_under_the_flag_which_the_summary_says(tmp_path, ring_file):
    lines = [to_json_line(r) if type(r) is dict else r for r in floor_events(2, 1, seed=4)]
    strict, summary = _replay(tmp_path, lines, keys=ring_file)
    assert not [o for o in strict if o["type"] == "WagerSettled"]
    assert "bad_signature" in summary and "UNTAGGED" not in summary
    lenient, summary = _replay(tmp_path, lines, "--accept-untagged", keys=ring_file)
    assert [o for o in lenient if o["type"] == "WagerSettled"]
    assert f"UNTAGGED: {len(lines):,} events accepted without an authentication tag" in summary
    # the flag never lets a wrong tag through
    floor = honest_floor()
    bad = dict(floor[3], tag="Q" * 43)
    out, summary = _replay(tmp_path, [to_json_line(r) for r in floor[:3] + [bad]], "--accept-untagged",
                           keys=ring_file)
    assert [o["reason"] for o in out if o["type"] == "EventRejected"] == ["bad_signature"]
    assert "UNTAGGED" not in summary
