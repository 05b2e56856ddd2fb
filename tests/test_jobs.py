"""Pure work spread over forked processes (craps_streams/jobs.py): the results in the
order one process gives them, and this process working too."""
from __future__ import annotations

import pytest

from craps_streams.jobs import in_processes


def _square_slowly(x: int) -> tuple[int, int]:
    import os
    import time

    time.sleep(0.001)
    return x * x, os.getpid()


@pytest.mark.parametrize("jobs,n", [(2, 1), (2, 2), (2, 200), (3, 7), (3, 200)])
def test_in_processes_keeps_the_order_and_works_here_too(jobs, n):
    import os

    out = in_processes(_square_slowly, [(i,) for i in range(n)], jobs)
    assert [r for r, _ in out] == [i * i for i in range(n)]
    if n >= 200:  # this process takes the chunks at the back no job has begun
        assert out[-1][1] == os.getpid()
