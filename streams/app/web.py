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
        tables = [table_view(state, owner.shell.books.get(table_id))
                  for owner in list(worker.owners.values())
                  for table_id, state in list(owner.shell.states.items())]
        tables.sort(key=lambda t: t["table_id"])
        applied = metrics.events.labels("applied")._value.get()
        return web.json_response({"tables": tables, "events_applied": int(applied)})

    async def state_hashes(request):
        # Read-only: sha256 of each owned table's stored record (state and hold book) as canonical
        # JSON, now ("tables") and as rebuilt from the changelog at the takeover ("recovered").
        def digest(text):
            canonical = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
            return hashlib.sha256(canonical.encode()).hexdigest()

        tables, recovered = {}, {}
        for owner in list(worker.owners.values()):
            shell, rebuilt = owner.shell, owner.recovered
            for table, text in list(rebuilt.items()):
                recovered[table] = digest(text)
            for table in set(shell.states) | set(rebuilt):
                tables[table] = digest(shell.stored_text(table) if table in shell.states else rebuilt[table])
        return web.json_response({"tables": dict(sorted(tables.items())),
                                  "recovered": dict(sorted(recovered.items())),
                                  "partitions": sorted(worker.owners)})

    async def floor_page(request):
        return web.FileResponse(FLOOR_PAGE)

    app = web.Application()
    app.router.add_get("/", floor_page)
    app.router.add_get("/floor.json", floor_json)
    app.router.add_get("/metrics", metrics_handler)
    app.router.add_get("/state", state_hashes)
    return app
