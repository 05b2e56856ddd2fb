"""Run a settling worker as a service: signals, logging, metrics, its web server (/metrics, /state)."""
from __future__ import annotations

import asyncio
import logging
import signal
import time

from craps_streams.app.web import make_web_app
from craps_streams.app.web_security import load_web_config, start_site
from craps_streams.app.worker import SettlingWorker, WorkerTimeouts
from craps_streams.metrics.exporter import FloorMetrics
from craps_streams.metrics.gc_pauses import GcPauses, freeze_start_up, raise_young_threshold
from craps_streams.rules import SurveillanceAlerted
from craps_streams.settings import Settings
from craps_streams.surveillance import HoldWatch

log = logging.getLogger("craps.worker")


def worker_of(settings: Settings, worker_class=SettlingWorker, **overrides) -> SettlingWorker:
    """The settling worker the settings describe: its floor, group, timeouts, surveillance and key
    ring (KeyRingError without one); `overrides`, keyword arguments of the worker's own (a
    benchmark's app id)."""
    from craps_streams.authenticity import TagCheck, keyfile

    timeouts = WorkerTimeouts(settings.session_timeout_ms, settings.heartbeat_interval_ms,
                              settings.transaction_timeout_ms, settings.max_poll_interval_ms, settings.retry_backoff_ms)
    arguments = dict(app_id=settings.app_id, bootstrap=settings.kafka_bootstrap, topics=settings.topics,
                     timeouts=timeouts, watch=HoldWatch(settings.thresholds))
    return worker_class(TagCheck(keyfile.load(settings.key_ring_path)), **{**arguments, **overrides})


async def _main(settings: Settings) -> None:
    worker = worker_of(settings)

    metrics = FloorMetrics(tables=lambda: ((t.state, t.book) for t in worker.tables()), thresholds=settings.thresholds,
                           committed=worker.committed_offsets)

    def observe(batch, partition, seconds):
        metrics.observe(batch.handled, time.time(), quiet=batch.quiet)
        for handled in batch.handled:
            for o in handled.outputs:
                if type(o) is SurveillanceAlerted and o.alert in ("hold_anomaly", "dice_bias", "position_anomaly", "sequence_gap"):
                    log.warning("%s: %s", o.alert, o.message)

    worker.observer = observe
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, worker.stopping.set)
    runner = None
    web_port = settings.web_port
    if web_port:
        config = load_web_config(settings.web_config)  # TLS and basic auth when the setting names a file
        runner = await start_site(make_web_app(worker, metrics, config, settings.floor_url), web_port, config,
                                  settings.web_host)
        log.info("metrics on %s://%s:%s/metrics", config.scheme, settings.web_host, web_port)
    from craps_streams.accelerator.rules import chosen

    core = chosen()
    log.info("rules core: %s%s", core.name, f" ({core.note})" if core.note else "")
    pauses = GcPauses(metrics.gc_pauses).install()
    log.info("%s objects of the start-up frozen out of garbage collection", freeze_start_up())
    raise_young_threshold()
    lag_task = asyncio.create_task(_report_lag(worker, metrics))
    stability_task = asyncio.create_task(_report_stability(worker, metrics))
    try:
        await worker.run()
    finally:
        pauses.uninstall()
        lag_task.cancel()
        stability_task.cancel()
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


async def _report_stability(worker, metrics, every_s: float = 5.0) -> None:
    """The outputs' last stable offsets against their high watermarks, for the partitions this
    worker owns: a stalled LSO hides the floor from every reader (alert CrapsReadersStalled)."""
    from craps_streams.app.stability import StableOffsetWatch
    from craps_streams.kafka.stability import StableOffsets

    offsets, watch, reported = StableOffsets(bootstrap=worker.bootstrap), StableOffsetWatch(), set()
    try:
        await offsets.start()
    except Exception:  # best effort, like the lag: never take the worker down for a gauge
        log.warning("output stability not measured: cannot start its consumers", exc_info=True)
        return
    try:
        while True:
            await asyncio.sleep(every_s)
            owned = {(topic, p) for p in worker.partitions() for topic in worker.topics.worker_outputs}
            try:
                measured = await offsets.offsets(sorted(owned))
            except Exception:
                continue
            now = time.monotonic()
            for key, (high, stable) in measured.items():
                labels = (key[0], str(key[1]))
                metrics.unstable.labels(*labels).set(max(0, high - stable))
                metrics.lso_stalled.labels(*labels).set(watch.observe(key, high, stable, now))
            for key in reported - owned:  # given up: its new owner reports it
                watch.forget(key)
                metrics.unstable.remove(key[0], str(key[1]))
                metrics.lso_stalled.remove(key[0], str(key[1]))
            reported = set(measured) | (reported & owned)
    finally:
        await offsets.stop()


class ExpectedRetries(logging.Filter):
    """Kafka 4 answers a produce whose transaction verification (KIP-890) did not complete with a
    retriable NOT_ENOUGH_REPLICAS, for clients that do not speak the new protocol, as aiokafka
    does not (rare since the worker writes a batch's records before adding its offsets,
    SettlingWorker._written); aiokafka logs each such retry as a WARNING although it is the
    expected path and the batch is re-sent at once. A log a person reads must show what matters,
    so these become DEBUG records (kept only at --loglevel debug); other warnings pass untouched."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING and "NotEnoughReplicas" in record.getMessage():
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


def serve(settings: Settings, loglevel: str = "warning") -> int:
    """Run the settling worker the settings describe (its web server on settings.web_port; 0: none)."""
    logging.basicConfig(level=loglevel.upper(),
                        format="[%(asctime)s] [%(process)d] [%(levelname)s] %(name)s: %(message)s")
    for noisy in ("aiokafka", "kafka"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if loglevel.lower() == "debug" else logging.WARNING)
    logging.getLogger("aiokafka.producer.sender").addFilter(ExpectedRetries())
    from craps_streams.authenticity import KeyRingError

    try:
        asyncio.run(_main(settings))
    except KeyRingError as e:
        log.error("the worker checks every event's tag and needs the floor's key ring: %s", e)
        return 2
    return 0
