"""`craps-streams`: the command line. Each command is a thin shell: read, apply the core, write.

The commands come in groups, one module each (`GROUPS`); each module's `register(subparsers)` adds
its commands, each with `run(args, settings)` as its default. `main` parses the arguments, reads the
settings once (craps_streams/settings.py: the environment and the defaults, then the command's
--bootstrap), hands the process-wide ones to their adapters, and runs the command.

Every command answers what stops it with one or two lines on stderr, `craps-streams <command>: ...`,
and an exit code of its own kind (craps_streams/cli/errors.py, docs/operating/cli.md); `--debug`
adds the traceback and the Kafka clients' own logs.
"""
from __future__ import annotations

import gc

# The imports below (the settings, the rules, the surveillance) make objects
# that live as long as the process; the cyclic collector's passes over them, while they are made
# and after, free nothing and cost a few percent of a short command. Paused for these imports, the
# objects then frozen out of its walks (gc.freeze), and the collector as it was.
_COLLECTING = gc.isenabled()
gc.disable()

import argparse  # noqa: E402
import importlib  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

from craps_streams.cli.errors import (  # noqa: F401,E402 - the exit codes are the package's too
    EXIT_BROKER_REFUSED,
    EXIT_BROKER_UNREACHABLE,
    EXIT_FILE,
    EXIT_FINDINGS,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SECRETS,
    EXIT_USAGE,
    CommandError,
    command_name,
    explain_error,
)
from craps_streams.cli.history import format_summary  # noqa: F401,E402 - benchmarks print a replay's summary
from craps_streams.cli.options import APP_ID, KAFKA, KEYS, Formatter, Parser, epilog  # noqa: E402
from craps_streams.cli.progress import Progress  # noqa: F401,E402

gc.freeze()
if _COLLECTING:
    gc.enable()

# The command groups, in the order of `craps-streams --help`: craps_streams.cli.<name>.register.
GROUPS = ("replay", "report", "simulate", "controller", "ledger", "keys", "services", "watch", "odds", "admin")


def _version() -> str:
    from craps_streams import __version__ as number
    from craps_streams.accelerator.rules import rules_core
    from craps_streams.settings import load

    try:
        chosen = rules_core(load().core)  # --version answers before the command's settings are read
    except RuntimeError as e:
        return f"craps-streams {number}\nrules core: none ({e})"
    core = f"rules core: {chosen.name}" + (f" ({chosen.note})" if chosen.note else "")
    return f"craps-streams {number}\n{core}"


class _VersionAction(argparse.Action):
    """--version: the package's version and which rules core settles (the setting CRAPS_CORE)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(_version())
        parser.exit()


def _command_of(argv: list[str]) -> str | None:
    """The command `argv` names: its first word that is not an option (the program's own options,
    --version and --debug, take no value), or None."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command; with `command`, of that command's group alone where the group
    of that name holds it (`replay` is in the replay group): its arguments parse the same, and the
    other groups' modules and their --help texts are not made for a run that never shows them.
    Every other case (no command, an option alone, a command of another group's name, a misspelt
    one) gets the whole parser, whose --help and errors list every command."""
    if command in GROUPS:
        p = _parser((command,))
        if command in _commands_of(p):
            return p
    return _parser(GROUPS)


def _commands_of(parser: argparse.ArgumentParser) -> set:
    return {name for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for name in action.choices}


def _parser(groups: tuple) -> argparse.ArgumentParser:
    p = Parser(prog="craps-streams", formatter_class=Formatter,
                                description="Settle the side wagers of a craps floor from Kafka, exactly once; "
                                            "simulate, replay and audit floors; follow them live.",
                                epilog=epilog(KAFKA, APP_ID, KEYS, notes=(
                                    "each command's --help names the settings it reads.",)))
    p.add_argument("--version", action=_VersionAction, help="print the version and the rules core that settles")
    p.add_argument("--debug", action="store_true",
                   help="on an error, the traceback and the Kafka clients' logs too (default: one or two lines)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in groups:
        importlib.import_module(f"craps_streams.cli.{name}").register(sub)
    return p


def _debug_everywhere(parser: argparse.ArgumentParser) -> None:
    """--debug after the command too (`craps-streams tail --debug`), not only before it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                if not any("--debug" in a.option_strings for a in sub._actions):
                    sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                     help="on an error, the traceback and the Kafka clients' logs too")
                _debug_everywhere(sub)


# Which Kafka role a command's run logs in as (craps_streams/kafka/settings.py), checked before it starts
# (craps_streams.kafka.errors.preflight): None for a run that does not use the broker. The worker and the
# floor view are services that wait for a broker that is not up yet: not checked.
def _broker_role_of(args) -> str | None:
    role = getattr(args, "broker_role", None)
    return role(args) if callable(role) else role


def _client_logs(debug: bool) -> None:
    """The Kafka client libraries log their retries as warnings; a command says what went wrong once,
    and with --debug shows their logs too. Set where a command uses the broker: a replay of a file
    never loads logging."""
    import logging

    if debug:
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        return
    for name in ("kafka", "aiokafka"):
        logging.getLogger(name).addHandler(logging.NullHandler())
        logging.getLogger(name).propagate = False


def _settings(args):
    """The settings, read once: the environment and the defaults, then --bootstrap; handed to the
    adapters that hold for the whole process (the broker, the schemas)."""
    from craps_streams.settings import load, use

    settings = load()
    if getattr(args, "bootstrap", None):
        settings = settings.replace(kafka_bootstrap=args.bootstrap)
    try:
        return use(settings)
    except RuntimeError as e:  # the core asked for cannot settle here: say why, as a usage error
        raise CommandError(f"CRAPS_CORE={settings.core}: {e}", EXIT_USAGE) from None


def main(argv: list[str] | None = None) -> int:
    """Run the command `argv` names (default: the process's arguments); its exit code."""
    return _main(sys.argv[1:] if argv is None else argv)[0]


def console() -> None:
    """The `craps-streams` program (and `python -m craps_streams.cli`): `main`, then the process's
    exit. A command that has closed its outputs and leaves nothing running says so
    (`args.outputs_closed`: the replay in one process): the process then ends at once with its exit
    code, the standard streams flushed, without the interpreter's own exit, which collects and frees
    every object of the run (a tenth of a short replay's CPU) and has nothing left to write."""
    code, args = _main(sys.argv[1:])
    if getattr(args, "outputs_closed", False):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a stream that cannot take its last bytes: the ordinary exit says so
            sys.exit(code)
        os._exit(code)
    sys.exit(code)


def _main(argv: list[str]) -> tuple[int, argparse.Namespace]:
    parser = build_parser(_command_of(argv))
    _debug_everywhere(parser)
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        settings = _settings(args)
        role = _broker_role_of(args)
        if role is not None:  # a command that uses the broker (the services have --loglevel instead)
            _client_logs(debug)
            from craps_streams.kafka.errors import preflight

            preflight(role, settings.kafka_bootstrap)
        return args.run(args, settings), args
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED, args
    except BrokenPipeError:
        # stdout closed by its reader (`| head`): nothing more to say, to anybody
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK, args
    except Exception as e:  # noqa: BLE001 - every error answered in one or two lines
        if debug:
            import traceback

            traceback.print_exc()
        code, message = explain_error(e)
        print(f"craps-streams {command_name(args)}: {message}", file=sys.stderr)
        return code, args


if __name__ == "__main__":
    console()
