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

kafka-python (the ledger, the feed's producer, the readers, the admin) says a failed node its own
way, several lines on several loggers for one failure (`Connection failed: ...`, `<KafkaSSLTransport
[...]>: socket disconnected`, `... Abort (...)`, `<KafkaConnection node_id=2 ...>: Connection lost: ...`,
`Fetch to node 2 failed: ...`, `Metadata refresh: failed ...`), again on every retry, a few times a
second (a client whose only bootstrap server refuses wrote 600 lines in 30 s). The same filter is on
its loggers: the lines that
name the node (`SYNC_NODE`) count as a failed attempt on that node, said once as above, in the same
registry as aiokafka's (one process, one list of lost nodes); the lines logged with them that name
no node (`SYNC_ECHO`) become DEBUG records.

`lost_nodes()` answers which nodes the clients of this process are failing to reach now (a failure
within the last `QUIET_S`) and since when: the worker exports it as a metric, the floor view in
its /api/floor document, so the status panel and the floor page say a broker is lost, and stop
saying it when the clients no longer try it (it came back, or its partitions' leaders moved).
"""
from __future__ import annotations

import logging
import re
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

# kafka-python's loggers and templates (kafka/net, kafka/cluster.py, the fetcher, the coordinator,
# the producer's sender). A template naming the node -> where its arguments hold the node and the
# error; a connection's argument is its KafkaConnection (`node_id`), or its text (`node_id=2`).
SYNC_LOGGERS = ("kafka.net.manager", "kafka.net.connection", "kafka.net.transport", "kafka.cluster",
                "kafka.consumer.fetcher", "kafka.coordinator", "kafka.producer.sender")
SYNC_NODE = {"%s: Connection lost: %s": ("connection", 0, 1),
             "%s: Request timed out after %d ms. Closing connection.": ("connection", 0, None),
             "Fetch to node %s failed: %s": ("node", 0, 1),
             "Error sending %s to node %s [%s]": ("node", 1, 2),
             "%s: Error sending produce request to node %d: %s": ("node", 1, 2),
             "Bootstrap connection to %s failed: %s (backoff %.2f secs)": ("node", 0, 1)}
SYNC_ECHO = ("Connection failed: %s", "%s: socket disconnected", "%s: Abort (%s)", "Metadata refresh: failed %s",
             "Bootstrap %s not ready; waiting %.2f secs")
_NODE_ID = re.compile(r"node_id=([^\s>]+)")
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
            return self._unreachable(record, str(record.args[0]),
                                     str(record.args[1]) if len(record.args) > 1 else "")
        if record.levelno >= logging.WARNING and record.name.startswith("kafka."):
            if record.msg in SYNC_NODE and isinstance(record.args, tuple):
                node, error = _sync_node(record)
                if node is not None:
                    return self._unreachable(record, node, error)
            elif record.msg in SYNC_ECHO:
                # Logged with a line that names the node (above): that one says it.
                record.levelno, record.levelname = logging.DEBUG, "DEBUG"
                return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        if record.levelno >= logging.WARNING and any(name in record.getMessage() for name in _FORMING):
            # The group is forming (or its coordinator moving): the client looks it up again.
            record.levelno, record.levelname = logging.INFO, "INFO"
            return logging.getLogger(record.name).isEnabledFor(logging.INFO)
        return True

    def _unreachable(self, record: logging.LogRecord, node: str, error: str) -> bool:
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


def _sync_node(record: logging.LogRecord) -> tuple[str | None, str]:
    """(node id, error) of a kafka-python record of `SYNC_NODE`; (None, "") if it names none."""
    kind, at, error_at = SYNC_NODE[record.msg]
    args = record.args
    if len(args) <= max(at, error_at or 0):
        return None, ""
    node = args[at]
    if kind == "connection":
        found = _NODE_ID.search(str(node))
        node = getattr(node, "node_id", None) or (found.group(1) if found else None)
    error = (str(args[error_at]) if error_at is not None
             else record.getMessage().split(": ", 1)[-1].rstrip("."))
    return (None if node is None else str(node)), error


def _clock(seconds: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(seconds))


_FILTER = ClientLogs()


def install() -> ClientLogs:
    """Put the filter on aiokafka's and kafka-python's loggers (once; later calls change nothing)."""
    for name in LOGGERS + SYNC_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
    return _FILTER


def lost_nodes() -> list[LostNode]:
    """The broker nodes this process's clients failed to reach within the last `QUIET_S`."""
    return _FILTER.lost()
