"""A controller's host dies and a new one takes its tables with an empty journal: the controller
refuses to start numbering tables the topic already has events of, and once its journal is seeded
from the topic (`controller seed`, or `--seed-from-topic`) each table's seq goes on from the
topic's last, without a gap, and its stamps never before the topic's last."""
from __future__ import annotations

import signal

import pytest

from tests.conftest import free_port, wait_for
from craps_streams.controller.service import journal_depth
from tests.controller.test_controller_broker import TABLES, answered, on_topic, start, throw

pytestmark = pytest.mark.kafka


def _fed(pipeline, journal, first: int, last: int, *options) -> dict:
    """A controller on `journal` given entries first..last-1; -> table -> its answers' (seq, ts)."""
    port = free_port()
    proc = start(pipeline, journal, port, None, *options)
    got: dict = {}
    try:
        for i in range(first, last):
            a = answered(port, throw(i))
            got.setdefault(a["table_id"], []).append((a["seq"], a["ts"]))
        wait_for(lambda: journal_depth(journal)[0] == 0, 60, "the journal forwarded")
    finally:
        proc.send_signal(signal.SIGKILL)  # the host dies
        proc.wait(10)
    return got


def test_a_new_hosts_journal_is_seeded_from_the_topic_and_the_numbering_goes_on(pipeline, tmp_path):
    first = _fed(pipeline, tmp_path / "host-a.sqlite", 0, 30)
    assert {t: [s for s, _ in v] for t, v in first.items()} == {t: list(range(1, 11)) for t in TABLES}

    # The new host's empty journal: the start is refused, and says how to seed it.
    port = free_port()
    refused = pipeline.run("controller", "--tables", ",".join(TABLES), "--journal", str(tmp_path / "host-b.sqlite"),
                           "--http-port", str(port), "--shared-key-file", check=False)
    assert refused.returncode == 2, refused.stderr
    assert "holds nothing of T001 (up to seq 10), T002 (up to seq 10), T003 (up to seq 10)" in refused.stderr, \
        refused.stderr
    assert "craps-streams controller seed" in refused.stderr and "--seed-from-topic" in refused.stderr

    seeded = pipeline.run("controller", "seed", "--journal", str(tmp_path / "host-b.sqlite"),
                          "--tables", ",".join(TABLES) + ",T009")
    assert "T001: the journal numbers on after seq 10" in seeded.stdout, seeded.stdout
    assert "T009: nothing to seed" in seeded.stdout
    second = _fed(pipeline, tmp_path / "host-b.sqlite", 30, 45)
    # A third host, seeded as it starts.
    third = _fed(pipeline, tmp_path / "host-c.sqlite", 45, 60, "--seed-from-topic")

    topic = on_topic(pipeline)
    for t in TABLES:
        assert [s for s, _ in second[t]] == list(range(11, 16))
        assert [s for s, _ in third[t]] == list(range(16, 21))
        assert [s for s, _ in topic[t]] == list(range(1, 21)), t  # gapless, once each, across three hosts
        stamps = [r["ts"] for _, r in topic[t]]
        assert stamps == sorted(stamps)
