"""What an event that fails its authentication becomes: an `EventRejected` keeping the event as
received (its key id and tag included) and a `forged_event` surveillance alert. The game is not
touched: the rules core never sees the event.

Ids are deterministic from the event's content (its canonical bytes and tag), so the worker and a
replay give the same ids, and they never collide with the ids of the honest event at the same table
and seq (`<table>/<seq>/rejected`, ...): a forged copy cannot shadow an honest output.
"""
from __future__ import annotations

import hashlib

from craps_streams.authenticity.canonical import canonical_bytes
from craps_streams.rules.contract import event_to_record
from craps_streams.rules.events import EventRejected, SurveillanceAlerted

FORGED_EVENT = "forged_event"


def forged_outputs(event, reason: str, message: str) -> list:
    """[EventRejected, SurveillanceAlerted] for an event whose tag failed with (reason, message)."""
    digest = hashlib.sha256(canonical_bytes(event) + b"\x00" + (event.tag or "").encode("utf-8", "replace"))
    mark = digest.hexdigest()[:16]
    kind = type(event).__name__
    wager_id = getattr(event, "wager_id", None)
    text = f"{kind} seq {event.seq} rejected before the rules: {message}"
    return [
        EventRejected(f"{event.table_id}/{event.seq}/rejected/{reason}/{mark}", event.table_id, event.seq,
                      event.ts, reason, text, event_to_record(event)),
        SurveillanceAlerted(f"{event.table_id}/{event.seq}/alert/{FORGED_EVENT}/{mark}", event.table_id,
                            event.seq, event.ts, FORGED_EVENT, "",
                            f"possible forged event at table {event.table_id}: {text}",
                            (wager_id,) if wager_id is not None else ()),
    ]
