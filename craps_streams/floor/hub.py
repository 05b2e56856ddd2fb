"""Who changed since when: the agents mark a table changed, the pushed page streams wait for it.

A version counter and, per table, the version of its last change. A stream remembers the version it
sent last and asks for the tables changed since, so a burst of changes is one push (coalesced), and
a slow browser never makes the agents wait.
"""
from __future__ import annotations

import asyncio


class ChangeHub:
    def __init__(self) -> None:
        self.version = 0
        self.changed_at: dict[str, int] = {}
        self._event = asyncio.Event()

    def changed(self, table_id: str) -> None:
        self.version += 1
        self.changed_at[table_id] = self.version
        self._event.set()

    def since(self, version: int) -> list[str]:
        return sorted(t for t, v in self.changed_at.items() if v > version)

    async def wait(self, version: int, timeout: float) -> None:
        """Return when something changed after `version`, or after `timeout` seconds."""
        if self.version > version:
            return
        self._event.clear()
        try:  # asyncio.timeout: Python 3.11's wait_for can swallow a cancel landing as the event fires
            async with asyncio.timeout(timeout):
                await self._event.wait()
        except TimeoutError:
            pass
