"""How the inputs read an event and word an answer, the same for HTTP and the line protocol.

An event is one JSON object (UTF-8, at most `MAX_EVENT_BYTES`); the answer is a JSON object:
`{"table_id", "seq", "ts"}` once the event is durable, or `{"refused": reason, "message"}` when
it was not taken (no seq was given: the equipment may enter it again, corrected).
"""
from __future__ import annotations

import json

from craps_streams.controller.intake import Refused
from craps_streams.controller.journal import JournalError, JournalFull
from craps_streams.controller.service import Controller, refusal_of

MAX_EVENT_BYTES = 16 * 1024  # a TableOpened with its rules is under 5 KiB


def parsed(body: bytes):
    """The JSON value of one event's bytes; Refused when they are not JSON."""
    if len(body) > MAX_EVENT_BYTES:
        raise Refused("too_long", f"an event of {len(body):,} bytes; at most {MAX_EVENT_BYTES:,}")
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:  # RecursionError: hostile nesting
        raise Refused("malformed", f"not a JSON object: {str(e)[:120]}") from None


async def answer(controller: Controller, body: bytes) -> tuple[int, dict]:
    """(HTTP status, answer) for one event's bytes."""
    try:
        ack = await controller.submit(parsed(body))
    except Refused as e:
        return 422, {"refused": e.reason, "message": e.message}
    except JournalError as e:
        reason, message = refusal_of(e)
        return (507 if isinstance(e, JournalFull) else 503), {"refused": reason, "message": message}
    return 200, ack.reply()
