"""SerialExecutor: evaluates in this process, one task at a time (one worker, rank 0).

    summary = run_search(algorithm, executor=SerialExecutor(evaluator), budget=100)

``run_search(algorithm, evaluator, ...)`` makes one for you.
"""
from __future__ import annotations

from collections import deque
from typing import Deque, Sequence

from nord.search.executors.base import Completion, Executor, Task, run_task

__all__ = ["SerialExecutor"]


class SerialExecutor(Executor):
    """Evaluates in this process, one task at a time (one worker, world rank 0).

    Args:
        evaluator: an :class:`~nord.evaluators.base.Evaluator`.
    """

    def __init__(self, evaluator):
        self.evaluator = evaluator
        self._queue: Deque[Task] = deque()

    @property
    def n_workers(self) -> int:
        return 1

    @property
    def in_flight(self) -> int:
        return len(self._queue)

    def submit(self, task: Task) -> None:
        self._queue.append(task)

    def survivors(self) -> Sequence[int]:
        """Every candidate in flight: this process evaluates them, and it lived to be told."""
        return [task.number for task in self._queue]

    def wait(self) -> Completion:
        task = self._queue[0]   # in flight until it is done (see survivors)
        self._local_report(task, 0)
        done = run_task(self.evaluator, task, 0)
        self._queue.popleft()
        return done
