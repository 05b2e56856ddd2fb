"""The replay command's bytes, pinned before the speed work of issue 15 (digests taken at 742de50 with the RecursionError fix).

A faster decoder, contract check, core or output formatting must not change one byte: of the
outputs (settlements, markers, alerts, rejections with their reasons, messages and the raw
events), nor of the summary. Pinned for a simulated floor with bad input (--bad-rate 0.05) read
from a file and from stdin, for the same floor's records in an Avro container file, and for a
corpus of odd and hostile lines (`contract_corpus.py`). If a rule change is meant to change the
bytes, regenerate with `python tests/golden/test_replay_speed_golden.py` and say so in the commit.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contract_corpus import corpus_bytes

ROOT = Path(__file__).resolve().parents[2]
ALL = "settlements,markers,alerts,rejections"

DIGESTS = {
    "floor": "5fc8820f8e12a060041bbe8856f69e9a27b6776f7ee869959c89d7106ce19084",
    "floor.out": "a5cc405d731b0d5c93c7ddb06d9c72a2c580cfcbb788814634eebb3250eb2ab6",
    "floor.summary": "6ed754fd3de3fbd03d59170d4042e2e29d4f0353279d5c858128a668aed12050",
    "stdin.out": "933840d888f91c8bc987c132c3f5cd1b4bcbfa2b116113613744b2bc3ab8ffe9",
    "stdin.summary": "6ed754fd3de3fbd03d59170d4042e2e29d4f0353279d5c858128a668aed12050",
    "avro.out": "ca1c363fbcf887b5156d8a125a84825659333f89eab215529edfd455a81444ca",
    "avro.summary": "84e4914ede0cc2e063f460e10b9838498db7a49d20a4c89b2a7ec388d69cb37e",
    "corpus": "8d54958d35c58335e3a96651f786987ee102e8a547f6272ada986dc9c49d7c57",
    "corpus.out": "3bad221e65e4970be2e47f4d741424796449fffe1cb16f3f101d75fbb58b24c7",
    "corpus.summary": "187b601265bef44670e77372f10778f023c0b3efa65cc8d69ef2df6af1254ec9",
}


def _cli(cwd: Path, *args: str, stdin: Path | None = None) -> tuple[bytes, bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(stdin, "rb") if stdin else open(os.devnull, "rb") as inp:
        r = subprocess.run([sys.executable, "-m", "streams.cli", *args], check=True, env=env, cwd=cwd,
                           stdin=inp, capture_output=True)
    return r.stdout, r.stderr


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digests(work: Path) -> dict[str, str]:
    """Every pinned digest, computed in `work` (bare file names: a rejection id names its file)."""
    from streams.codec import write_container

    got = {}
    floor = work / "floor.jsonl"
    _cli(work, "simulate", "--tables", "12", "--hours", "3", "--seed", "15", "--bad-rate", "0.05",
         "-o", floor.name)
    got["floor"] = _sha(floor.read_bytes())
    out, summary = _cli(work, "replay", floor.name, "--only", ALL, "--no-progress")
    got["floor.out"], got["floor.summary"] = _sha(out), _sha(summary)
    out, summary = _cli(work, "replay", "-", "--only", ALL, "--no-progress", stdin=floor)
    got["stdin.out"], got["stdin.summary"] = _sha(out), _sha(summary)
    records = []
    for line in floor.read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if type(r) is dict and type(r.get("die1", 1)) is int:
            records.append(r)
    write_container(work / "floor.avro", records)
    out, summary = _cli(work, "replay", "floor.avro", "--only", ALL, "--no-progress")
    got["avro.out"], got["avro.summary"] = _sha(out), _sha(summary)
    corpus = work / "corpus.jsonl"
    corpus.write_bytes(corpus_bytes())
    got["corpus"] = _sha(corpus.read_bytes())
    out, summary = _cli(work, "replay", corpus.name, "--no-progress")
    got["corpus.out"], got["corpus.summary"] = _sha(out), _sha(summary)
    return got


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    return digests(tmp_path_factory.mktemp("golden"))


@pytest.mark.parametrize("name", list(DIGESTS))
def test_replay_bytes_are_those_pinned_before_the_speed_work(computed, name):
    assert computed[name] == DIGESTS[name], f"{name} changed"


def test_the_corpus_exercises_every_contract_rejection(tmp_path):
    (tmp_path / "corpus.jsonl").write_bytes(corpus_bytes())
    out, _ = _cli(tmp_path, "replay", "corpus.jsonl", "--only", "rejections", "--no-progress")
    reasons = {json.loads(line)["reason"] for line in out.splitlines()}
    assert {"malformed", "unknown_event_type", "unknown_table_kind", "invalid_rules", "die_out_of_range",
            "position_out_of_range", "unknown_wager_kind", "unknown_table"} <= reasons


if __name__ == "__main__":  # regenerate: prints the digests to paste above
    import tempfile

    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as d:
        for k, v in digests(Path(d)).items():
            print(f'    "{k}": "{v}",')
