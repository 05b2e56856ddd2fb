"""The floor view's web server: the pages, their data as JSON, and the pushed updates (SSE).

Thin: everything it serves comes from a `reader` (the Faust tables behind craps_streams/floor/app.py, or
anything with the same four methods, and `held_at_tables` and `lost_brokers` when it has them) and
the ChangeHub the agents mark. The pages are static files
with their scripts beside them (the Content-Security-Policy allows no inline script), and render
every string from an event as text.

    /                     the floor: every table, live
    /table?id=T001        one table: the hand as it unfolds, markers, settlements, alerts, plots
    /plots                the floor's observed outcomes against the exact distributions
    /api/floor            every table's floor row (JSON)
    /api/table?id=T001    one table's detail (JSON), with the exact distributions
    /api/observed         the floor's observed outcome counts and the exact distributions
    /events/floor         server-sent events: the floor's rows, then the rows that change
    /events/table?id=..   server-sent events: the table's detail whenever it changes
"""
from __future__ import annotations

import asyncio
import json
import pathlib
import time
from typing import Protocol

from aiohttp import web

from craps_streams.app.web_security import WebConfig, secure
from craps_streams.floor.folding import at_table_fields, exact_distributions, floor_row, table_detail
from craps_streams.floor.hub import ChangeHub

STATIC = pathlib.Path(__file__).with_name("static")
VENDOR = STATIC / "vendor"  # fetched at setup time (infra/floor/fetch-chartjs.sh), not committed
PAGES = {"/": "floor.html", "/table": "table.html", "/plots": "plots.html"}
PUSH_INTERVAL_S = 0.1  # at most ten pushes a second per browser: a burst of changes is one push
HEARTBEAT_S = 15.0
BROKERS_EVERY_S = 2.0  # how often a stream looks whether the view's Kafka clients lost a broker node
MAX_TABLE_ID = 200  # longer ids are no table of ours: 404 without a lookup


class FloorReader(Protocol):
    def table_ids(self) -> list[str]: ...
    def row(self, table_id: str) -> dict | None: ...
    def detail(self, table_id: str) -> dict | None: ...
    def observed(self) -> dict: ...


def _dumps(obj) -> str:
    return json.dumps(obj, separators=(",", ":"))


def make_floor_web(reader: FloorReader, hub: ChangeHub, config: WebConfig | None = None,
                   instance: str = "") -> web.Application:
    def held() -> dict:
        """The events held at each table's controller (a reader without controllers has none)."""
        return dict(getattr(reader, "held_at_tables", lambda: {})())

    def rows(ids) -> list[dict]:
        out, at = [], held()
        for t in ids:
            r = reader.row(t)
            if r is None:
                if t not in at:
                    continue
                r = floor_row(t, None, None, None)  # held at its controller before anything reached the floor
            out.append({**r, **at_table_fields(at.get(t))})
        return out

    def detail(table_id: str) -> dict | None:
        d, at = reader.detail(table_id), held().get(table_id)
        if d is None and at is not None and at.events:
            d = table_detail(table_id, None, None, None, None)  # held at its controller before anything reached the floor
        return None if d is None else {**d, **at_table_fields(at)}

    def table_ids() -> list[str]:
        return sorted(set(reader.table_ids()) | {t for t, h in held().items() if h.events})

    def brokers() -> list[dict]:
        """The broker nodes the view's Kafka clients are failing to reach (a reader without
        clients, a replayed floor, has none)."""
        return list(getattr(reader, "lost_brokers", lambda: [])())

    def floor_doc() -> dict:
        return {"instance": instance, "version": hub.version, "sent_ms": int(time.time() * 1000),
                "tables": rows(table_ids()), "brokers_lost": brokers()}

    def table_id_of(request) -> str:
        table_id = request.query.get("id", "")
        if not table_id or len(table_id) > MAX_TABLE_ID:
            raise web.HTTPNotFound(text="no such table\n")
        return table_id

    async def page(request):
        return web.FileResponse(STATIC / PAGES[request.path], headers={"Cache-Control": "no-cache"})

    async def static(request):
        name = request.match_info["name"]
        base = VENDOR if name == "chart.umd.js" else STATIC
        path = base / name
        if "/" in name or name.startswith(".") or not path.is_file() or path.suffix not in (".js", ".css"):
            raise web.HTTPNotFound()
        return web.FileResponse(path)

    async def api_floor(request):
        return web.json_response(floor_doc(), dumps=_dumps)

    async def api_table(request):
        table_id = table_id_of(request)
        shown = detail(table_id)
        if shown is None:
            raise web.HTTPNotFound(text="no such table\n")
        return web.json_response({**shown, "exact": exact_distributions()}, dumps=_dumps)

    async def api_observed(request):
        return web.json_response({"observed": reader.observed(), "exact": exact_distributions(),
                                  "tables": len(reader.table_ids())}, dumps=_dumps)

    # The open event streams, each the task serving it. aiohttp's cleanup waits up to its shutdown
    # timeout (60 s) for running handlers, and an event stream runs until its browser leaves: so a
    # view stopped with a page open would take a minute to stop. Shutdown ends them instead.
    streams: set[asyncio.Task] = set()

    async def end_streams(app) -> None:
        for task in list(streams):
            task.cancel()

    async def stream(request, first, following) -> web.StreamResponse:
        task = asyncio.current_task()
        streams.add(task)
        try:
            return await _stream(request, first, following)
        finally:
            streams.discard(task)

    async def _stream(request, first, following) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        await response.prepare(request)
        version = hub.version
        await response.write(f"event: snapshot\ndata: {_dumps(first())}\n\n".encode())
        lost, quiet_since = brokers(), time.monotonic()
        try:
            while True:
                await hub.wait(version, BROKERS_EVERY_S)
                now_lost = brokers()
                if now_lost != lost:  # a broker node lost or back: said at once, tables changed or not
                    lost = now_lost
                    await response.write(f"event: brokers\ndata: {_dumps({'brokers_lost': lost})}\n\n".encode())
                if hub.version == version:
                    if time.monotonic() - quiet_since >= HEARTBEAT_S:
                        quiet_since = time.monotonic()
                        await response.write(b": heartbeat\n\n")
                    continue
                quiet_since = time.monotonic()
                changed, version = hub.since(version), hub.version
                doc = following(changed)
                if doc is not None:
                    await response.write(f"event: update\ndata: {_dumps(doc)}\n\n".encode())
                await asyncio.sleep(PUSH_INTERVAL_S)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        return response

    async def events_floor(request):
        def following(changed):
            return {"version": hub.version, "sent_ms": int(time.time() * 1000), "tables": rows(changed)}
        return await stream(request, floor_doc, following)

    async def events_table(request):
        table_id = table_id_of(request)

        def current():
            return {"table_id": table_id, "sent_ms": int(time.time() * 1000),
                    "detail": detail(table_id), "exact": exact_distributions()}

        def following(changed):
            if table_id not in changed:
                return None
            return {"table_id": table_id, "sent_ms": int(time.time() * 1000), "detail": detail(table_id)}
        return await stream(request, current, following)

    app = web.Application()
    for path in PAGES:
        app.router.add_get(path, page)
    app.router.add_get("/static/{name}", static)
    app.router.add_get("/api/floor", api_floor)
    app.router.add_get("/api/table", api_table)
    app.router.add_get("/api/observed", api_observed)
    app.router.add_get("/events/floor", events_floor)
    app.router.add_get("/events/table", events_table)
    app.on_shutdown.append(end_streams)
    return secure(app, config or WebConfig())
