"""The replay command's bytes, pinned from the plain path (json.loads, the contract check, the
Python core).

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
    "floor.out": "83c30c03a399e5f9c2b56ef0a5b17232e94297e823dc6b737a7e361ca8f4b8d5",
    "floor.summary": "bf4ee1ebfe0720eb0f64731eac51c384c2e48335b4795ee6f92c4e56dadeb975",
    "stdin.out": "366a649c752fd025b521e709cd781d7f9dd6644e1c5182a4d9c683ed0ea97261",
    "stdin.summary": "bf4ee1ebfe0720eb0f64731eac51c384c2e48335b4795ee6f92c4e56dadeb975",
    "avro.out": "085aaaba2259a93c39d796766617f1c29b366687c0217ea92878ea5a39687b7d",
    "avro.summary": "3042fca481850ec9b8d07edd4446731ecb305e802028d80a7341f30869d8c580",
    "corpus": "8d54958d35c58335e3a96651f786987ee102e8a547f6272ada986dc9c49d7c57",
    "corpus.out": "1b983d3e2b70b98b75cfb054f4bff223cbaade546799484cc4a4185f5a166e0d",
    "corpus.summary": "12ffb055a3f1db22b57dc9d3e0bf6459cbe8edbd457628e942eb62b03f6d3da8",
}


def _cli(cwd: Path, *args: str, stdin: Path | None = None) -> tuple[bytes, bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(stdin, "rb") if stdin else open(os.devnull, "rb") as inp:
        r = subprocess.run([sys.executable, "-m", "craps_streams.cli", *args], check=True, env=env, cwd=cwd,
                           stdin=inp, capture_output=True)
    return r.stdout, r.stderr


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digests(work: Path) -> dict[str, str]:
    """Every pinned digest, computed in `work` (bare file names: a rejection id names its file)."""
    from craps_streams.codec import write_container

    got = {}
    floor = work / "floor.jsonl"
    _cli(work, "simulate", "--tables", "12", "--hours", "3", "--seed", "15", "--bad-rate", "0.05", "--no-tags",
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
    # The contract's rejections (the game's come after the tag check, which refuses the corpus's
    # untagged events when a key ring is in force, as in the tests).
    assert {"malformed", "unknown_event_type", "unknown_table_kind", "invalid_rules", "invalid_id"} <= reasons


if __name__ == "__main__":  # regenerate: prints the digests to paste above
    import tempfile

    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as d:
        for k, v in digests(Path(d)).items():
            print(f'    "{k}": "{v}",')
