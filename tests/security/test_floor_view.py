"""The floor view's principal is enough for a faust-streaming read side, and no more: a faust app
logged in as `floor` starts (its assignor topic, its group), reads the settlements and keeps a Table
(its changelog topic), while the same principal may not write the floor's own topics."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from kafka import KafkaProducer
from kafka.errors import KafkaError

from craps_streams.kafka.access import admin_client, floor_view_prefix
from craps_streams.kafka.settings import client_settings
from tests.conftest import ROOT

pytestmark = pytest.mark.kafka


def test_a_faust_read_side_runs_as_the_floor_view(pipeline, tmp_path):
    producer = KafkaProducer(**client_settings("worker", pipeline.bootstrap))
    producer.send(pipeline.prefix + "settlements", key=b"T007", value=b"a settlement").get(timeout=30)
    producer.close()

    log_path = tmp_path / "floor-view.log"
    env = {**pipeline.env, "FLOOR_VIEW_DATADIR": str(tmp_path / "faust-data")}
    with open(log_path, "wb") as log:
        app = subprocess.Popen([sys.executable, str(ROOT / "tests" / "security" / "floor_view_app.py"), "worker",
                                "-l", "info", "--without-web"], cwd=ROOT, env=env, stdout=log,
                               stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 180
            while b"COUNTED T007 1" not in log_path.read_bytes():
                assert app.poll() is None, log_path.read_text(errors="replace")[-3000:]
                assert time.monotonic() < deadline, log_path.read_text(errors="replace")[-3000:]
                time.sleep(0.5)
        finally:
            app.terminate()
            try:
                app.wait(30)
            except subprocess.TimeoutExpired:
                app.kill()
                app.wait()
    app_id = floor_view_prefix(pipeline.app_id) + "sectest"
    admin = admin_client(pipeline.bootstrap)
    try:
        topics = set(admin.list_topics())
    finally:
        admin.close()
    assert f"{app_id}-__assignor-__leader" in topics
    assert f"{app_id}-settled-per-table-changelog" in topics
    # ... and no more: it cannot write the settlements it reads.
    producer = KafkaProducer(**client_settings("floor", pipeline.bootstrap), max_block_ms=5000)
    try:
        with pytest.raises(KafkaError) as refused:
            producer.send(pipeline.prefix + "settlements", key=b"T007", value=b"forged").get(timeout=10)
        assert "AuthorizationFailed" in f"{type(refused.value).__name__} {refused.value}"
    finally:
        producer.close(timeout=2)
