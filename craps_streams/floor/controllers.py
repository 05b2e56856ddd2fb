"""The floor view's look at the tables' controllers: their /metrics, read every few seconds, say
how many events each table holds because the broker has not acknowledged them (the controller's
journal; docs/operating/controller.md), and how old the oldest is.

The figures and their words are the status panel's (craps_streams/metrics/at_table.py); a table
whose figures changed is marked in the ChangeHub, so the pages get it pushed as any change.
A controller that does not answer is said once in the log; its tables show no figures until it
answers again (the view cannot tell what it holds).
"""
from __future__ import annotations

import asyncio
import logging

import aiohttp

from craps_streams.floor.hub import ChangeHub
from craps_streams.metrics.at_table import HeldAtTable, held_at_tables

log = logging.getLogger("craps.floor.controllers")

EVERY_S = 2.0
TIMEOUT_S = 2.0


def urls_of(text: str | None) -> tuple[str, ...]:
    """The controllers' /metrics URLs of a comma list (CRAPS_FLOOR_CONTROLLERS)."""
    return tuple(u.strip() for u in (text or "").split(",") if u.strip())


class ControllerWatch:
    def __init__(self, urls, hub: ChangeHub):
        self.urls = tuple(urls)
        self.hub = hub
        self.held: dict[str, HeldAtTable] = {}
        self._silent: set[str] = set()  # the URLs that did not answer the last look

    async def look(self, http: aiohttp.ClientSession) -> None:
        """Read every controller once; mark the tables whose figures changed."""
        texts = await asyncio.gather(*(self._text(http, url) for url in self.urls))
        held = held_at_tables(t for t in texts if t is not None)
        for table in sorted(held.keys() | self.held.keys()):
            if held.get(table) != self.held.get(table):
                self.hub.changed(table)
        self.held = held

    async def _text(self, http: aiohttp.ClientSession, url: str) -> str | None:
        try:
            async with http.get(url, timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)) as r:
                r.raise_for_status()
                text = await r.text()
            held_at_tables([text])  # a text that is no metrics is no answer
        except (aiohttp.ClientError, asyncio.TimeoutError, UnicodeDecodeError, ValueError) as e:
            if url not in self._silent:
                log.warning("the table controller at %s does not answer (%s): its tables' held events are not shown",
                            url, e)
                self._silent.add(url)
            return None
        if url in self._silent:
            log.info("the table controller at %s answers again", url)
            self._silent.discard(url)
        return text

    async def run(self) -> None:
        """Look every EVERY_S until cancelled."""
        async with aiohttp.ClientSession() as http:
            while True:
                await self.look(http)
                await asyncio.sleep(EVERY_S)
