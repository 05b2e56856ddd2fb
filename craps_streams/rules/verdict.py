"""The verdict of one input: what became of it. `apply` returns it beside the state and outputs.

    applied      judged in order: its outputs are its settlements, markers and alerts
    released     applied, and it filled a sequence gap: the held events behind it were applied too
    held         arrived beyond a sequence gap: kept in the table's state until the gap is filled
    duplicate    seen before (seq at or below the last applied one): counted, never applied
    rejected     not applied; its EventRejected is the first output (docs/rules.md, Bad input)
    undecodable  not an event at all (torn bytes, not a record): rejected before the core

An event that is both rejected and fills a gap (its seq is received all the same) is `rejected`:
its own rejection is the first output, the released events' outputs follow.
"""
from __future__ import annotations

APPLIED = "applied"
RELEASED = "released"
HELD = "held"
DUPLICATE = "duplicate"
REJECTED = "rejected"
UNDECODABLE = "undecodable"

VERDICTS = (APPLIED, RELEASED, HELD, DUPLICATE, REJECTED, UNDECODABLE)
