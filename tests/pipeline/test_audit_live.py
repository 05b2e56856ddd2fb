"""The audit of a live floor, on the real broker while the floor is being fed: an honest floor
audits clean every time (one consistent cut of the events the worker committed and the
settlements it wrote for them), and a settlement changed or deleted inside the cut is named."""
from __future__ import annotations

import re
import signal
import subprocess
import sys

import pytest

from craps_streams.codec import decode_output, encode_output
from craps_streams.kafka.reader import read_committed
from tests.conftest import ROOT, wait_for

pytestmark = pytest.mark.kafka


def settlements(pipeline) -> list:
    return list(read_committed(pipeline.prefix + "settlements", "admin", bootstrap=pipeline.bootstrap))


def audit(pipeline) -> subprocess.CompletedProcess:
    return pipeline.run("audit", "--from-topic", "--settlements-topic", "--limit", "5", check=False)


def cut_of(stdout: str) -> dict[int, int]:
    """partition -> events offset of the cut the audit printed."""
    line = next(l for l in stdout.splitlines() if "table-events up to offset" in l)
    return {int(p): int(o.replace(",", "")) for p, o in re.findall(r"p(\d+):([\d,]+)", line)}


@pytest.fixture
def live_floor(pipeline, tmp_path):
    """A worker and a floor of 8 tables fed live at 60x real time."""
    pipeline.start_worker()
    log = open(tmp_path / "floor.log", "wb")
    feed = subprocess.Popen([sys.executable, "-m", "craps_streams.cli", "simulate", "--live", "--tables", "8",
                             "--hours", "8", "--speed", "60", "--bad-rate", "0.01"],
                            env=pipeline.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_for(lambda: len(settlements(pipeline)) >= 300, 180, "the first settlements of the live floor")
        yield feed
    finally:
        pipeline.stop_worker(feed, signal.SIGINT, 20)  # the feed stops as a worker does: signal, wait, kill
        log.close()


def test_an_honest_live_floor_audits_clean_every_time(pipeline, live_floor):
    cuts = []
    for _ in range(4):
        result = audit(pipeline)
        assert live_floor.poll() is None, "the floor stopped being fed"
        assert result.returncode == 0, result.stdout + result.stderr
        summary = result.stdout.strip().splitlines()[-1]
        assert summary.startswith("audit CLEAN: ") and " 0 missing, 0 extra, 0 duplicated, 0 different" in summary
        assert "cut: the table events worker group " + pipeline.app_id in result.stdout
        cuts.append(cut_of(result.stdout))
    # the floor went on between the audits: each cut is a later one
    assert all(sum(b.values()) > sum(a.values()) for a, b in zip(cuts, cuts[1:])), cuts


def test_a_changed_or_deleted_settlement_inside_the_cut_is_named(pipeline, live_floor):
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient
    from kafka.structs import TopicPartition

    from craps_streams.kafka.settings import client_settings

    topic = pipeline.prefix + "settlements"
    by_partition: dict = {}
    for m in settlements(pipeline):
        by_partition.setdefault(m.partition, []).append(m)
    busy = sorted(by_partition, key=lambda p: -len(by_partition[p]))
    assert len(busy) >= 2 and len(by_partition[busy[1]]) >= 2

    # A settlement paid again with 100 cents more, written straight to the settlements topic.
    original = decode_output(by_partition[busy[0]][-1].value)
    changed = dict(original, won_cents=original["won_cents"] + 100)
    producer = KafkaProducer(**client_settings("admin", pipeline.bootstrap), acks="all")
    producer.send(topic, encode_output(changed), key=changed["table_id"].encode(), partition=busy[0]).get(30)
    producer.close()
    # The first settlement of another partition deleted from the topic (its events stay).
    first = by_partition[busy[1]][0]
    deleted = decode_output(first.value)
    admin = KafkaAdminClient(**client_settings("admin", pipeline.bootstrap))
    try:
        admin.delete_records({TopicPartition(topic, busy[1]): first.offset + 1})
    finally:
        admin.close()

    result = audit(pipeline)
    assert live_floor.poll() is None, "the floor stopped being fed"
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert f"MISSING    {deleted['id']}: replay settled, not recorded" in out, out
    assert f"DIFFERENT  {original['id']}: won_cents differs" in out, out
    assert f"won_cents: replayed {original['won_cents']}, recorded {original['won_cents'] + 100}" in out
    assert f"DUPLICATED {original['id']}: recorded 2 times (copies differ)" in out
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("audit FINDINGS: ") and "1 missing, 0 extra, 1 duplicated, 1 different" in summary


def test_an_archive_audited_against_the_live_settlements_must_reach_the_cut(pipeline, live_floor, tmp_path):
    archive = tmp_path / "archive"
    pipeline.run("archive", "--out", str(archive), "--no-progress")
    held = len(settlements(pipeline))
    wait_for(lambda: len(settlements(pipeline)) > held + 20, 120, "the floor settling past the archive")
    result = pipeline.run("audit", "--history", str(archive), "--settlements-topic", check=False)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "the archive " + str(archive) + " ends before the events worker group" in result.stderr
    assert "archive again first" in result.stderr and "Traceback" not in result.stderr


def test_the_audit_role_reads_the_worker_groups_offsets_and_cannot_move_them(pipeline):
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError
    from kafka.structs import OffsetAndMetadata, TopicPartition

    from craps_streams.kafka.settings import client_settings

    tp = TopicPartition(pipeline.prefix + "table-events", 0)
    auditor = KafkaConsumer(**client_settings("audit", pipeline.bootstrap), group_id=pipeline.app_id,
                            enable_auto_commit=False)
    try:
        assert auditor.committed(tp) is None  # DESCRIBE: it may read them (none committed yet)
        with pytest.raises(GroupAuthorizationFailedError):
            auditor.commit({tp: OffsetAndMetadata(5, "", -1)})
    finally:
        auditor.close()
