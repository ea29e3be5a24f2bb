"""ProcessPool: many independent searches (one per seed) on worker processes.

Comparisons run the same search for hundreds of seeds; each seed is a whole run of the
engine, independent of the others, so they are spread over processes::

    pool = ProcessPool(processes=4)
    for outcome in pool.map(run_chunk, chunks):    # in completion order
        ...

Workers are forked where fork exists, else spawned; ``processes=1`` runs every job in this
process. Workers ignore SIGINT and exit quietly on the pool's SIGTERM.

Details (why fork, signals): docs/executors.md.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
from typing import Callable, Iterable, Iterator, TypeVar

from nord.checks import check_int

__all__ = ["ProcessPool"]

J = TypeVar("J")
R = TypeVar("R")


def _quiet_exit(signum, frame) -> None:
    os._exit(128 + signum)


def _worker_signals() -> None:
    """A worker's signal dispositions (inherited ones would raise in it, with a traceback)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _quiet_exit)


class ProcessPool:
    """Runs independent jobs on ``processes`` worker processes.

    Args:
        processes: worker processes (1: run in this process).
    """

    def __init__(self, processes: int = 1):
        self.processes = check_int(processes, "processes", 1)

    def map(self, function: Callable[[J], R], jobs: Iterable[J]) -> Iterator[R]:
        """``function(job)`` for every job, yielded as they finish (in order when serial)."""
        jobs = list(jobs)
        if self.processes == 1 or len(jobs) <= 1:
            yield from map(function, jobs)
            return
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        with context.Pool(min(self.processes, len(jobs)), initializer=_worker_signals) as pool:
            yield from pool.imap_unordered(function, jobs)
