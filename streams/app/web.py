"""The worker's web server: /metrics for Prometheus, / the live floor page, /floor.json its data."""
from __future__ import annotations

import pathlib

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from streams.app.floor_view import table_view

FLOOR_PAGE = pathlib.Path(__file__).with_name("static") / "floor.html"


def make_web_app(worker, metrics) -> web.Application:
    async def metrics_handler(request):
        return web.Response(body=generate_latest(metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def floor_json(request):
        tables = [table_view(state, metrics.theory)
                  for owner in list(worker.owners.values()) for state in list(owner.shell.states.values())]
        tables.sort(key=lambda t: t["table_id"])
        applied = metrics.events.labels("applied")._value.get()
        return web.json_response({"tables": tables, "events_applied": int(applied)})

    async def floor_page(request):
        return web.FileResponse(FLOOR_PAGE)

    app = web.Application()
    app.router.add_get("/", floor_page)
    app.router.add_get("/floor.json", floor_json)
    app.router.add_get("/metrics", metrics_handler)
    return app
