"""Work spread over forked processes (craps_streams/jobs.py): the results in the order one
process gives them; this process working too on pure tasks; an archive's groups told in order,
stopped when told, a job's exception raised."""
from __future__ import annotations

import pytest

from craps_streams.jobs import by_group, in_processes


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


_counter = None


def _init(counter, offset: int) -> None:
    global _counter, _offset
    _counter, _offset = counter, offset


def _group_sum(partitions: tuple, scale: int) -> tuple[int, int]:
    import os
    import time

    time.sleep(0.05 * len(partitions))  # the larger groups take longer
    with _counter.get_lock():
        _counter.value += len(partitions)
    return scale * sum(partitions) + _offset, os.getpid()


def _fails(partitions: tuple) -> int:
    if 3 in partitions:
        raise ValueError(f"group {partitions} could not be read")
    return sum(partitions)


GROUPS = [((0, 1), 2), ((2,), 1), ((3, 4, 5), 3), ((6,), 1)]


def test_by_group_gives_each_group_its_result_in_group_order_from_forked_jobs():
    import os

    told, ticks = [], []
    out = by_group(_group_sum, GROUPS, 2, args=(10,), init=(_init, 7), tick=ticks.append,
                   each=lambda i, r: told.append((i, r[0])) or True)
    assert [r for r, _ in out] == [10 * sum(p) + 7 for p, _ in GROUPS]
    assert told == [(i, r) for i, (r, _) in enumerate(out)]  # every group once, in group order
    assert sum(ticks) == sum(len(p) for p, _ in GROUPS)  # the jobs' counter, told as it grew
    pids = {pid for _, pid in out}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2


def test_by_group_stops_when_told_and_raises_a_jobs_exception():
    seen = []
    assert by_group(_group_sum, GROUPS, 2, args=(1,), init=(_init, 0),
                    each=lambda i, r: seen.append(i) or i < 1) is None
    assert seen == [0, 1]  # the answer False for group 1 ends it: no group after it is told
    with pytest.raises(ValueError, match=r"group \(3, 4, 5\) could not be read"):
        by_group(_fails, GROUPS, 2, init=(_init, 0))
