"""`craps-streams transactions` on the real broker: a transaction left open by a producer that
never commits stalls read_committed readers at its first offset; the command lists it (with its
transactional id and the coordinator's state), refuses to abort it while its coordinator still
holds it open unless forced, and its abort moves the last stable offset up to the high watermark."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest
from kafka import TopicPartition

from craps_streams.kafka.transactions import OpenTransaction
from tests.conftest import ROOT
from tests.faults.harness import _consumer, wait_until

def _offsets(bootstrap: str, tp: TopicPartition) -> tuple[int, int]:
    """(high watermark, last stable offset) of one partition."""
    written, stable = _consumer(bootstrap, "read_uncommitted"), _consumer(bootstrap, "read_committed")
    try:
        return written.end_offsets([tp])[tp], stable.end_offsets([tp])[tp]
    finally:
        written.close()
        stable.close()


@pytest.mark.kafka
def test_a_transaction_left_open_is_listed_and_its_abort_unstalls_readers(pipeline):
    topic, partition = pipeline.prefix + "settlements", 5
    tp = TopicPartition(topic, partition)
    opener = subprocess.Popen([sys.executable, "-m", "tests.faults.open_transaction", f"{pipeline.app_id}-{partition}",
                               topic, str(partition), "300000"], env=pipeline.env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert opener.stdout.readline().strip() == "open", opener.stdout.read()
        high, stable = _offsets(pipeline.bootstrap, tp)
        assert (high, stable) == (1, 0), "the open record should hold the LSO at its offset"
        time.sleep(2)

        listed = pipeline.run("transactions", "--hanging", "--older-than", "1", "--prefix", pipeline.prefix, check=False)
        assert listed.returncode == 1, listed.stdout + listed.stderr  # something open past the bound
        line = next(x for x in listed.stdout.splitlines() if f"{topic}:{partition}" in x)
        assert f"{pipeline.app_id}-{partition} (Ongoing, timeout 300 s)" in line, line
        assert "from offset 0" in line and "HANGING" not in line, line
        quiet = pipeline.run("transactions", "--hanging", "--older-than", "600", "--prefix", pipeline.prefix,
                             check=False)
        assert quiet.returncode == 0 and ": 0" in quiet.stdout, quiet.stdout + quiet.stderr

        # Its coordinator holds it open (it would end at its timeout): not aborted without --force.
        refused = pipeline.run("transactions", "--abort", f"{topic}:{partition}", check=False)
        assert refused.returncode == 1 and "--force" in refused.stderr, refused.stdout + refused.stderr
        assert _offsets(pipeline.bootstrap, tp) == (1, 0)
        none_there = pipeline.run("transactions", "--abort", f"{topic}:{partition - 1}", check=False)
        assert none_there.returncode == 1 and "no transaction open" in none_there.stderr, none_there.stderr

        opener.kill()  # the producer dies inside its transaction
        opener.wait(10)
        aborted = pipeline.run("transactions", "--abort", f"{topic}:{partition}", "--force", check=False)
        assert aborted.returncode == 0, aborted.stdout + aborted.stderr
        assert f"on {topic}:{partition} from offset 0" in aborted.stdout, aborted.stdout
        # The abort marker ends the transaction: the LSO passes the aborted record and the marker.
        wait_until(lambda: _offsets(pipeline.bootstrap, tp)[1] == _offsets(pipeline.bootstrap, tp)[0] or None,
                   30, "the last stable offset to reach the high watermark")
        after = pipeline.run("transactions", "--prefix", pipeline.prefix)
        assert "transactions open 0 s or longer" in after.stdout and ": 0" in after.stdout, after.stdout
    finally:
        opener.kill()
        opener.wait(10)


def test_hanging_means_no_coordinator_holds_it_open_on_that_partition():
    def txn(state):
        return OpenTransaction("craps.settlements", 3, 7, 0, 0, 12, 100.0, "craps-streams-3" if state else None,
                               state, 60.0 if state else None)

    assert not txn("Ongoing").hanging
    assert not txn("PrepareCommit").hanging
    assert txn("CompleteAbort").hanging
    assert txn("Ongoing (not on this partition)").hanging
    assert txn(None).hanging
