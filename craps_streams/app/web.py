"""The worker's web server: /metrics for Prometheus and /state (per-table state hashes).

The floor page lives in the floor view (craps_streams/floor, `craps-streams floor`), which shows every
table whichever worker owns it; / here redirects there (`floor_url`: the setting CRAPS_FLOOR_URL,
default http://127.0.0.1:6070/). Security headers always, TLS and basic auth from the web config file
(craps_streams/app/web_security.py).
"""
from __future__ import annotations

import hashlib
import json

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from craps_streams.app.web_security import WebConfig, secure

DEFAULT_FLOOR_URL = "http://127.0.0.1:6070/"


def make_web_app(worker, metrics, config: WebConfig | None = None,
                 floor_url: str | None = None) -> web.Application:
    async def metrics_handler(request):
        return web.Response(body=generate_latest(metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

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

    async def to_the_floor_view(request):
        # A worker holds only the tables of its partitions: the floor is the view's.
        raise web.HTTPFound(floor_url or DEFAULT_FLOOR_URL)

    app = web.Application()
    app.router.add_get("/", to_the_floor_view)
    app.router.add_get("/metrics", metrics_handler)
    app.router.add_get("/state", state_hashes)
    return secure(app, config or WebConfig())
