"""The floor view's web server (craps_streams/floor/web.py) on its own: no broker, no browser."""
from __future__ import annotations

import asyncio
import time

import aiohttp
from aiohttp import web

from craps_streams.app.web_security import WebConfig
from craps_streams.floor.hub import ChangeHub
from craps_streams.floor.web import make_floor_web

from tests.conftest import free_port


class OneTable:
    def table_ids(self):
        return ["T001"]

    def row(self, table_id):
        return {"table_id": table_id} if table_id == "T001" else None

    def detail(self, table_id):
        return {"table_id": table_id} if table_id == "T001" else None

    def observed(self):
        return {}


async def _stop_with_streams_open() -> float:
    port = free_port()
    runner = web.AppRunner(make_floor_web(OneTable(), ChangeHub(), WebConfig(), "test"), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    async with aiohttp.ClientSession() as http:
        floor = await http.get(f"http://127.0.0.1:{port}/events/floor")
        table = await http.get(f"http://127.0.0.1:{port}/events/table?id=T001")
        for stream in (floor, table):
            assert (await stream.content.readline()).startswith(b"event: snapshot")
        started = time.monotonic()
        # aiohttp's own shutdown timeout is 60 s: a stream the shutdown did not end would hold
        # cleanup that long, and this wait_for raise.
        await asyncio.wait_for(runner.cleanup(), 10)
        took = time.monotonic() - started
        floor.close()
        table.close()
    return took


def test_stopping_ends_the_open_event_streams_at_once():
    """A browser left on a page must not hold the view's stop for aiohttp's 60 s shutdown timeout."""
    assert asyncio.run(_stop_with_streams_open()) < 10
