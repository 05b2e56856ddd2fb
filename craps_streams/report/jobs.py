"""The report's work after the pass spread over processes (`report --jobs N`): each line's tails
are pure functions of plain data, computed once each in a pool of forked processes, and put back in
the order one process computes them, so the report is the same to the byte.

Forked (not spawned): a job starts with the parent's modules already imported and the report's data
already in memory; only each task's arguments and result cross between
processes.
"""
from __future__ import annotations

from typing import Callable, Sequence


def in_processes(fn: Callable, tasks: Sequence[tuple], jobs: int) -> list:
    """`[fn(*task) for task in tasks]`, in `jobs` processes when there are more than one and more than
    one task (in this process otherwise)."""
    if jobs <= 1 or len(tasks) <= 1:
        return [fn(*task) for task in tasks]
    import multiprocessing  # only with jobs: the command's start in one process goes without them
    from concurrent.futures import ProcessPoolExecutor

    jobs = min(jobs, len(tasks))
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        # Interleaved chunks, so each job gets some of the costly tasks wherever they sit in the list.
        return list(pool.map(_call, [fn] * len(tasks), tasks, chunksize=max(1, len(tasks) // (4 * jobs))))


def _call(fn: Callable, task: tuple):
    return fn(*task)
