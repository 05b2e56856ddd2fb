"""What the Kafka clients' own logs say, said once and in the operator's words.

aiokafka logs every failed connection attempt at ERROR: with a broker node killed, a worker wrote
hundreds of `Unable connect to node with id 1` lines in seconds, and every fresh start logged
`Group Coordinator Request failed: [Error 15] GroupCoordinatorNotAvailableError`, which is normal
while a consumer group forms. A filter on aiokafka's loggers (installed by `client_settings`, so
every client of every service has it) makes of them:

- a lost node: ONE warning when a node first fails (`broker node 1 (127.0.0.1:19093) lost ...:
  the clients retry and move to its partitions' new leaders`), then silence while it keeps failing,
  a reminder every `REMIND_S` (`... still unreachable since T, N failed attempts`), and a new
  warning when it fails again after `QUIET_S` without failures (a new outage);
- a coordinator not (yet) available, a coordinator load in progress: INFO, not ERROR.

`lost_nodes()` answers which nodes the clients of this process are failing to reach now (a failure
within the last `QUIET_S`) and since when: the worker exports it as a metric, the floor view in
its /api/floor document, so the status panel and the floor page say a broker is lost, and stop
saying it when the clients no longer try it (it came back, or its partitions' leaders moved).
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

QUIET_S = 30.0  # a node with no failed attempt for this long is no longer reported lost
REMIND_S = 300.0  # while a node stays lost, one reminder line this often

# aiokafka's loggers whose records are rewritten here ("aiokafka" is aiokafka/client.py's); the
# records of a child logger do not pass its parent's filters, so each one gets the filter.
LOGGERS = ("aiokafka", "aiokafka.conn", "aiokafka.consumer.group_coordinator",
           "aiokafka.consumer.fetcher", "aiokafka.producer.sender")
_UNREACHABLE = "Unable connect to node with id %s: %s"
_FORMING = ("GroupCoordinatorNotAvailable", "CoordinatorNotAvailable", "CoordinatorLoadInProgress",
            "NotCoordinator")


@dataclass
class LostNode:
    node: str
    since_s: float  # wall clock of the first failed attempt of this outage
    last_s: float  # of the latest
    attempts: int = 1
    reminded_s: float = 0.0
    error: str = ""


class ClientLogs(logging.Filter):
    """The filter: rewrites, drops or passes aiokafka's records as the module docstring says."""

    def __init__(self, clock=time.time) -> None:
        super().__init__()
        self.clock = clock
        self.lock = threading.Lock()
        self.nodes: dict[str, LostNode] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == _UNREACHABLE and record.args:
            return self._unreachable(record)
        if record.levelno >= logging.WARNING and any(name in record.getMessage() for name in _FORMING):
            # The group is forming (or its coordinator moving): the client looks it up again.
            record.levelno, record.levelname = logging.INFO, "INFO"
            return logging.getLogger(record.name).isEnabledFor(logging.INFO)
        return True

    def _unreachable(self, record: logging.LogRecord) -> bool:
        node, error = str(record.args[0]), str(record.args[1]) if len(record.args) > 1 else ""
        now = self.clock()
        with self.lock:
            lost = self.nodes.get(node)
            if lost is None or now - lost.last_s > QUIET_S:
                self.nodes[node] = LostNode(node, now, now, 1, now, error)
                message = (f"broker node {node} lost at {_clock(now)} UTC ({error}): the clients retry it and "
                           f"move to its partitions' new leaders; said once (again every {REMIND_S:.0f} s while "
                           f"it stays unreachable)")
            else:
                lost.last_s, lost.attempts, lost.error = now, lost.attempts + 1, error
                if now - lost.reminded_s < REMIND_S:
                    return False
                lost.reminded_s = now
                message = (f"broker node {node} still unreachable since {_clock(lost.since_s)} UTC "
                           f"({lost.attempts} failed attempts; {error})")
        record.msg, record.args = message, ()
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True

    def lost(self) -> list[LostNode]:
        now = self.clock()
        with self.lock:
            return [LostNode(**vars(n)) for n in sorted(self.nodes.values(), key=lambda n: n.node)
                    if now - n.last_s <= QUIET_S]


def _clock(seconds: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(seconds))


_FILTER = ClientLogs()


def install() -> ClientLogs:
    """Put the filter on aiokafka's loggers (once; later calls change nothing)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
    return _FILTER


def lost_nodes() -> list[LostNode]:
    """The broker nodes this process's clients failed to reach within the last `QUIET_S`."""
    return _FILTER.lost()
