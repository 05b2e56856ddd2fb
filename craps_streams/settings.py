"""Every setting of craps-streams in one frozen, typed object: `Settings`.

Each field is one `CRAPS_<NAME>` environment variable with a type, a default and a one-line
description. The settings are read once, at the edge (the CLI's `main`, a service's start, the
floor view's Faust module), from the environment and the defaults; a command's flags then override
single values with `Settings.replace(...)`. Library code takes what it needs as typed
parameters (a `Topics`, a `Broker`, a `Thresholds`, a port) and never reads the environment.

msgspec does the reading: each variable is converted to its field's type and checked against
its bounds (`msgspec.convert`, strings to numbers as the environment has them), and a value that is
not valid stops the start with a `SettingsError` naming the variable, instead of a late ValueError.
msgspec rather than pydantic-settings: every command starts by reading the settings, and
pydantic-settings' import (pydantic, pydantic-core's schemas, its sources) is about 0.2 s of CPU, more
than the rest of a command's start; msgspec, already the history's JSON decoder, imports in a few
milliseconds. What is left by hand is picking the CRAPS_* variables out of the environment.

The table of every setting (docs/operating/settings.md, the `--help` epilogs) is rendered from the
fields here:

    python3 -m craps_streams.settings --markdown > docs/operating/settings.md

The annotations are not postponed (no `from __future__ import annotations`): the class body makes
them once as it runs from the cached bytecode, where msgspec's first `convert` would otherwise
compile and evaluate each field's annotation text at every start.
"""
import functools
import os
import sys
import textwrap
from pathlib import Path
from typing import Annotated, Literal, Mapping, Optional, get_args, get_origin

import msgspec
from msgspec import Meta

from craps_streams.kafka.security import Broker
from craps_streams.surveillance.dice_watch import DiceWatch
from craps_streams.surveillance.table_watch import Thresholds
from craps_streams.topics import DEFAULT_APP_ID, DEFAULT_PREFIX, Topics

ENV_PREFIX = "CRAPS_"
_THRESHOLDS, _DICE = Thresholds(), DiceWatch()


class SettingsError(ValueError):
    """A variable's value that is not valid for its setting: names the variable, the value and why."""

    def __init__(self, variable: str, value: object, reason: str):
        super().__init__(f"the setting {variable}={value!r} is not valid: {reason}")
        self.variable, self.value, self.reason = variable, value, reason


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """The settings of every craps-streams command and service (env var CRAPS_<FIELD NAME>).

    `explicit` names the fields set by a variable or by `replace`, not left at their default."""

    # The broker and its topics
    kafka_bootstrap: Annotated[str, Meta(description="Kafka bootstrap servers, host:port[,host:port]; --bootstrap overrides it")] = "127.0.0.1:9092"
    topic_prefix: Annotated[str, Meta(description="prefix of every topic name (a `make run` floor's: craps.run-<time>.)")] = DEFAULT_PREFIX
    app_id: Annotated[str, Meta(description="the floor's worker group and transactional id prefix")] = DEFAULT_APP_ID
    replication_factor: Annotated[Optional[Annotated[int, Meta(ge=1)]], Meta(description="replication factor of new topics (default: the cluster's size, at most 3)")] = None
    secrets_dir: Annotated[Optional[Path], Meta(description="the secrets directory: clients/<role>.properties, table-keys.json, archive-key (default .secrets in the current directory, where infra/kafka/kafka.sh and `keys init` make them)")] = None
    kafka_config: Annotated[Optional[Path], Meta(description="one Kafka client config file for every role instead of $CRAPS_SECRETS_DIR/clients/<role>.properties")] = None
    schema_dir: Annotated[Optional[Path], Meta(description="the Avro schemas (default: the schemas inside the package)")] = None
    table_keys: Annotated[Optional[Path], Meta(description="the table key ring (default $CRAPS_SECRETS_DIR/table-keys.json, else .secrets/table-keys.json)")] = None
    archive_key: Annotated[Optional[Path], Meta(description="the archiver's key that seals an archive's chain head (default $CRAPS_SECRETS_DIR/archive-key, else .secrets/archive-key)")] = None

    # The settling worker
    core: Annotated[Literal["auto", "python", "native"], Meta(description="the rules core: python, native, or auto (native when built)")] = "auto"
    web_port: Annotated[int, Meta(ge=0, le=65535), Meta(description="the worker's web port (/metrics, /state): the default of --web-port")] = 6066
    web_host: Annotated[str, Meta(description="the address the web servers listen on")] = "127.0.0.1"
    web_config: Annotated[Optional[Path], Meta(description="an exporter-toolkit web config: TLS and basic auth on the web servers")] = None
    floor_url: Annotated[Optional[str], Meta(description="where the worker's / redirects (default http://127.0.0.1:6070/, the floor view)")] = None
    session_timeout_ms: Annotated[int, Meta(gt=0), Meta(description="the worker's Kafka group session timeout, ms")] = 10_000
    heartbeat_interval_ms: Annotated[Optional[Annotated[int, Meta(gt=0)]], Meta(description="the worker's heartbeat interval, ms (default a fifth of the session timeout)")] = None
    transaction_timeout_ms: Annotated[int, Meta(gt=0), Meta(description="the worker's transaction timeout, ms")] = 60_000
    max_poll_interval_ms: Annotated[int, Meta(gt=0), Meta(description="the worker's longest time between two polls, ms")] = 120_000
    retry_backoff_ms: Annotated[int, Meta(ge=0), Meta(description="the worker's producer retry backoff, ms")] = 10

    # The surveillance thresholds: the worker's and a replay's must agree for the replay to match
    hold_tail_alert: Annotated[float, Meta(gt=0), Meta(description="hold_anomaly at or below this tail probability")] = _THRESHOLDS.tail_alert
    hold_check_z: Annotated[float, Meta(description="a hold line's tail is evaluated once its z is at or below minus this")] = _THRESHOLDS.check_z
    position_tail_alert: Annotated[float, Meta(gt=0), Meta(description="position_anomaly at or below this tail probability")] = _THRESHOLDS.position_alert
    dice_seven_h: Annotated[float, Meta(gt=0), Meta(description="the sevens CUSUM's alert threshold (log-likelihood ratio)")] = _DICE.seven_h
    dice_face_h: Annotated[float, Meta(gt=0), Meta(description="the faces CUSUM's alert threshold (log-likelihood ratio)")] = _DICE.face_h
    dice_cell_h: Annotated[float, Meta(gt=0), Meta(description="the cells CUSUM's alert threshold (log-likelihood ratio)")] = _DICE.cell_h

    # The floor view
    floor_port: Annotated[int, Meta(ge=0, le=65535), Meta(description="the floor view's port: the default of `floor --port`")] = 6070
    floor_instance: Annotated[str, Meta(description="the floor view's instance name: the default of `floor --instance`")] = "1"
    floor_datadir: Annotated[Optional[Path], Meta(description="the floor view's local state (default a new temporary directory)")] = None
    floor_session_timeout_ms: Annotated[int, Meta(gt=0), Meta(description="the floor view's Kafka group session timeout, ms")] = 10_000
    floor_controllers: Annotated[Optional[str], Meta(description="the table controllers' /metrics URLs, comma-separated: the floor view shows the events held at each table (default: none)")] = None

    # The status panel
    prometheus_url: Annotated[str, Meta(description="Prometheus, read by `status`: the default of --prometheus-url")] = "http://127.0.0.1:9090"
    scrape_username: Annotated[Optional[str], Meta(description="basic-auth user for secured web sides (`status`, Prometheus' scrape config)")] = None
    scrape_password_file: Annotated[Optional[Path], Meta(description="the file holding that user's password")] = None
    scrape_ca_file: Annotated[Optional[Path], Meta(description="the CA of the web sides' certificate (TLS on when set)")] = None

    # The report
    report_tz: Annotated[str, Meta(description="the casino's IANA time zone: the default of `report --tz`")] = "America/New_York"
    report_day_start: Annotated[str, Meta(description="local time the gaming day starts: the default of `report --day-start`")] = "06:00"
    report_shifts: Annotated[Optional[str], Meta(description="the default of `report --shifts` (day, swing, grave: 8 hours each)")] = None
    chromium: Annotated[Optional[str], Meta(description="the browser that prints `report --pdf` (default: chromium on the PATH)")] = None

    # Finance's ledger
    ledger_db: Annotated[str, Meta(description="the ledger's database URL: sqlite:///FILE or postgresql+psycopg://... (a PostgreSQL URL carries a password: set it here rather than on the command line)")] = "sqlite:///.run/ledger.db"
    ledger_port: Annotated[int, Meta(ge=0, le=65535), Meta(description="the ledger's /metrics port on 127.0.0.1 (0: none)")] = 6075
    ledger_instance: Annotated[str, Meta(description="this ledger's name in its consumer group, kept across restarts (each ledger process of a floor has its own)")] = "1"

    explicit: frozenset[str] = frozenset()

    def replace(self, **changes) -> "Settings":
        """A copy with `changes` (field: value), each checked as a variable's value is."""
        return _read({**_values(self), **changes}, self.explicit | changes.keys(), variables=False)

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
        return {env_name(n): str(getattr(self, n)) for n in sorted(names) if n in self.explicit}


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def load(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings from the environment (CRAPS_* variables, any case; an empty one counts as unset)
    and the defaults: called at the edge only. A SettingsError for a value that is not valid."""
    fields = set(_FIELDS)
    values = {}
    for key, value in (os.environ if environ is None else environ).items():
        name = key.lower().removeprefix(ENV_PREFIX.lower()) if key.upper().startswith(ENV_PREFIX) else None
        if name in fields and value != "":
            values[name] = value
    return _read(values, frozenset(values), variables=True)


def _convert_path(kind, value):
    if kind is Path and isinstance(value, (str, Path)):
        return Path(value)
    raise NotImplementedError


def _read(values: dict, explicit: frozenset[str], variables: bool) -> Settings:
    try:
        settings = msgspec.convert(values, Settings, strict=False, dec_hook=_convert_path)
    except msgspec.ValidationError as e:
        # msgspec's message ends "- at `$.field`": the field is the variable the reader set
        said, _, where = str(e).rpartition(" - at `$.")
        field = where.rstrip("`").split(".")[0].split("[")[0]
        raise SettingsError(env_name(field) if variables else field, values.get(field), _reason(field, said)) from None
    return msgspec.structs.replace(settings, explicit=frozenset(explicit))


def _reason(field: str, said: str) -> str:
    """msgspec's words for a refused value, as a reader of the variable wants them: the choices of a
    Literal by name; the type and bounds of a number (every variable's value is a string: "got
    `str`" says nothing)."""
    kind = _declared()[field][0] if field in _FIELDS else None
    if get_origin(kind) is not Literal:  # Optional[Literal[...]]: the Literal inside
        kind = next((a for a in get_args(kind) if get_origin(a) is Literal), kind)
    if get_origin(kind) is Literal:
        names = [repr(c) for c in get_args(kind)]
        return f"expected {', '.join(names[:-1])} or {names[-1]}"
    said = said.replace("`", "").replace(", got str", "")
    return said[:1].lower() + said[1:]


def _values(settings: Settings) -> dict:
    return {name: getattr(settings, name) for name in _FIELDS}


_IN_USE: Settings | None = None


def use(settings: Settings) -> Settings:
    """Hand the settings that hold for the whole process to their adapters, once, at the edge: the
    rules core that settles, the broker every Kafka client connects to, the schemas the codec
    reads; and numpy's BLAS one thread, unless the environment names a number (numpy is loaded
    for the tails' transforms alone, pocketfft in the calling thread; OpenBLAS would start a
    thread per core as it loads, which spin: about 0.1 s of CPU of every report and of each of its
    jobs). Returns `settings`, which `in_use` then answers; a RuntimeError when the core asked for
    cannot be had (native without a usable accelerator)."""
    global _IN_USE
    from craps_streams.accelerator.rules import choose
    from craps_streams.codec.schemas import use_schema_dir
    from craps_streams.kafka.security import use_broker

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # read by OpenBLAS as numpy loads
    choose(settings.core)
    use_broker(settings.broker)
    use_schema_dir(settings.schema_dir)
    _IN_USE = settings
    return settings


def in_use() -> Settings | None:
    """The settings the edge handed to `use`, or None before it has: a module that is an edge only
    when a foreign runner imports it (the floor view under `faust -A`) reads its own only then."""
    return _IN_USE


# ---------------------------------------------------------------- the table of every setting

def _type_name(annotation) -> str:
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) is Literal:
        return " or ".join(str(a) for a in args)
    if args:  # Optional[X]: unset means the default the description names
        return _type_name(args[0])
    return {Path: "path"}.get(annotation, annotation.__name__)


@functools.cache
def _declared() -> dict[str, tuple[object, object, str]]:
    """field: (its type, its default, its description), in declaration order; `explicit` is no setting.
    Read once from the fields as msgspec resolved them: every command's --help epilog names some."""
    out = {}
    for f in msgspec.structs.fields(Settings):
        if f.name == "explicit":
            continue
        kind, *about = get_args(f.type)  # Annotated[type, Meta(bounds)..., Meta(description)]
        description = next((m.description for m in about if isinstance(m, Meta) and m.description), "")
        out[f.name] = (kind, f.default, description)
    return out


def rows() -> list[tuple[str, str, str, str, str]]:
    """(field, env var, type, default, description) of every setting, in declaration order."""
    return [(name, env_name(name), _type_name(kind), "" if default is None else str(default), description)
            for name, (kind, default, description) in _declared().items()]


_FIELDS = tuple(f for f in Settings.__struct_fields__ if f != "explicit")


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
    for name, value in _values(load()).items():
        print(f"{env_name(name)}={'' if value is None else value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
