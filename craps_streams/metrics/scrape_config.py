"""Prometheus' scrape config for secured workers: infra/prometheus/prometheus.yml with TLS and basic
auth added to the craps jobs, when the workers serve /metrics under a web config file
(craps_streams/app/web_security.py).

    python -m craps_streams.metrics.scrape_config infra/prometheus/prometheus.yml > .run/prometheus.yml

The web config holds only bcrypt hashes, so Prometheus' own credentials come from the settings:
CRAPS_SCRAPE_USERNAME and CRAPS_SCRAPE_PASSWORD_FILE (basic auth), CRAPS_SCRAPE_CA_FILE (the CA
that signed the workers' certificate; TLS is on when it is set). Relative paths of the base file
(rule_files, file_sd files) are made absolute, so the copy works from anywhere.
"""
from __future__ import annotations

import pathlib
import sys

import yaml


def secured_scrape_config(base: pathlib.Path, username: str | None = None,
                          password_file: pathlib.Path | str | None = None,
                          ca_file: pathlib.Path | str | None = None) -> dict:
    """The base config with TLS (when `ca_file`) and basic auth (when `username`) on the craps jobs."""
    config = yaml.safe_load(base.read_text())
    here = base.resolve().parent
    config["rule_files"] = [str(here / f) for f in config.get("rule_files", [])]
    for job in config.get("scrape_configs", []):
        for sd in job.get("file_sd_configs", []):
            sd["files"] = [str(here / f) for f in sd["files"]]
        if not job["job_name"].startswith("craps"):
            continue
        if ca_file:
            job["scheme"] = "https"
            job["tls_config"] = {"ca_file": str(pathlib.Path(ca_file).resolve())}
        if username:
            job["basic_auth"] = {"username": username, "password_file": str(pathlib.Path(password_file).resolve())}
    return config


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    from craps_streams.settings import load

    settings = load()
    config = secured_scrape_config(pathlib.Path(args[0]), settings.scrape_username, settings.scrape_password_file,
                                   settings.scrape_ca_file)
    print(yaml.safe_dump(config, sort_keys=False), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
