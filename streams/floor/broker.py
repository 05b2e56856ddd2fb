"""The floor view's Kafka settings, translated for Faust: a broker URL, SASL credentials, an ssl_context.

The settings come in the shape aiokafka takes them (bootstrap_servers, security_protocol,
sasl_mechanism, sasl_plain_username, sasl_plain_password, ssl_context or ssl_cafile), which is what
every other client of the project is built from; Faust wants them as `broker`, `broker_credentials`
and `ssl_context` (faust.auth). Only the translation lives here.
"""
from __future__ import annotations

import os
import ssl
from typing import Any, Mapping

from streams.topics import default_bootstrap


def view_client_settings() -> dict[str, Any]:
    """aiokafka-shaped settings of the floor-view role: the bootstrap servers, and when
    CRAPS_KAFKA_SECURITY_PROTOCOL is set the SASL/TLS settings from the environment (the same
    variable names the secured broker's other clients use)."""
    env = os.environ
    settings: dict[str, Any] = {"bootstrap_servers": default_bootstrap()}
    protocol = env.get("CRAPS_KAFKA_SECURITY_PROTOCOL")
    if protocol:
        settings["security_protocol"] = protocol
        if env.get("CRAPS_KAFKA_SASL_MECHANISM"):
            settings["sasl_mechanism"] = env["CRAPS_KAFKA_SASL_MECHANISM"]
            settings["sasl_plain_username"] = env.get("CRAPS_KAFKA_USERNAME")
            password_file = env.get("CRAPS_KAFKA_PASSWORD_FILE")
            settings["sasl_plain_password"] = (open(password_file).read().strip() if password_file
                                               else env.get("CRAPS_KAFKA_PASSWORD"))
        if env.get("CRAPS_KAFKA_CA_FILE"):
            settings["ssl_cafile"] = env["CRAPS_KAFKA_CA_FILE"]
    return settings


def faust_broker_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """faust.App keyword arguments (broker, broker_credentials, ssl_context) for aiokafka settings."""
    from faust.auth import SASLCredentials, SSLCredentials

    servers = settings["bootstrap_servers"]
    if isinstance(servers, str):
        servers = [s.strip() for s in servers.split(",") if s.strip()]
    out: dict[str, Any] = {"broker": ";".join(f"kafka://{s}" for s in servers)}
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
