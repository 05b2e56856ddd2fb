"""The worker's web server: /metrics for Prometheus, / the floor page, /floor.json its data, /state."""
from __future__ import annotations

import hashlib
import json
import pathlib

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from streams.app.floor_view import table_view

FLOOR_PAGE = pathlib.Path(__file__).with_name("static") / "floor.html"


def make_web_app(worker, metrics) -> web.Application:
    async def metrics_handler(request):
        return web.Response(body=generate_latest(metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def floor_json(request):
        tables = [table_view(t.state, t.book) for t in worker.tables()]
        return web.json_response({"tables": tables, "events_applied": metrics.events_applied()})

    async def state_hashes(request):
        # Read-only: sha256 of each owned table's stored record (state and hold book) as canonical
        # JSON, now ("tables") and as rebuilt from the changelog at the takeover ("recovered").
        def digest(text):
            canonical = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
            return hashlib.sha256(canonical.encode()).hexdigest()

        owned = worker.tables()
        return web.json_response({"tables": {t.table_id: digest(t.stored_text) for t in owned},
                                  "recovered": {t.table_id: digest(t.recovered_text) for t in owned
                                                if t.recovered_text is not None},
                                  "partitions": worker.partitions()})

    async def floor_page(request):
        return web.FileResponse(FLOOR_PAGE)

    app = web.Application()
    app.router.add_get("/", floor_page)
    app.router.add_get("/floor.json", floor_json)
    app.router.add_get("/metrics", metrics_handler)
    app.router.add_get("/state", state_hashes)
    return app
