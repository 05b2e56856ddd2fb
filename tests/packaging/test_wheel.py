"""The distribution stands alone: the wheel built from this checkout, installed in a fresh virtualenv
outside it, simulates, replays, encodes Avro, prints the odds and reports, and gives the same bytes as
the checkout. Nothing of the package may be looked for beside its source files (the schemas, the floor
view's assets and the report's template are package data).

The virtualenv sees the machine's site-packages for the dependencies (PyPI is not needed to run the
test), but the package itself comes from the wheel: the test checks where it was imported from."""
from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    # --no-build-isolation: the build's requirements (setuptools, setuptools-rust) are installed with the
    # test extras, and cargo's target directory is the checkout's, so the accelerator is not compiled again.
    env = {**os.environ, "PATH": f"{os.environ.get('PATH', '')}:{Path.home() / '.cargo' / 'bin'}"}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(dist), str(ROOT)], check=True, env=env, capture_output=True, timeout=900)
    wheel = next(dist.glob("craps_streams-*.whl"))
    home = base / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(home)
    python = home / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
                    "--root-user-action=ignore", "--disable-pip-version-check", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    return home


def run_in(home: Path, cwd: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """A command of the installed package, run outside the checkout with nothing of it on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAPS_") and k != "PYTHONPATH"}
    env["PATH"] = f"{home / 'bin'}:{env.get('PATH', '')}"
    return subprocess.run(list(args), cwd=cwd, env=env, input=stdin, capture_output=True, timeout=600)


def test_the_package_imported_is_the_wheels(installed, tmp_path):
    where = run_in(installed, tmp_path, "python", "-c", "import craps_streams; print(craps_streams.__file__)")
    assert where.returncode == 0, where.stderr.decode()
    path = Path(where.stdout.decode().strip())
    assert path.is_relative_to(installed), path
    assert not path.is_relative_to(ROOT)


def test_the_wheels_version_is_the_packages(installed, tmp_path):
    """The version is written once (`craps_streams.__version__`); the wheel's metadata takes it."""
    import craps_streams

    said = run_in(installed, tmp_path, "python", "-c",
                  "import craps_streams, importlib.metadata as m; print(m.version('craps-streams'), craps_streams.__version__)")
    assert said.returncode == 0, said.stderr.decode()
    assert said.stdout.decode().split() == [craps_streams.__version__] * 2


def test_simulate_and_replay_from_the_wheel_equal_the_checkout(installed, tmp_path):
    history = run_in(installed, tmp_path, "craps-streams", "simulate", "--tables", "2", "--hours", "0.5",
                     "--seed", "5", "--no-tags", "--bad-rate", "0.02")
    assert history.returncode == 0, history.stderr.decode()
    assert history.stdout.count(b"\n") > 200
    replayed = run_in(installed, tmp_path, "craps-streams", "replay", "-", "--accept-untagged", "--no-progress",
                      "-o", "out.jsonl", stdin=history.stdout)
    assert replayed.returncode == 0, replayed.stderr.decode()
    here = subprocess.run([sys.executable, "-m", "craps_streams.cli", "replay", "-", "--accept-untagged",
                           "--no-progress", "-o", str(tmp_path / "here.jsonl")], cwd=ROOT, input=history.stdout,
                          capture_output=True, timeout=600)
    assert here.returncode == 0, here.stderr.decode()
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "here.jsonl").read_bytes()
    assert b"WagerSettled" in (tmp_path / "out.jsonl").read_bytes()


def test_avro_encoding_uses_the_schemas_inside_the_wheel(installed, tmp_path):
    script = (
        "import json, sys\n"
        "from craps_streams.codec import schemas, wire\n"
        "record = {'seq': 1, 'table_id': 'T001', 'table_kind': 'hybrid', 'ts': 1767225615595, 'type': 'TableOpened'}\n"
        "data = wire.encode_event(record)\n"
        "assert data[:2] == b'\\xc3\\x01', data[:2]\n"
        "print(schemas.default_schema_dir())\n"
        "print(data.hex())\n"
        "decoded = wire.decode_event(data)\n"
        "assert {k: decoded[k] for k in record} == record, decoded\n")
    done = run_in(installed, tmp_path, "python", "-c", script)
    assert done.returncode == 0, done.stderr.decode()
    schema_dir, encoded = done.stdout.decode().split()
    assert Path(schema_dir).is_relative_to(installed)
    assert len(bytes.fromhex(encoded)) > 10


def test_odds_and_report_from_the_wheel(installed, tmp_path):
    odds = run_in(installed, tmp_path, "craps-streams", "odds", "--format", "json")
    assert odds.returncode == 0, odds.stderr.decode()
    assert b"fire" in odds.stdout
    history = run_in(installed, tmp_path, "craps-streams", "simulate", "--tables", "2", "--hours", "0.5",
                     "--seed", "6", "--no-tags", "-o", "history.jsonl")
    assert history.returncode == 0, history.stderr.decode()
    report = run_in(installed, tmp_path, "craps-streams", "report", "history.jsonl", "--accept-untagged",
                    "--no-progress", "--day", "2025-12-31", "--out", "report")
    assert report.returncode == 0, report.stderr.decode()
    page = (tmp_path / "report" / "report.html").read_text()
    # the plots' series and Chart.js (the floor view's copy, package data) inline in the page
    assert "T001" in page and 'id="plot-data"' in page and "Chart.js v4" in page
    assert (tmp_path / "report" / "tables.csv").read_text().count("T00") >= 2


def test_no_module_looks_for_files_outside_the_package():
    # A path walked up from a source file (`Path(__file__).parents[n]`) finds the checkout, never the
    # wheel's site-packages: the package's files are package data, the rest is a setting.
    walking = [f"{p.relative_to(ROOT)}:{n}" for p in (ROOT / "craps_streams").rglob("*.py")
               for n, line in enumerate(p.read_text().splitlines(), 1) if "parents[" in line]
    assert walking == []
