"""Work spread over processes, put back in the order one process does it, so the result is the
same to the byte:

    in_processes(fn, tasks, jobs)   pure tasks (a report's tails; an audit's buckets; an archive's
                                    seq walk): computed by this process and jobs - 1 forked ones
    by_group(fn, groups, jobs, ...) an archive's partition groups (`partition_groups`: no table in
                                    two), each passed by a forked job (`replay`, `report`, `audit`
                                    with --jobs), largest first; progress and each group's result
                                    told in partition order as soon as it and those before it are done

Forked (not spawned): a job starts with the parent's modules already imported and its data already
in memory; only each task's arguments and result cross between processes. This process works too,
on the tasks no job has begun (its caches, e.g. the lattice's transforms, are warm), so N processes
take N cores and one fork fewer. A module of its own, outside the layers (it imports nothing of
the package), so the archive's verification and the replay's audit both use it.
"""
from __future__ import annotations

from typing import Callable, Sequence

PROGRESS_EVERY_S = 0.5  # how often `by_group` tells `tick` of the items its jobs have read


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


def by_group(fn: Callable, groups: Sequence[tuple], jobs: int, *, args: tuple = (), init: tuple,
             tick: Callable[[int], None] | None = None, each: Callable[[int, object], bool] | None = None) -> list | None:
    """`[fn(members, *args) for members, _ in groups]` for an archive's partition `groups` (each
    `(partitions, events)`), in `min(jobs, len(groups))` forked processes, the largest groups begun
    first. `init`: `(initializer, *its arguments)`, each job's start, called with a shared counter
    first (`multiprocessing.Value("q")`: the items the jobs read, which `tick(n)` is told of every
    `PROGRESS_EVERY_S` as they grow). `each(i, result)` is told of group `i` in group order as soon
    as it and those before it are done; when it answers False, the groups not begun are cancelled
    and the call returns None. A job's exception is raised here as soon as it happens."""
    import multiprocessing  # only with jobs: the command's start in one process goes without them
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = multiprocessing.get_context("fork")
    counter = ctx.Value("q", 0)
    initializer, *initargs = init
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(groups))), mp_context=ctx,
                             initializer=initializer, initargs=(counter, *initargs)) as pool:
        futures: list = [None] * len(groups)
        for i in sorted(range(len(groups)), key=lambda i: -groups[i][1]):
            futures[i] = pool.submit(fn, groups[i][0], *args)
        pending, seen, told = set(futures), 0, 0
        while pending:
            finished, pending = wait(pending, timeout=PROGRESS_EVERY_S if tick is not None else None,
                                     return_when=FIRST_COMPLETED)
            if tick is not None and counter.value != seen:
                now = counter.value
                tick(now - seen)
                seen = now
            for f in finished:
                f.result()  # a job's exception ends the work here
            while each is not None and told < len(groups) and futures[told].done():
                if each(told, futures[told].result()) is False:
                    pool.shutdown(cancel_futures=True)
                    return None
                told += 1
        return [f.result() for f in futures]
