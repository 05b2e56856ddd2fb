"""The real Prometheus, scraping a real worker fed a simulated floor, agrees with the settlements
topic to the cent: handle, house win and hold (issue: hold monitoring)."""
from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import urllib.parse
import urllib.request

import pytest

from craps_streams.codec import decode_output
from craps_streams.kafka.reader import read_committed
from tests.conftest import free_port, wait_for
from tests.pipeline.test_pipeline import replayed, write_floor

ROOT = pathlib.Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.kafka


def query(port: int, expr: str):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as r:
        result = json.load(r)["data"]["result"]
    return float(result[0]["value"][1]) if result else None


@pytest.fixture
def prometheus(tmp_path):
    assert shutil.which("prometheus"), "prometheus is not installed: apt-get install prometheus (CI does)"
    procs = []

    def start(worker_port: int) -> int:
        config_dir = tmp_path / "prometheus"
        shutil.copytree(ROOT / "infra" / "prometheus", config_dir)
        config = (config_dir / "prometheus.yml").read_text()
        config = (config.replace("127.0.0.1:6066", f"127.0.0.1:{worker_port}")
                  .replace("scrape_interval: 5s", "scrape_interval: 1s")
                  .replace("scrape_timeout: 4s", "scrape_timeout: 1s")
                  .replace("evaluation_interval: 15s", "evaluation_interval: 1s"))
        (config_dir / "prometheus.yml").write_text(config)
        port = free_port()
        procs.append(subprocess.Popen(
            ["prometheus", f"--config.file={config_dir / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=open(tmp_path / "prometheus.log", "wb"), stderr=subprocess.STDOUT))
        return port

    yield start
    for p in procs:
        p.terminate()
        p.wait(20)


def test_prometheus_hold_equals_settlements_topic_to_the_cent(pipeline, prometheus, tmp_path):
    lines = write_floor(tmp_path / "floor.jsonl", tables=4, hours=1.0, seed=31, bad_rate=0.0)
    outputs, tally = replayed(lines)
    expected_count = sum(1 for o in outputs if type(o).__name__ == "WagerSettled")
    worker = pipeline.start_worker()
    prom_port = prometheus(worker.web_port)
    pipeline.run("produce", str(tmp_path / "floor.jsonl"), "--quiet")

    def settled():
        records = [decode_output(m.value) for m in read_committed(pipeline.prefix + "settlements", "admin", bootstrap=pipeline.bootstrap)]
        return records if len(records) >= expected_count else None

    settlements = wait_for(settled, 120, f"{expected_count} settlements")
    handle = sum(s["stake_cents"] for s in settlements)
    house_win = sum(s["stake_cents"] for s in settlements if s["outcome"] == "lose") - \
        sum(s["won_cents"] for s in settlements)
    assert handle > 0

    def recorded():
        h = query(prom_port, "craps:handle_cents:sum")
        w = query(prom_port, "craps:house_win_cents:sum")
        return (h, w) if h == handle and w == house_win else None

    wait_for(recorded, 90, f"Prometheus to record handle {handle} and house win {house_win}", interval=1)
    hold = query(prom_port, "craps:hold_ratio:sum")
    assert hold == pytest.approx(house_win / handle, rel=1e-12)
