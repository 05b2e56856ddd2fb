"""The status panel's sources, read over HTTP: the workers' /metrics, the floor view's /api/floor,
Prometheus' HTTP API (its active targets and firing alerts) and the ledger's /metrics. A thin shell over
craps_streams/metrics/panel.py: each read is answered or named unreachable, never raised.

Secured web sides (CRAPS_WEB_CONFIG on the workers and the view) are read with the credentials
Prometheus' scrape uses (craps_streams/metrics/scrape_config.py): the settings CRAPS_SCRAPE_USERNAME
and CRAPS_SCRAPE_PASSWORD_FILE (basic auth), CRAPS_SCRAPE_CA_FILE (the CA of the servers' certificate).
"""
from __future__ import annotations

import base64
import json
import pathlib
import ssl
import time
from collections import deque
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Iterator

from craps_streams.metrics.panel import Snapshot, Source, snapshot_of


@dataclass(frozen=True)
class Sources:
    metrics_urls: tuple[str, ...]
    floor_url: str = ""  # the floor view's base URL ("" : not read)
    prometheus_url: str = ""  # Prometheus' base URL ("" : not read)
    ledger_url: str = ""  # the ledger's /metrics ("" : not read)
    username: str = ""
    password: str = ""
    ca_file: str = ""
    timeout_s: float = 2.0

    @classmethod
    def with_credentials(cls, metrics_urls, floor_url: str = "", prometheus_url: str = "", *,
                         username: str | None = None, password_file: pathlib.Path | str | None = None,
                         ca_file: pathlib.Path | str | None = None, timeout_s: float = 2.0,
                         ledger_url: str = "") -> "Sources":
        """The sources, read with the scrape's user, the password in `password_file` and `ca_file`."""
        return cls(tuple(metrics_urls), floor_url, prometheus_url, ledger_url, username or "",
                   pathlib.Path(password_file).read_text().strip() if password_file else "",
                   str(ca_file or ""), timeout_s)


def _get(sources: Sources, url: str, secured: bool = True) -> bytes:
    request = urllib.request.Request(url, headers={"Accept": "*/*"})
    if secured and sources.username:
        token = base64.b64encode(f"{sources.username}:{sources.password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    context = ssl.create_default_context(cafile=sources.ca_file) if sources.ca_file and url.startswith("https") \
        else None
    with urllib.request.urlopen(request, timeout=sources.timeout_s, context=context) as answer:
        return answer.read()


def _why(error: Exception) -> str:
    if isinstance(error, urllib.error.HTTPError):
        return f"HTTP {error.code}"
    if isinstance(error, urllib.error.URLError):
        reason = error.reason
        return str(getattr(reason, "strerror", None) or reason)
    return type(error).__name__ if not str(error) else str(error)


def _join(base: str, path: str) -> str:
    return base.rstrip("/") + path


def take(sources: Sources, now_s: float, previous: Snapshot | None = None) -> Snapshot:
    """Read every source once and make the snapshot (rates against `previous`)."""
    answered, texts = [], []
    for url in sources.metrics_urls:
        try:
            texts.append(_get(sources, url).decode())
            answered.append(Source("metrics", url))
        except (OSError, ValueError) as e:
            answered.append(Source("metrics", url, _why(e)))
    floor = None
    if sources.floor_url:
        url = _join(sources.floor_url, "/api/floor")
        try:
            floor = json.loads(_get(sources, url))
            answered.append(Source("floor view", url))
        except (OSError, ValueError) as e:
            answered.append(Source("floor view", url, _why(e)))
    targets = firing = None
    if sources.prometheus_url:
        url = sources.prometheus_url
        try:
            active = json.loads(_get(sources, _join(url, "/api/v1/targets?state=active"), secured=False))
            health = [t.get("health") for t in active["data"]["activeTargets"]
                      if t.get("labels", {}).get("job", "").startswith("craps")]
            targets = (health.count("up"), len(health))
            alerts = json.loads(_get(sources, _join(url, "/api/v1/alerts"), secured=False))
            firing = tuple(sorted({a["labels"].get("alertname", "?") for a in alerts["data"]["alerts"]
                                   if a.get("state") == "firing"}))
            answered.append(Source("Prometheus", url))
        except (OSError, ValueError, KeyError) as e:
            answered.append(Source("Prometheus", url, _why(e)))
    ledger_texts = None
    if sources.ledger_url:
        try:
            ledger_texts = [_get(sources, sources.ledger_url, secured=False).decode()]
            answered.append(Source("ledger", sources.ledger_url))
        except (OSError, ValueError) as e:
            answered.append(Source("ledger", sources.ledger_url, _why(e)))
    return snapshot_of(now_s, texts, floor, targets, firing, tuple(answered), previous, ledger_texts)


def watch(sources: Sources, interval_s: float, window_s: float = 10.0, clock=time.time,
          sleep=time.sleep) -> Iterator[Snapshot]:
    """A snapshot every `interval_s` seconds, each with the rates over the last `window_s` seconds
    (the workers commit in batches: a rate over one short interval jumps)."""
    recent: deque[Snapshot] = deque()
    while True:
        started = clock()
        while len(recent) > 1 and recent[1].taken_s <= started - window_s:
            recent.popleft()
        snap = take(sources, started, recent[0] if recent else None)
        recent.append(snap)
        yield snap
        sleep(max(0.0, interval_s - (clock() - started)))
