"""The floor view's Kafka settings, translated for Faust: a broker URL, SASL credentials, an ssl_context.

The settings come from craps_streams.kafka.settings.client_settings("floor"), in the shape aiokafka takes
them (bootstrap_servers, security_protocol, sasl_mechanism, sasl_plain_username,
sasl_plain_password, ssl_context or ssl_cafile), as every other client of the project; Faust wants them as `broker`, `broker_credentials`
and `ssl_context` (faust.auth). Only the translation lives here.
"""
from __future__ import annotations

import ssl
from typing import Any, Mapping

from craps_streams.kafka.settings import client_settings


def view_client_settings() -> dict[str, Any]:
    """The floor role's client settings, from the one place that builds every client's
    (craps_streams.kafka.settings.client_settings)."""
    return client_settings("floor")


def faust_broker_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """faust.App keyword arguments (broker, broker_credentials, ssl_context) for aiokafka settings."""
    from faust.auth import SASLCredentials, SSLCredentials

    servers = settings["bootstrap_servers"]
    if isinstance(servers, str):
        servers = [s.strip() for s in servers.split(",") if s.strip()]
    out: dict[str, Any] = {"broker": ";".join(f"kafka://{s}" for s in servers)}
    # The clients' timeouts (craps_streams/kafka/settings.py: a cut-off node noticed as after a kill -9),
    # in faust's names and seconds: faust's own defaults wait 90 s for a request, 20 minutes for a send.
    if "request_timeout_ms" in settings:
        out["broker_request_timeout"] = out["producer_request_timeout"] = settings["request_timeout_ms"] / 1000
    protocol = (settings.get("security_protocol") or "PLAINTEXT").upper()
    context = settings.get("ssl_context")
    if context is None and protocol in ("SSL", "SASL_SSL"):
        context = ssl.create_default_context(cafile=settings.get("ssl_cafile"))
    if protocol.startswith("SASL_"):
        out["broker_credentials"] = SASLCredentials(
            username=settings.get("sasl_plain_username"), password=settings.get("sasl_plain_password"),
            mechanism=settings.get("sasl_mechanism") or "PLAIN",
            ssl_context=context if protocol == "SASL_SSL" else None)
    elif protocol == "SSL":
        out["broker_credentials"] = SSLCredentials(context)
    elif protocol != "PLAINTEXT":
        raise ValueError(f"unknown security_protocol {protocol!r}")
    return out
