"""The replay of a fixed simulated floor gives pinned bytes.

Any refactor that changes a settlement, a marker, an alert, a rejection, the
summary or the simulator's history fails here. If a rule change is meant to change the bytes,
regenerate with the commands below and say so in the commit.

    craps-streams simulate --tables 6 --hours 1 --seed 11 --bad-rate 0.05 --no-tags -o floor.jsonl
    craps-streams replay floor.jsonl --only settlements,markers,alerts,rejections -o out.jsonl \
        --no-progress --accept-untagged 2> summary.txt

The floor is untagged (history as before the tags), so it replays under --accept-untagged: the
summary then says so in one line, which the digest leaves out. The same floor tagged (its tags
differ with every key ring) settles to the same outputs.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FLOOR_SHA256 = "8c495778c3cfa8ab3ec6e6c10237c2ae90299d5811a0a493776b90558fafa74c"
OUTPUT_SHA256 = "2ccb61ce93d2c6c46cf54329f6a93bd8650b183901dbaaf16b2551a4a064b68a"
SUMMARY_SHA256 = "dd0d4f1cd5f5344621472adf5e1a021fa42b008d4e9f68183ee0373cde2491d8"


def _cli(cwd: Path, *args: str, stderr_to: Path | None = None) -> None:
    # Run in the output directory with bare file names: an undecodable line's rejection id names
    # the file it came from ("rejected/floor.jsonl:77").
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(stderr_to, "wb") if stderr_to else open(os.devnull, "wb") as err:
        subprocess.run([sys.executable, "-m", "craps_streams.cli", *args], check=True, env=env, stderr=err, cwd=cwd)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_replay_of_a_fixed_floor_with_bad_input_is_byte_identical(tmp_path):
    floor, out, summary = tmp_path / "floor.jsonl", tmp_path / "out.jsonl", tmp_path / "summary.txt"
    _cli(tmp_path, "simulate", "--tables", "6", "--hours", "1", "--seed", "11", "--bad-rate", "0.05",
         "--no-tags", "-o", floor.name)
    assert _sha(floor) == FLOOR_SHA256, "the simulator's history changed"
    _cli(tmp_path, "replay", floor.name, "--only", "settlements,markers,alerts,rejections", "-o", out.name,
         "--no-progress", "--accept-untagged", stderr_to=summary)
    lines = summary.read_text().splitlines(keepends=True)
    untagged = [x for x in lines if x.startswith("UNTAGGED: ")]
    assert len(untagged) == 1 and untagged[0].startswith("UNTAGGED: 2,244 events accepted without")
    summary.write_text("".join(x for x in lines if x not in untagged))
    # The history holds every verdict: applied, rejected, duplicate and undecodable (malformed) lines.
    text = out.read_text()
    assert '"reason":"malformed"' in text and '"type":"EventRejected"' in text
    assert _sha(out) == OUTPUT_SHA256, "the replay's outputs changed"
    assert _sha(summary) == SUMMARY_SHA256, "the replay's summary changed"


def test_the_same_floor_tagged_settles_the_same(tmp_path):
    """Tagged by the dev floor's keys (the session's ring) and replayed with the tag check: the
    same settlements, markers and alerts, byte for byte; the same rejections (their events now
    carry the tags); nothing untagged."""
    import json

    for tags, where in (((), "a"), (("--no-tags",), "b")):  # same file name: rejection ids name it
        (tmp_path / where).mkdir()
        _cli(tmp_path / where, "simulate", "--tables", "6", "--hours", "1", "--seed", "11", "--bad-rate", "0.05",
             *tags, "-o", "floor.jsonl")
    _cli(tmp_path / "a", "replay", "floor.jsonl", "-o", "../tagged.jsonl", "--no-progress",
         stderr_to=tmp_path / "s0.txt")
    _cli(tmp_path / "b", "replay", "floor.jsonl", "-o", "../untagged.jsonl", "--no-progress", "--accept-untagged",
         stderr_to=tmp_path / "s1.txt")
    tagged = (tmp_path / "tagged.jsonl").read_text().splitlines()
    untagged = (tmp_path / "untagged.jsonl").read_text().splitlines()
    assert [x for x in tagged if '"EventRejected"' not in x] == [x for x in untagged if '"EventRejected"' not in x]
    rejections = [[(r["id"], r["reason"]) for r in map(json.loads, lines) if r["type"] == "EventRejected"]
                  for lines in (tagged, untagged)]
    assert rejections[0] == rejections[1] and rejections[0]
    assert "UNTAGGED" not in (tmp_path / "s0.txt").read_text()
