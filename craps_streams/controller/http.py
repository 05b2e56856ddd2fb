"""The controller's local HTTP/JSON input (aiohttp), for dealer terminals and table equipment.

    POST /events    one event, without seq, ts, key_id and tag -> 200 {"table_id", "seq", "ts"},
                    sent only once the event is durable in the journal; 422 {"refused", "message"}
                    for an event the controller does not take (no seq given); 507 when the
                    journal's disk is full; 503 when the journal cannot be written
    POST /resend    {"table_id", "from_seq", "to_seq"}: send that range again from the journal ->
                    {"marked": n, "missing": [seqs no longer held]}
    GET  /status    per table: events held at the table and the oldest's age; the broker link
    GET  /metrics   Prometheus metrics (craps_streams/controller/metrics.py)

It listens on the loopback by default: the equipment is on the table's host (docs/operating/controller.md).
"""
from __future__ import annotations

import json
import time

from aiohttp import web

from craps_streams.controller.wire import MAX_EVENT_BYTES, answer, parsed


def _json(status: int, body: dict) -> web.Response:
    return web.Response(status=status, text=json.dumps(body), content_type="application/json")


@web.middleware
async def _refusals_in_json(request: web.Request, handler):
    """aiohttp's own refusals (a body over the size limit, an unknown path) answered in the
    input's JSON, so the equipment reads every refusal the same way."""
    try:
        return await handler(request)
    except web.HTTPRequestEntityTooLarge:
        return _json(422, {"refused": "too_long", "message": f"an event of at most {MAX_EVENT_BYTES:,} bytes"})
    except web.HTTPException as e:
        if e.status < 400:
            raise
        return _json(e.status, {"refused": "http", "message": e.reason})


def app_of(controller, sender) -> web.Application:
    app = web.Application(client_max_size=MAX_EVENT_BYTES, middlewares=[_refusals_in_json])

    async def events(request: web.Request) -> web.Response:
        return _json(*await answer(controller, await request.read()))

    async def resend(request: web.Request) -> web.Response:
        from craps_streams.controller.intake import Refused

        try:
            ask = parsed(await request.read())
            table_id, first, last = ask["table_id"], ask["from_seq"], ask["to_seq"]
            if type(table_id) is not str or type(first) is not int or type(last) is not int or first > last:
                raise KeyError
        except (Refused, KeyError, TypeError):
            return _json(400, {"refused": "malformed", "message": 'send {"table_id": ..., "from_seq": N, "to_seq": M}'})
        if table_id not in controller.tables:
            return _json(422, {"refused": "unknown_table", "message": f"table {table_id[:40]!r} is not served here"})
        try:
            marked, missing = await sender.resend(table_id, first, last)
        except ValueError as e:
            return _json(400, {"refused": "malformed", "message": str(e)})
        return _json(200, {"table_id": table_id, "marked": marked, "missing": missing[:1000]})

    async def status(request: web.Request) -> web.Response:
        now = time.time_ns()
        tables = {t: {"held": sender.held.get(t, (0, None))[0],
                      "oldest_s": round((now - sender.held[t][1]) / 1e9, 1) if t in sender.held else 0}
                  for t in sorted(controller.tables)}
        return _json(200, {"tables": tables, "broker_connected": sender.connected})

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(body=controller.metrics.exposition(), content_type="text/plain", charset="utf-8")

    app.router.add_post("/events", events)
    app.router.add_post("/resend", resend)
    app.router.add_get("/status", status)
    app.router.add_get("/metrics", metrics)
    return app


async def start_http(controller, sender, host: str, port: int) -> tuple[web.AppRunner, int]:
    """Listen; -> (the runner to clean up, the port bound: `port` 0 picks a free one)."""
    runner = web.AppRunner(app_of(controller, sender), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]
