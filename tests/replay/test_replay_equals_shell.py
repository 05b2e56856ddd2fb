"""Replay derives what the live worker's shell derives, message for message: settlements, markers,
surveillance (sequence gaps and hold anomalies included) and rejections, and the same tally."""
from __future__ import annotations

import collections
import random

from craps_streams.app.shell import SettlementShell
from craps_streams.codec import encode_event
from craps_streams.replay.engine import Replay
from craps_streams.rules import output_to_record, record_to_event
from craps_streams.sim.floor import floor_events
from craps_streams.surveillance import HoldWatch
from craps_streams.surveillance.dice_watch import DiceWatch
from craps_streams.surveillance.table_watch import Thresholds


def shuffled_floor(seed: int) -> list[dict]:
    """A floor with bad input, some events delivered out of order and one never delivered."""
    records = [r for r in floor_events(4, 4, seed, bad_rate=0.02) if isinstance(r, dict)]
    rng = random.Random(seed)
    opens = [r for r in records if r.get("type") == "TableOpened"]
    rest = [r for r in records if r.get("type") != "TableOpened"]
    for k in range(0, len(rest), 7):
        chunk = rest[k:k + 7]
        rng.shuffle(chunk)
        rest[k:k + 7] = chunk
    lost = rest.pop(len(rest) * 3 // 4)
    assert lost
    return opens + rest


def test_replay_and_the_worker_shell_derive_the_same_outputs():
    watch = HoldWatch(Thresholds(tail_alert=0.05, check_z=0.5, position_alert=0.3, dice=DiceWatch(4.0, 6.0, 6.0)))  # low, so hold alerts happen
    shell, replay = SettlementShell(lambda t: None, watch), Replay(watch)
    live, replayed, verdicts = [], [], collections.Counter()
    for offset, r in enumerate(shuffled_floor(seed=8)):
        try:
            value = encode_event(r)
            event = record_to_event(r)
        except Exception:
            continue  # unencodable records are the codec's tests' business
        handled = shell.handle(value, "t", 0, offset)
        verdicts[handled.verdict] += 1
        live += handled.outputs
        replayed += replay.feed_event(event)
    assert [output_to_record(o) for o in replayed] == [output_to_record(o) for o in live]
    alerts = collections.Counter(o.alert for o in live if type(o).__name__ == "SurveillanceAlerted")
    assert alerts["hold_anomaly"] and alerts["sequence_gap"] and alerts["sequence_resumed"]
    assert alerts["dice_bias"] and alerts["position_anomaly"], alerts
    t = replay.tally
    assert (t.applied, t.held, t.rejected, t.duplicates) == (
        verdicts["applied"] + verdicts["released"], verdicts["held"], verdicts["rejected"], verdicts["duplicate"])
    assert verdicts["released"] and set(verdicts) <= {"applied", "released", "held", "rejected", "duplicate"}
    batch = Replay(watch)
    events = []
    for r in shuffled_floor(seed=8):
        try:
            encode_event(r)
            events.append(record_to_event(r))
        except Exception:
            continue
    assert [output_to_record(o) for o in batch.feed_batch(events)] == [output_to_record(o) for o in live]
    assert (batch.tally.applied, batch.tally.held, batch.tally.rejected) == (t.applied, t.held, t.rejected)
