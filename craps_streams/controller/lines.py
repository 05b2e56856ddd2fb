"""The controller's line protocol, for a dice reader's driver and for scripts: on stdin or a Unix
socket, one event per line (a JSON object, as `POST /events` takes), one answer per line in the
same order (the JSON answer of craps_streams/controller/wire.py). Lines are answered as they become
durable, so a driver may write ahead without waiting: its events share group commits.
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from craps_streams.controller.wire import MAX_EVENT_BYTES, answer


async def serve_lines(controller, reader: asyncio.StreamReader, write) -> None:
    """Answer every line of `reader` through `write(bytes)`, in order, until it ends."""
    answers: asyncio.Queue = asyncio.Queue(maxsize=1024)

    async def replies():
        while (pending := await answers.get()) is not None:
            _, body = await pending
            await write((json.dumps(body) + "\n").encode())

    writer = asyncio.create_task(replies())
    try:
        while True:
            try:
                line = await reader.readline()
            except ValueError:  # longer than the stream's limit: the rest of the line is dropped by asyncio
                line = b"x" * (MAX_EVENT_BYTES + 1)
            if not line:
                break
            if not line.strip():
                continue
            await answers.put(asyncio.ensure_future(answer(controller, line.strip())))
        await answers.put(None)
        await writer
    finally:
        writer.cancel()


class SocketInput:
    """The line protocol's Unix socket: the listening server and the connections it serves."""

    def __init__(self, server: asyncio.AbstractServer, clients: dict):
        self.server, self.clients = server, clients  # clients: each connection's writer -> its handler

    async def close(self) -> None:
        """Stop listening and end every open connection and its handler. A connected driver would
        otherwise hold a stopping controller for as long as it stays connected (the server waits
        for its connections to end); it enters its unanswered lines again on its next connection,
        and those already journaled are answered with their seq."""
        self.server.close()
        handlers = list(self.clients.values())
        for writer in list(self.clients):
            writer.close()
        for handler in handlers:
            handler.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await self.server.wait_closed()


async def start_socket(controller, path: Path) -> SocketInput:
    """Listen on the Unix socket `path` (0600: the equipment runs as the controller's user)."""
    path = Path(path)
    if path.is_socket():
        path.unlink()
    clients: dict[asyncio.StreamWriter, asyncio.Task] = {}

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        async def write(data: bytes):
            writer.write(data)
            await writer.drain()
        clients[writer] = asyncio.current_task()
        try:
            await serve_lines(controller, reader, write)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # Ended by SocketInput.close: the handler returns, as asyncio's server expects of it
            # (Python 3.11 reports a cancelled handler as an error in a callback).
            pass
        finally:
            del clients[writer]
            writer.close()

    old = os.umask(0o177)
    try:
        return SocketInput(await asyncio.start_unix_server(client, str(path), limit=MAX_EVENT_BYTES + 2), clients)
    finally:
        os.umask(old)


async def serve_stdin(controller) -> None:
    """The line protocol on stdin, answers on stdout; returns when stdin ends."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_EVENT_BYTES + 2)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer

    async def write(data: bytes):
        out.write(data)
        out.flush()

    await serve_lines(controller, reader, write)
