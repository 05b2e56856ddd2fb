"""The command line's one error policy: every error a command meets is answered in one or two lines,
`craps-streams <command>: ...`, with an exit code of its kind (docs/operating/cli.md):

    0  done (audit, archive verify: clean; topics: as specified)
    1  findings: audit findings, a tampered archive, topics that differ from their spec
    2  a bad argument or input that is not what the command takes; a setting that is not valid
    3  a file that cannot be read or written
    4  missing or unusable secrets: a Kafka client config, the secrets directory, the key ring
    5  the Kafka broker cannot be reached, or stopped answering (status: no source answers)
    6  the Kafka broker refused: the login, the TLS handshake, or the role's rights (ACLs)
    70 an internal error (a bug): the one line says so, --debug shows where
    130 interrupted (Ctrl-C)
"""
from __future__ import annotations

import sys

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_FILE = 3
EXIT_SECRETS = 4
EXIT_BROKER_UNREACHABLE = 5
EXIT_BROKER_REFUSED = 6
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


class CommandError(Exception):
    """What stops a command, said by main as `craps-streams <command>: <message>`, exit `code`."""

    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.code = code


def command_name(args) -> str:
    """The command as typed: `replay`, `keys add`, `archive verify`."""
    action = getattr(args, "action", None)
    return f"{args.command} {action}" if action else args.command


def note(args, text: str) -> None:
    """A remark on stderr that does not stop the command, in the errors' style."""
    print(f"craps-streams {command_name(args)}: {text}", file=sys.stderr)


def _file_problem(e: OSError) -> str:
    name = e.filename if e.filename is not None else ""
    what = e.strerror or str(e)
    if isinstance(e, FileNotFoundError):
        return f"{name}: no such file or directory"
    if isinstance(e, IsADirectoryError):
        return f"{name}: a directory, not a file"
    if isinstance(e, PermissionError):
        return f"{name}: permission denied"
    return f"{name}: {what}"


def explain_error(e: BaseException) -> tuple[int, str]:
    """(exit code, one or two lines) for an exception a command raised."""
    from craps_streams.authenticity import KeyRingError
    from craps_streams.kafka.errors import BrokerRefused, BrokerUnreachable, broker_problem
    from craps_streams.kafka.security import SecurityConfigError
    from craps_streams.settings import SettingsError

    if isinstance(e, CommandError):
        return e.code, str(e)
    if isinstance(e, SettingsError):
        return EXIT_USAGE, str(e)
    problem = broker_problem(e)
    if isinstance(problem, BrokerUnreachable):
        return EXIT_BROKER_UNREACHABLE, (
            f"cannot reach the Kafka broker: {problem}\n"
            "  start it (`make kafka-up`, or `make run` for a whole floor), or point --bootstrap or "
            "CRAPS_KAFKA_BOOTSTRAP at it")
    if isinstance(problem, BrokerRefused):
        return EXIT_BROKER_REFUSED, (
            f"{problem}\n  the client configs and logins are made by `infra/kafka/kafka.sh up`; "
            "`craps-streams access rotate ROLE` gives a role a new password, "
            "`craps-streams topics` grants a floor's ACLs")
    if isinstance(e, SecurityConfigError):
        return EXIT_SECRETS, str(e)
    if isinstance(e, KeyRingError):
        return EXIT_SECRETS, f"{e}\n  the key ring: $CRAPS_TABLE_KEYS, else .secrets/table-keys.json"
    if isinstance(e, TimeoutError):
        return EXIT_BROKER_UNREACHABLE, f"timed out waiting for the Kafka broker: {e}"
    if isinstance(e, OSError) and e.filename is not None:
        return EXIT_FILE, _file_problem(e)
    if isinstance(e, ValueError):
        return EXIT_USAGE, str(e)
    if isinstance(e, OSError):
        return EXIT_FILE, str(e)
    return EXIT_INTERNAL, (f"internal error: {type(e).__name__}: {e}\n"
                           "  run it again with --debug for the traceback, and report it")
