"""Run a settling worker as a service: signals, logging, metrics, its web server (/metrics, /state)."""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import time

from streams.app.web import make_web_app
from streams.app.web_security import start_site, web_config_from_env, web_host
from streams.app.worker import SettlingWorker
from streams.metrics.exporter import FloorMetrics
from streams.rules import SurveillanceAlerted

log = logging.getLogger("craps.worker")


async def _main(web_port: int) -> None:
    worker = SettlingWorker()

    def owned_tables():
        """(state, hold book) of every table the worker owns, loaded or only recovered so far."""
        for owner in list(worker.owners.values()):
            shell = owner.shell
            for table_id in set(shell.states) | set(owner.recovered):
                state = shell.state_of(table_id)
                if state is not None:
                    yield state, shell.books.get(table_id)

    metrics = FloorMetrics(tables=owned_tables)

    def observe(handled_list, partition, seconds):
        metrics.observe(handled_list, time.time())
        for handled in handled_list:
            for o in handled.outputs:
                if type(o) is SurveillanceAlerted and o.alert in ("hold_anomaly", "sequence_gap"):
                    log.warning("%s: %s", o.alert, o.message)

    worker.observer = observe
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, worker.stopping.set)
    runner = None
    if web_port:
        config = web_config_from_env()  # TLS and basic auth when CRAPS_WEB_CONFIG names a file
        runner = await start_site(make_web_app(worker, metrics, config), web_port, config)
        log.info("metrics on %s://%s:%s/metrics", config.scheme, web_host(), web_port)
    lag_task = asyncio.create_task(_report_lag(worker, metrics))
    try:
        await worker.run()
    finally:
        lag_task.cancel()
        if runner is not None:
            await runner.cleanup()


async def _report_lag(worker, metrics) -> None:
    while True:
        await asyncio.sleep(5)
        consumer = worker.consumer
        if consumer is None:
            continue
        for tp in consumer.assignment():
            try:
                highwater = consumer.highwater(tp)
                position = await consumer.position(tp)
            except Exception:  # lag is best effort; never take the worker down for it
                continue
            if highwater is not None:
                metrics.lag.labels(str(tp.partition)).set(max(0, highwater - position))


def serve(web_port: int, loglevel: str = "warning") -> int:
    logging.basicConfig(level=loglevel.upper(),
                        format="[%(asctime)s] [%(process)d] [%(levelname)s] %(name)s: %(message)s")
    for noisy in ("aiokafka", "kafka"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    asyncio.run(_main(web_port))
    return 0
