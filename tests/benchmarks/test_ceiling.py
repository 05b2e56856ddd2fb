"""The live path's ceiling of benchmarks/pipeline_bench.py (benchmarks/ceiling.py) and how the Kafka
Streams contender's result line and grants are read and made (benchmarks/kstreams_passthrough.py)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from ceiling import TARGET, ceiling, medians  # noqa: E402
from kstreams_passthrough import parse_result, streams_grants  # noqa: E402


def test_the_fastest_pass_through_is_the_ceiling():
    top = ceiling(40_000.0, {"aiokafka": 50_000.0, "batched": 64_000.0, "kafka streams": 32_000.0})
    assert top.name == "batched"
    assert top.eps == 64_000.0
    assert top.ratio == pytest.approx(0.625)
    assert not top.reached


def test_the_target_is_reached_at_exactly_its_ratio():
    assert ceiling(TARGET * 50_000.0, {"aiokafka": 50_000.0}).reached
    assert not ceiling(TARGET * 50_000.0 - 1, {"aiokafka": 50_000.0}).reached


def test_a_tie_goes_to_the_first_named_and_a_rateless_contender_is_left_out():
    top = ceiling(10.0, {"plain": 20.0, "batched": 20.0, "failed": 0.0})
    assert top.name == "plain"
    with pytest.raises(ValueError):
        ceiling(10.0, {"failed": 0.0})


def test_medians_leave_out_a_contender_without_runs():
    assert medians({"pipeline": [3.0, 1.0, 2.0], "streams": [], "even": [1.0, 4.0]}) == {"pipeline": 2.0, "even": 2.5}


def test_the_streams_result_line():
    assert parse_result("events=102992 seconds=2.5 transactions=25") == (102_992, 2.5, 25)
    with pytest.raises(KeyError):
        parse_result("events=10 seconds=1.0")


def test_streams_gets_its_group_and_transactional_ids_by_prefix_for_the_worker_only():
    grants = streams_grants("bench-kstreams-abc-")
    assert {(g.resource, g.operation) for g in grants} == {
        ("GROUP", "READ"), ("GROUP", "DESCRIBE"), ("TRANSACTIONAL_ID", "WRITE"), ("TRANSACTIONAL_ID", "DESCRIBE")}
    assert all(g.role == "worker" and g.pattern == "PREFIXED" and g.name == "bench-kstreams-abc-" for g in grants)
