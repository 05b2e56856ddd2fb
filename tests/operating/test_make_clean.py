"""`make clean` removes what builds and runs leave behind and never .secrets; it refuses while the
broker runs on .kafka-data; `make distclean` removes .secrets only when asked with YES=1.

Run on a copy of the Makefile in a scratch tree, with a stand-in infra/kafka/kafka.sh whose
`status` says whether a broker runs (the shared broker and the repository's own files stay)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import ROOT

MADE = [".kafka-data/meta.properties", ".kafka-data-bench/x", ".kafka-cluster/node-1/meta.properties", ".run/worker.log", "native/target/release/x.so",
        "benchmarks/kstreams/target/kstreams-passthrough.jar",
        "build/lib/x.py", "site/index.html", "out/settlements.jsonl"]
KEPT = [".secrets/table-keys.json", ".secrets/clients/viewer.properties", "out/.keep", "infra/kafka/lib/kafka.jar",
        "craps_streams/floor/static/vendor/chart.js", "craps_streams/accelerator/_native.so"]


@pytest.fixture
def tree(tmp_path):
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    for f in MADE + KEPT:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("x")
    return tmp_path


def broker(tree, running: bool, cluster: bool = False) -> None:
    """The stand-in's `status` answers 0 for the single broker when `running`, for `--nodes 3` when
    `cluster`."""
    script = tree / "infra" / "kafka" / "kafka.sh"
    script.write_text("#!/usr/bin/env bash\n[[ $1 == status ]] || exit 0\n"
                      f"[[ $* == *'--nodes 3'* ]] && exit {0 if cluster else 1}\nexit {0 if running else 1}\n")
    script.chmod(0o755)


def make(tree, *args) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", *args], cwd=tree, capture_output=True, text=True, timeout=60)


def test_clean_removes_the_run_and_build_leftovers_and_keeps_the_secrets(tree):
    broker(tree, running=False)
    r = make(tree, "clean")
    assert r.returncode == 0, r.stderr
    assert [f for f in MADE if (tree / f).exists()] == []
    assert [f for f in KEPT if not (tree / f).exists()] == []


def test_clean_refuses_while_the_broker_runs(tree):
    broker(tree, running=True)
    r = make(tree, "clean")
    assert r.returncode != 0 and "stop it first (make kafka-down)" in r.stderr
    assert [f for f in MADE + KEPT if not (tree / f).exists()] == []


def test_clean_refuses_while_the_cluster_runs(tree):
    broker(tree, running=False, cluster=True)
    r = make(tree, "clean")
    assert r.returncode != 0 and "stop it first (make kafka-down NODES=3)" in r.stderr
    assert (tree / ".kafka-cluster/node-1/meta.properties").exists()


def test_distclean_removes_the_secrets_only_when_asked(tree):
    broker(tree, running=False)
    r = make(tree, "distclean")
    assert r.returncode != 0 and "table key ring" in r.stderr and "YES=1" in r.stderr
    assert (tree / ".secrets/table-keys.json").exists()
    r = make(tree, "distclean", "YES=1")
    assert r.returncode == 0, r.stderr
    assert [f for f in MADE + KEPT if (tree / f).exists()] == ["out/.keep"]


def test_clean_refuses_while_the_ledgers_postgres_runs(tree):
    """`make run LEDGER=postgres` keeps its PostgreSQL's data in .run/postgres: not removed under it."""
    broker(tree, running=False)
    script = tree / "infra" / "postgres" / "postgres.sh"
    script.parent.mkdir(parents=True)
    script.write_text("#!/usr/bin/env bash\n[[ $1 == status && $PG_DIR == .run/postgres ]] && exit 0\nexit 3\n")
    script.chmod(0o755)
    r = make(tree, "clean")
    assert r.returncode != 0 and "stop it first (infra/postgres/postgres.sh stop)" in r.stderr
    assert (tree / ".run/worker.log").exists()
