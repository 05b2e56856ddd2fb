"""The options several commands share, and the epilogs of their --help: the settings a command reads
(rendered from craps_streams/settings.py) and the exit codes."""
from __future__ import annotations

import argparse
import textwrap

from craps_streams.settings import help_table

# The settings each kind of command reads, by field name (craps_streams.settings.Settings).
KAFKA = ("kafka_bootstrap", "topic_prefix", "secrets_dir", "kafka_config", "schema_dir")
APP_ID = ("app_id",)
KEYS = ("table_keys",)
ARCHIVE_KEY = ("archive_key",)
RULES = ("core", "hold_tail_alert", "hold_check_z", "position_tail_alert", "dice_seven_h", "dice_face_h",
         "dice_cell_h")
WEB = ("web_host", "web_config")
WORKER = ("web_port", "floor_url", "session_timeout_ms", "heartbeat_interval_ms", "transaction_timeout_ms",
          "max_poll_interval_ms", "retry_backoff_ms")
FLOOR_VIEW = ("floor_port", "floor_instance", "floor_datadir", "floor_session_timeout_ms", "floor_controllers")
TOPICS = ("replication_factor",)
REPORT = ("report_tz", "report_day_start", "report_shifts", "chromium")
LEDGER = ("ledger_db", "ledger_port", "ledger_instance", "report_tz", "report_day_start", "report_shifts")
STATUS = ("topic_prefix", "web_port", "floor_url", "floor_port", "prometheus_url", "scrape_username",
          "scrape_password_file", "scrape_ca_file")

FLOOR_NOTE = """\
A `make run` floor writes its CRAPS_TOPIC_PREFIX and CRAPS_APP_ID to .run/floor.env: run
`source .run/floor.env` in a second terminal to work on that floor's topics."""
EXIT_CODES = """\
exit codes: 0 done, 1 findings, 2 bad argument, 3 unreadable file, 4 missing secrets or key ring,
5 broker unreachable, 6 broker refused (login, TLS, ACLs), 70 internal error, 130 interrupted;
--debug shows the traceback of an error."""
SETTINGS_NOTE = "Every setting, with its type and default: docs/operating/settings.md."


class Epilog:
    """A command's epilog: the settings it reads (the fields of `groups`, each once, in order), its
    notes, the exit codes. Laid out when a --help shows it (`Parser`), not when the parser is made:
    the settings' table reads every setting's declared type, a cost a run without --help does not
    pay (a replay's start)."""

    __slots__ = ("groups", "notes")

    def __init__(self, groups: tuple, notes: tuple[str, ...]):
        self.groups, self.notes = groups, notes

    def __str__(self) -> str:
        names = list(dict.fromkeys(name for group in self.groups for name in group))
        parts = ["settings (environment variables):\n" + help_table(names)] if names else []
        return "\n\n".join(parts + list(self.notes) + [SETTINGS_NOTE, EXIT_CODES])


def epilog(*groups: tuple, notes: tuple[str, ...] = (FLOOR_NOTE,)) -> Epilog:
    """The epilog of a command that reads the settings of `groups`, with `notes`."""
    return Epilog(groups, notes)


class Parser(argparse.ArgumentParser):
    """The program's parser, and its commands' (a subparser is made of its parent's class): an
    `Epilog` laid out as its help is."""

    def format_help(self) -> str:
        if isinstance(self.epilog, Epilog):
            self.epilog = str(self.epilog)
        return super().format_help()


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions wrapped to the terminal, paragraph by paragraph; the settings and exit code
    paragraphs of the epilogs (already laid out in lines) kept as they are."""

    def _fill_text(self, text, width, indent):
        return "\n\n".join(p if "\n" in p else textwrap.fill(p, width, initial_indent=indent,
                                                               subsequent_indent=indent)
                           for p in text.split("\n\n"))


def add_bootstrap(p) -> None:
    p.add_argument("--bootstrap", metavar="HOST:PORT",
                   help="Kafka bootstrap servers (default: $CRAPS_KAFKA_BOOTSTRAP or 127.0.0.1:9092)")


def add_loglevel(p) -> None:
    p.add_argument("--loglevel", default="warning", choices=("debug", "info", "warning", "error"),
                   help="what the service logs (default warning)")


def add_tag_options(p) -> None:
    p.add_argument("--keys", metavar="FILE",
                   help="the table key ring (default: $CRAPS_TABLE_KEYS or .secrets/table-keys.json)")
    p.add_argument("--accept-untagged", action="store_true",
                   help="let events without any tag through (history from before tags); said in the summary")


def add_slice_options(p) -> None:
    p.add_argument("--tables", metavar="T1,T2", help="comma list of table ids, e.g. T001,T002 (default: every table)")
    p.add_argument("--since", metavar="TIME",
                   help="outputs decided at or after this time (ISO 8601 or epoch ms; default: from the start)")
    p.add_argument("--until", metavar="TIME",
                   help="history fed up to and outputs decided at or before this time (default: to the end)")
