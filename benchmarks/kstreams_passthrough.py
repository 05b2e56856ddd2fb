"""Kafka Streams' pass-through for benchmarks/pipeline_bench.py: the peer a Kafka shop would pick.

    python benchmarks/kstreams_passthrough.py      # build the jar (if its sources changed), print its classpath

The topology (benchmarks/kstreams/src/main/java/craps/bench/PassThrough.java) forwards every record
of the table events unchanged (key and value bytes) to the settlements topic with
processing.guarantee=exactly_once_v2, one stream thread, the settling worker's fetch and linger, as
the worker's role (its client config: TLS + SCRAM, the file the Python clients log in with). It is
built with Maven from benchmarks/kstreams/pom.xml (the broker's Kafka version, from Maven Central;
offline once Maven has resolved it), into benchmarks/kstreams/target/ (git-ignored). Building needs
a JDK (javac) and Maven; running it, Java.

Kafka Streams names its transactional ids `<application.id>-<process id>-<thread>` and its group
the application id: the administrator grants the worker's principal both, PREFIXED on the run's
application id prefix (`grant_streams`), as pipeline_bench.py grants its own rounds' groups and ids.
The identity topology has no state store and no repartition: it makes no internal topics.
"""
from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent / "kstreams"
POM = HERE / "pom.xml"
TARGET = HERE / "target"
JAR = TARGET / "kstreams-passthrough.jar"
LIB = TARGET / "lib"
MAIN_CLASS = "craps.bench.PassThrough"
# The Streams app's heap: it holds a fetch and the producer's batches, nothing else.
JVM_OPTS = ("-Xms256m", "-Xmx512m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")


class BuildError(RuntimeError):
    """The jar could not be built (no JDK or Maven, or Maven failed): the reason, Maven's tail."""


def missing_tools() -> list[str]:
    """What building and running the contender needs and this machine lacks."""
    return [tool for tool in ("java", "javac", "mvn") if shutil.which(tool) is None]


def _sources() -> list[Path]:
    return [POM, *sorted((HERE / "src").rglob("*.java"))]


def built() -> bool:
    """The jar and its libraries are there, newer than the pom and every source."""
    if not JAR.exists() or not any(LIB.glob("kafka-streams-*.jar")):
        return False
    return JAR.stat().st_mtime >= max(p.stat().st_mtime for p in _sources())


def build() -> str:
    """The contender's classpath, built first if its sources changed: offline when Maven already
    has every artifact, from Maven Central otherwise. Raises BuildError."""
    missing = missing_tools()
    if missing:
        raise BuildError(f"{', '.join(missing)} not found (a JDK and Maven: apt-get install -y "
                         f"openjdk-17-jdk-headless maven, or `infra/setup.sh bench`)")
    if not built():
        command = ["mvn", "-q", "-B", "-f", str(POM), "package", "dependency:copy-dependencies"]
        done = subprocess.run([*command, "-o"], capture_output=True, text=True)
        if done.returncode != 0:  # an artifact not yet in the local repository
            print("kstreams: fetching kafka-streams and its dependencies from Maven Central ...", file=sys.stderr)
            done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0 or not built():
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
            raise BuildError(f"mvn failed ({done.returncode}):\n{tail}")
    return f"{JAR}{os.pathsep}{LIB}{os.sep}*"


def streams_grants(app_id_prefix: str) -> list:
    """What Kafka Streams needs beyond the worker role's floor grants, for every application id
    starting with `app_id_prefix`: its group, and its transactional ids
    (`<application.id>-<process id>-<thread>` under exactly_once_v2)."""
    from craps_streams.kafka.access import Grant

    return [Grant("worker", resource, app_id_prefix, operation, "PREFIXED")
            for resource, operations in (("GROUP", ("READ", "DESCRIBE")), ("TRANSACTIONAL_ID", ("WRITE", "DESCRIBE")))
            for operation in operations]


def grant_streams(app_id_prefix: str, bootstrap: str | None = None) -> int:
    """streams_grants made by the administrator; 0 on a plaintext bench broker."""
    from craps_streams.kafka.access import grant_as_admin

    return grant_as_admin(streams_grants(app_id_prefix), bootstrap)


@dataclass(frozen=True)
class Drained:
    """One drain of the backlog: events/s over the committed span, the transactions that held the
    events, the JVM's CPU seconds (start-up and shutdown included), or why it failed."""
    eps: float = 0.0
    events: int = 0
    transactions: int = 0
    cpu_s: float = 0.0
    error: str | None = None


def parse_result(line: str) -> tuple[int, float, int]:
    """(events, seconds, transactions) of the app's last line, `events=N seconds=S transactions=T`."""
    fields = dict(part.split("=", 1) for part in line.split())
    return int(fields["events"]), float(fields["seconds"]), int(fields["transactions"])


def drain(classpath: str, app_id: str, source: str, sink: str, total: int, commit_interval_ms: int,
          role: str = "worker", bootstrap: str | None = None) -> Drained:
    """Run the Streams app over the backlog of `source` (from the earliest offset, a fresh group)
    until `total` records are committed to `sink`."""
    from craps_streams.kafka.security import config_path
    from craps_streams.kafka.settings import default_bootstrap

    with tempfile.TemporaryDirectory(prefix="kstreams-") as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(["java", *JVM_OPTS, f"-Djava.io.tmpdir={tmp}", "-cp", classpath, MAIN_CLASS,
                               str(config_path(role)), bootstrap or default_bootstrap(), app_id, source, sink,
                               str(total), str(commit_interval_ms)],
                              capture_output=True, text=True, timeout=900)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        return Drained(cpu_s=cpu, error=f"exit {done.returncode}: {tail}")
    events, seconds, transactions = parse_result(lines[-1])
    return Drained(eps=events / seconds if seconds > 0 else 0.0, events=events, cpu_s=cpu, transactions=transactions)


if __name__ == "__main__":
    started = time.monotonic()
    try:
        print(build())
    except BuildError as error:
        print(f"kstreams: {error}", file=sys.stderr)
        sys.exit(1)
    print(f"kstreams: ready in {time.monotonic() - started:.1f} s", file=sys.stderr)
