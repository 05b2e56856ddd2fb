"""Pure work spread over processes (a report's tails, `report --jobs N`; an audit's buckets,
`audit --jobs N`; an archive's seq walk, `archive verify --jobs N`): each task a pure function of plain data, computed once each, by this process and
N - 1 forked ones, and put back in the order one process computes them, so the result is the same
to the byte.

Forked (not spawned): a job starts with the parent's modules already imported and its data already
in memory; only each task's arguments and result cross between processes. This process works too,
on the tasks no job has begun (its caches, e.g. the lattice's transforms, are warm), so N processes
take N cores and one fork fewer. A module of its own, outside the layers (it imports nothing of
the package), so the archive's verification and the replay's audit both use it.
"""
from __future__ import annotations

from typing import Callable, Sequence


def in_processes(fn: Callable, tasks: Sequence[tuple], jobs: int) -> list:
    """`[fn(*task) for task in tasks]`, in `jobs` processes (this one and `jobs - 1` forked) when
    there are more than one and more than one task (in this process otherwise)."""
    if jobs <= 1 or len(tasks) <= 1:
        return [fn(*task) for task in tasks]
    import multiprocessing  # only with jobs: the command's start in one process goes without them
    from concurrent.futures import ProcessPoolExecutor

    jobs = min(jobs, len(tasks))
    # Chunks, each a future of the pool's (taken from the front); this process takes them from the
    # back, each one it can still cancel (no job has begun it), until it meets the jobs' work.
    size = max(1, len(tasks) // (4 * jobs))
    chunks = [range(i, min(i + size, len(tasks))) for i in range(0, len(tasks), size)]
    out: list = [None] * len(tasks)
    with ProcessPoolExecutor(max_workers=jobs - 1, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = [pool.submit(_calls, fn, [tasks[i] for i in chunk]) for chunk in chunks]
        for chunk, future in zip(reversed(chunks), reversed(futures)):
            if not future.cancel():
                break
            for i in chunk:
                out[i] = fn(*tasks[i])
        for chunk, future in zip(chunks, futures):
            if not future.cancelled():
                for i, result in zip(chunk, future.result()):
                    out[i] = result
    return out


def _calls(fn: Callable, tasks: list) -> list:
    return [fn(*task) for task in tasks]
