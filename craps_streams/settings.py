"""Every setting of craps-streams in one frozen, typed object: `Settings`.

Each field is one `CRAPS_<NAME>` environment variable with a type, a default and a one-line
description. The settings are read once, at the edge (the CLI's `main`, a service's start, the
floor view's Faust module), from the environment and the defaults; a command's flags then override
single values with `Settings.model_copy(update=...)`. Library code takes what it needs as typed
parameters (a `Topics`, a `Broker`, a `Thresholds`, a port) and never reads the environment.

pydantic-settings does the reading: it converts and validates each variable against the field's
type and names the variable in its error, so a typo in a port or a timeout stops the start with a
clear message instead of a late ValueError.

The table of every setting (docs/operating/settings.md, the `--help` epilogs) is rendered from the
fields here:

    python3 -m craps_streams.settings --markdown > docs/operating/settings.md
"""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Literal, Optional, get_args, get_origin

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from craps_streams.kafka.security import Broker
from craps_streams.surveillance.dice_watch import DiceWatch
from craps_streams.surveillance.table_watch import Thresholds
from craps_streams.topics import DEFAULT_APP_ID, DEFAULT_PREFIX, Topics

ENV_PREFIX = "CRAPS_"
_THRESHOLDS, _DICE = Thresholds(), DiceWatch()


class Settings(BaseSettings):
    """The settings of every craps-streams command and service (env var CRAPS_<FIELD NAME>)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="ignore",
                                      case_sensitive=False, env_ignore_empty=True)

    # The broker and its topics
    kafka_bootstrap: str = Field("127.0.0.1:9092", description="Kafka bootstrap servers, host:port[,host:port]; --bootstrap overrides it")
    topic_prefix: str = Field(DEFAULT_PREFIX, description="prefix of every topic name (a `make run` floor's: craps.run-<time>.)")
    app_id: str = Field(DEFAULT_APP_ID, description="the floor's worker group and transactional id prefix")
    replication_factor: Optional[int] = Field(None, ge=1, description="replication factor of new topics (default: the cluster's size, at most 3)")
    secrets_dir: Optional[Path] = Field(None, description="the secrets directory: clients/<role>.properties, table-keys.json, archive-key (default .secrets in the current directory, where infra/kafka/kafka.sh and `keys init` make them)")
    kafka_config: Optional[Path] = Field(None, description="one Kafka client config file for every role instead of $CRAPS_SECRETS_DIR/clients/<role>.properties")
    schema_dir: Optional[Path] = Field(None, description="the Avro schemas (default: the schemas inside the package)")
    table_keys: Optional[Path] = Field(None, description="the table key ring (default $CRAPS_SECRETS_DIR/table-keys.json, else .secrets/table-keys.json)")
    archive_key: Optional[Path] = Field(None, description="the archiver's key that seals an archive's chain head (default $CRAPS_SECRETS_DIR/archive-key, else .secrets/archive-key)")

    # The settling worker
    core: Literal["auto", "python", "native"] = Field("auto", description="the rules core: python, native, or auto (native when built)")
    web_port: int = Field(6066, ge=0, le=65535, description="the worker's web port (/metrics, /state): the default of --web-port")
    web_host: str = Field("127.0.0.1", description="the address the web servers listen on")
    web_config: Optional[Path] = Field(None, description="an exporter-toolkit web config: TLS and basic auth on the web servers")
    floor_url: Optional[str] = Field(None, description="where the worker's / redirects (default http://127.0.0.1:6070/, the floor view)")
    session_timeout_ms: int = Field(10_000, gt=0, description="the worker's Kafka group session timeout, ms")
    heartbeat_interval_ms: Optional[int] = Field(None, gt=0, description="the worker's heartbeat interval, ms (default a fifth of the session timeout)")
    transaction_timeout_ms: int = Field(60_000, gt=0, description="the worker's transaction timeout, ms")
    max_poll_interval_ms: int = Field(120_000, gt=0, description="the worker's longest time between two polls, ms")
    retry_backoff_ms: int = Field(10, ge=0, description="the worker's producer retry backoff, ms")

    # The surveillance thresholds: the worker's and a replay's must agree for the replay to match
    hold_tail_alert: float = Field(_THRESHOLDS.tail_alert, gt=0, description="hold_anomaly at or below this tail probability")
    hold_check_z: float = Field(_THRESHOLDS.check_z, description="a hold line's tail is evaluated once its z is at or below minus this")
    position_tail_alert: float = Field(_THRESHOLDS.position_alert, gt=0, description="position_anomaly at or below this tail probability")
    dice_seven_h: float = Field(_DICE.seven_h, gt=0, description="the sevens CUSUM's alert threshold (log-likelihood ratio)")
    dice_face_h: float = Field(_DICE.face_h, gt=0, description="the faces CUSUM's alert threshold (log-likelihood ratio)")
    dice_cell_h: float = Field(_DICE.cell_h, gt=0, description="the cells CUSUM's alert threshold (log-likelihood ratio)")

    # The floor view
    floor_port: int = Field(6070, ge=0, le=65535, description="the floor view's port: the default of `floor --port`")
    floor_instance: str = Field("1", description="the floor view's instance name: the default of `floor --instance`")
    floor_datadir: Optional[Path] = Field(None, description="the floor view's local state (default a new temporary directory)")
    floor_session_timeout_ms: int = Field(10_000, gt=0, description="the floor view's Kafka group session timeout, ms")
    floor_controllers: Optional[str] = Field(None, description="the table controllers' /metrics URLs, comma-separated: the floor view shows the events held at each table (default: none)")

    # The status panel
    prometheus_url: str = Field("http://127.0.0.1:9090", description="Prometheus, read by `status`: the default of --prometheus-url")
    scrape_username: Optional[str] = Field(None, description="basic-auth user for secured web sides (`status`, Prometheus' scrape config)")
    scrape_password_file: Optional[Path] = Field(None, description="the file holding that user's password")
    scrape_ca_file: Optional[Path] = Field(None, description="the CA of the web sides' certificate (TLS on when set)")

    # The report
    report_tz: str = Field("America/New_York", description="the casino's IANA time zone: the default of `report --tz`")
    report_day_start: str = Field("06:00", description="local time the gaming day starts: the default of `report --day-start`")
    report_shifts: Optional[str] = Field(None, description="the default of `report --shifts` (day, swing, grave: 8 hours each)")
    chromium: Optional[str] = Field(None, description="the browser that prints `report --pdf` (default: chromium on the PATH)")

    # Finance's ledger
    ledger_db: str = Field("sqlite:///.run/ledger.db", description="the ledger's database URL: sqlite:///FILE or postgresql+psycopg://... (a PostgreSQL URL carries a password: set it here rather than on the command line)")
    ledger_port: int = Field(6075, ge=0, le=65535, description="the ledger's /metrics port on 127.0.0.1 (0: none)")
    ledger_instance: str = Field("1", description="this ledger's name in its consumer group, kept across restarts (each ledger process of a floor has its own)")

    @property
    def topics(self) -> Topics:
        """The floor's topic names, from its prefix."""
        return Topics(self.topic_prefix)

    @property
    def secrets(self) -> Path:
        return self.secrets_dir or Path(".secrets")

    @property
    def broker(self) -> Broker:
        """Where the process's Kafka clients connect, and the files they log in with."""
        return Broker(self.kafka_bootstrap, self.secrets, self.kafka_config)

    # The keys' default directory is the secrets directory: .secrets in the current directory, where
    # `keys init` makes them, as infra/kafka/kafka.sh makes the Kafka client configs.
    @property
    def key_ring_path(self) -> Path:
        return self.table_keys or (self.secrets_dir or Path(".secrets")) / "table-keys.json"

    @property
    def archive_key_path(self) -> Path:
        return self.archive_key or (self.secrets_dir or Path(".secrets")) / "archive-key"

    @property
    def thresholds(self) -> Thresholds:
        return Thresholds(self.hold_tail_alert, self.hold_check_z, self.position_tail_alert,
                          DiceWatch(self.dice_seven_h, self.dice_face_h, self.dice_cell_h))

    @property
    def heartbeat_ms(self) -> int:
        return self.heartbeat_interval_ms or max(self.session_timeout_ms // 5, 100)

    def thresholds_set(self) -> dict[str, str]:
        """The surveillance thresholds set explicitly, by variable name (a report's provenance)."""
        names = ("hold_tail_alert", "hold_check_z", "position_tail_alert", "dice_seven_h", "dice_face_h", "dice_cell_h")
        return {env_name(n): str(getattr(self, n)) for n in sorted(names) if n in self.model_fields_set}


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def load() -> Settings:
    """The settings from the environment and the defaults: called at the edge only."""
    return Settings()


def use(settings: Settings) -> Settings:
    """Hand the settings that hold for the whole process to their adapters, once, at the edge: the
    rules core that settles, the broker every Kafka client connects to, the schemas the codec
    reads. Returns `settings`; a RuntimeError when the core asked for cannot be had (native without
    a usable accelerator)."""
    from craps_streams.accelerator.rules import choose
    from craps_streams.codec.schemas import use_schema_dir
    from craps_streams.kafka.security import use_broker

    choose(settings.core)
    use_broker(settings.broker)
    use_schema_dir(settings.schema_dir)
    return settings


# ---------------------------------------------------------------- the table of every setting

def _type_name(annotation) -> str:
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) is Literal:
        return " or ".join(str(a) for a in args)
    if args:  # Optional[X]: unset means the default the description names
        return _type_name(args[0])
    return {Path: "path"}.get(annotation, annotation.__name__)


def rows() -> list[tuple[str, str, str, str, str]]:
    """(field, env var, type, default, description) of every setting, in declaration order."""
    out = []
    for name, info in Settings.model_fields.items():
        default = "" if info.default is None else str(info.default)
        out.append((name, env_name(name), _type_name(info.annotation), default, info.description or ""))
    return out


def env_names() -> list[str]:
    return [env for _, env, _, _, _ in rows()]


def help_table(names=None, width: int = 100) -> str:
    """The settings as plain text for a `--help` epilog, in `names`' order (field names; None: every
    setting), each variable's description wrapped under it."""
    by_name = {r[0]: r for r in rows()}
    lines = []
    for name in (names if names is not None else by_name):
        _, env, _, default, description = by_name[name]
        text = description + (f" (default {default})" if default else "")
        lines.append(f"  {env}")
        lines += textwrap.wrap(text, width, initial_indent=" " * 6, subsequent_indent=" " * 6)
    return "\n".join(lines)


def markdown() -> str:
    """docs/operating/settings.md: the table of every setting."""
    head = ["# Settings", "",
            "Every setting of craps-streams is one `CRAPS_*` environment variable, read once when a",
            "command or service starts (`craps_streams/settings.py`); a command's flags override single",
            "values. An empty variable counts as unset. This page is generated from the code:",
            "`python3 -m craps_streams.settings --markdown > docs/operating/settings.md`.", "",
            "| Variable | Type | Default | Description |", "|---|---|---|---|"]
    body = [f"| `{env}` | {typ} | {f'`{default}`' if default else '-'} | {description} |"
            for _, env, typ, default, description in rows()]
    return "\n".join(head + body) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--markdown"]:
        sys.stdout.write(markdown())
        return 0
    if args:
        print("usage: python3 -m craps_streams.settings [--markdown]", file=sys.stderr)
        return 2
    for name, value in load().model_dump().items():
        print(f"{env_name(name)}={'' if value is None else value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
