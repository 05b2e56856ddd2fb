"""Fixtures for the pipeline tests: the real Kafka broker on 127.0.0.1 and real worker processes.

The broker is started by `make test` / `.ci/run` (infra/kafka/kafka.sh up). If it is not up these
tests fail loudly: they are never skipped. Each test session uses its own topic prefix and
application id, so runs never see each other's data.

The broker is secured (docs/security.md): each process logs in as the role of the command it runs
(worker, produce/simulate --live as the table controller, tail as a viewer, archive, audit), with the
client configs `infra/kafka/kafka.sh` made in `.secrets/`; `create_topics` runs `craps-streams topics`
as the administrator, which also grants the test floor's ACLs (its prefix and app id); the tests'
own checkers read back as the administrator.
"""
from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import uuid
import warnings

import pytest
from hypothesis import Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase

# Property tests (tests/exploration.py): CI is deterministic, exploration is by hand. No deadline
# in CI: a shared 2-core machine can stall any example past hypothesis's 200 ms, and speed is the
# benchmarks' to measure, not a unit test's.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None,
                          phases=(Phase.explicit, Phase.generate, Phase.target))
settings.register_profile("explore", derandomize=False, print_blob=True,
                          database=DirectoryBasedExampleDatabase(str(pathlib.Path(__file__).resolve().parents[1] / ".hypothesis")))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# The rules core the tests settle with, chosen as the command line's `main` chooses it, before any
# test module is imported (CRAPS_CORE: auto, python or native; infra/test.sh runs the suite with
# native, then parts again with python). A test that needs another chooses it itself.
from craps_streams.accelerator.rules import choose as _choose_core  # noqa: E402

_choose_core(os.environ.get("CRAPS_CORE") or "auto")

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOOTSTRAP = os.environ.get("CRAPS_KAFKA_BOOTSTRAP", "127.0.0.1:9092")


def _session_key_ring() -> str:
    """The tests' own dev floor key ring (T001..T1000, 0600 in a private temporary directory), so
    a test run neither reads nor changes the developer's .secrets/; the simulator, produce, the
    workers and replays started by the tests all use it (CRAPS_TABLE_KEYS in their environment)."""
    import tempfile

    from craps_streams.authenticity import keyfile

    path = pathlib.Path(tempfile.mkdtemp(prefix="craps-test-keys-")) / "table-keys.json"
    keyfile.init(path)
    return str(path)


if not os.environ.get("CRAPS_TABLE_KEYS"):
    os.environ["CRAPS_TABLE_KEYS"] = _session_key_ring()
# Nor the developer's archive key: the tests' archives are unsealed unless a test seals one with a
# key of its own (a .secrets/archive-key made by `keys init` would make every other one "seal_missing").
if not os.environ.get("CRAPS_ARCHIVE_KEY"):
    import tempfile

    os.environ["CRAPS_ARCHIVE_KEY"] = str(pathlib.Path(tempfile.mkdtemp(prefix="craps-test-archive-key-")) / "archive-key")


# The test session is an edge, like the CLI's main: its settings read once, after the key ring and
# archive key above; in-process clients (the tests' checkers) connect with them.
from craps_streams.settings import load as _load_settings, use as _use_settings  # noqa: E402

SETTINGS = _use_settings(_load_settings())


def _broker_up() -> bool:
    host, port = BOOTSTRAP.split(",")[0].rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def kafka() -> str:
    assert _broker_up(), (f"Kafka is not up on {BOOTSTRAP}: start it with `infra/kafka/kafka.sh up` "
                          "(make test does)")
    return BOOTSTRAP


class Pipeline:
    """An isolated set of topics (by prefix) and the workers started on them."""

    def __init__(self, tmp: pathlib.Path, bootstrap: str):
        self.tmp = tmp
        self.bootstrap = bootstrap
        self.prefix = f"t{uuid.uuid4().hex[:8]}."
        self.app_id = f"craps-test-{uuid.uuid4().hex[:8]}"
        self.workers: list[subprocess.Popen] = []
        self.env = {**os.environ, "CRAPS_TOPIC_PREFIX": self.prefix, "CRAPS_APP_ID": self.app_id,
                    "CRAPS_KAFKA_BOOTSTRAP": bootstrap, "PYTHONPATH": str(ROOT)}

    def run(self, *args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "craps_streams.cli", *args], env=self.env, cwd=ROOT,
                              check=check, capture_output=True, text=True, timeout=300, **kw)

    def create_topics(self) -> None:
        subprocess.run([sys.executable, "-m", "craps_streams.cli", "topics"], env=self.env, cwd=ROOT, check=True,
                       capture_output=True, timeout=120)

    def start_worker(self, name: str = "w1", web_port: int | None = None) -> subprocess.Popen:
        log = open(self.tmp / f"worker-{name}.log", "ab")
        env = {**self.env, "CRAPS_DATA_DIR": str(self.tmp / f"data-{name}"),
               "CRAPS_WEB_PORT": str(web_port or free_port())}
        proc = subprocess.Popen([sys.executable, "-m", "craps_streams.cli", "worker", "--loglevel", "info"],
                                env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        proc.web_port = int(env["CRAPS_WEB_PORT"])  # type: ignore[attr-defined]
        proc.log_path = self.tmp / f"worker-{name}.log"  # type: ignore[attr-defined]
        self.workers.append(proc)
        return proc

    def stop_worker(self, proc: subprocess.Popen, sig=signal.SIGTERM, timeout: float = 60) -> None:
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)

    def close(self) -> None:
        for proc in self.workers:
            self.stop_worker(proc, signal.SIGKILL if proc.poll() is None else signal.SIGTERM, 10)

    def delete_topics(self) -> None:
        """Delete the test floor's topics, and those its floor views made under its app id, and
        revoke their ACLs (`delete_floor`, as the benchmarks do): a developer's broker otherwise
        keeps 48 partitions of every test ever run (1,200 after a day of runs, 22 s to start). A broker a test left stopped only warns: the assertions
        are the test's, the clean-up is not."""
        from craps_streams.kafka.topics import delete_floor

        try:
            for prefix in (self.prefix, f"{self.app_id}-"):
                delete_floor(prefix, self.bootstrap, timeout_s=10)
        except Exception as e:  # noqa: BLE001 - reported, never hides a test's own failure
            warnings.warn(f"test floor {self.prefix} left on the broker: {e!r}")


@pytest.fixture
def pipeline(kafka, tmp_path):
    p = Pipeline(tmp_path, kafka)
    p.create_topics()
    yield p
    p.close()
    p.delete_topics()


def craps_cli(*args, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    """`craps-streams ARGS` run from the checkout's root with this checkout's package, its output
    captured as text."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "craps_streams.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout, **kw)


def wait_for(predicate, timeout: float, what: str, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def forget_lost_nodes() -> None:
    """Empty the process's list of broker nodes its Kafka clients lost (craps_streams/kafka/client_logs.py):
    a test that made a client fail to connect must not make another test's metrics say a node is lost."""
    from craps_streams.kafka import client_logs

    with client_logs._FILTER.lock:
        client_logs._FILTER.nodes.clear()


@pytest.fixture(autouse=True)
def _lost_nodes_of_this_test_only():
    forget_lost_nodes()
    yield


def terminal_sigint() -> None:
    """A `preexec_fn`: SIGINT as a terminal's foreground job has it. A test run started in the
    background of a non-interactive shell inherits SIGINT ignored, and bash cannot trap a signal
    ignored at its start: a Ctrl-C test would then test nothing, or wait forever."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
