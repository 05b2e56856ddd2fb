"""Fixtures of the fault tests: a FaultRun (own topics and app id, short timeouts) on the shared
broker. The broker-restart scenario starts a private broker of its own (harness.PrivateBroker)."""
from __future__ import annotations

import pytest

from tests.faults.harness import FaultRun


@pytest.fixture
def fault_run(kafka, tmp_path):
    run = FaultRun(tmp_path, kafka)
    run.create_topics()
    yield run
    run.close()
