"""The floor view on the real broker: two settling workers share the table partitions, two
view instances each show the whole floor with the same values as a replay of the history (state and
hold to the cent, settlements counted, outcomes observed, markers, alerts). A view killed with
kill -9 mid-stream and restarted rebuilds its tables and counts nothing twice; a rebalance of the
settling workers (one leaves mid-stream) does not disturb the views."""
from __future__ import annotations

import signal
import threading
import time

import pytest

from tests.conftest import wait_for
from tests.floor.replayed import compared, replayed_views
from tests.floor.views import floor_of, get_json, last_seqs, start_view, wait_view, what_it_shows
from tests.pipeline.test_pipeline import write_floor

pytestmark = pytest.mark.kafka


def shows(view, want: dict[str, dict]) -> bool:
    floor = floor_of(view)
    if not floor:
        return False
    got = {t["table_id"]: (t.get("last_seq"), t["settled"]) for t in floor["tables"]}
    return got == {t: (v["last_seq"], v["settled"]) for t, v in want.items()}


def settle(view, want: dict[str, dict], timeout: float = 60) -> dict:
    """The differences between the view and `want`, once there are none or after `timeout` s: the
    view reads four topics, each at its own pace, so it agrees a moment after its floor rows do."""
    deadline = time.monotonic() + timeout
    while True:
        diff = differences(view, want)
        if not diff or time.monotonic() > deadline:
            return diff
        time.sleep(1)


def differences(view, want: dict[str, dict]) -> dict:
    out = {}
    for table, expected in want.items():
        detail = get_json(view, f"/api/table?id={table}")
        got = compared(detail) if detail else None
        if got != compared(expected):
            out[table] = {k: (got or {}).get(k) for k in compared(expected)
                          if (got or {}).get(k) != compared(expected)[k]}
    return out


@pytest.mark.timeout(600)
def test_two_views_over_two_workers_equal_the_replay_through_kill_9_and_a_rebalance(pipeline, tmp_path):
    lines = write_floor(tmp_path / "floor.jsonl", tables=12, hours=0.75, seed=17, bad_rate=0.02)
    half = len(lines) // 2
    (tmp_path / "first.jsonl").write_text("\n".join(lines[:half]) + "\n")
    (tmp_path / "second.jsonl").write_text("\n".join(lines[half:]) + "\n")

    w1, w2 = pipeline.start_worker("w1"), pipeline.start_worker("w2")
    va, vb = start_view(pipeline, "a"), start_view(pipeline, "b")
    pipeline.run("produce", str(tmp_path / "first.jsonl"), "--quiet")

    want1 = replayed_views(lines[:half])
    assert sum(v["settled"] for v in want1.values()) > 100
    for view in (va, vb):
        wait_for(lambda: shows(view, want1), 180, f"view {view.log_path.name} to show the first half")
        assert settle(view, want1) == {}
    owned = [wait_for(lambda w=w: get_json(w, "/state"), 30, "a worker's /state")["partitions"] for w in (w1, w2)]
    assert owned[0] and owned[1] and not set(owned[0]) & set(owned[1]), owned  # each owns part of the floor

    # Second half: a view is killed (-9) while it folds, and one settling worker leaves (rebalance).
    feeder = threading.Thread(target=pipeline.run, args=("produce", str(tmp_path / "second.jsonl"), "--quiet"))
    feeder.start()
    wait_for(lambda: (floor_of(va) or {}).get("version", 0) > 0 and
             sum(t["settled"] for t in floor_of(va)["tables"]) > sum(v["settled"] for v in want1.values()),
             120, "view a to fold some of the second half")
    va.send_signal(signal.SIGKILL)
    va.wait(10)
    pipeline.stop_worker(w2)  # SIGTERM: w1 takes its partitions over
    time.sleep(1)
    va2 = start_view(pipeline, "a", port=va.web_port)
    feeder.join(300)
    assert not feeder.is_alive()

    want2 = replayed_views(lines)
    for view in (va2, vb):
        try:
            wait_for(lambda: shows(view, want2), 240, f"view {view.log_path.name} to show the whole floor")
        except AssertionError as e:
            raise AssertionError(f"{e}\n{what_it_shows(view, want2)}") from None
        assert settle(view, want2) == {}, view.log_path
    assert w1.poll() is None
    # The restarted view rebuilt its tables from its changelogs (it did not start from nothing).
    log = va2.log_path.read_text()
    assert "recover" in log.lower()
