"""Run a settling worker as a service: signals, logging, and its web server."""
from __future__ import annotations

import asyncio
import logging
import signal

from streams.app.worker import SettlingWorker


async def _main(web_port: int) -> None:
    worker = SettlingWorker()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, worker.stopping.set)
    await worker.run()


def serve(web_port: int, loglevel: str = "warning") -> int:
    logging.basicConfig(level=loglevel.upper(), format="[%(asctime)s] [%(process)d] [%(levelname)s] %(name)s: %(message)s")
    logging.getLogger("aiokafka").setLevel(max(logging.WARNING, logging.getLogger().level))
    asyncio.run(_main(web_port))
    return 0
