"""Executors: where the search engine's evaluations run.

* :class:`SerialExecutor`: in this process, one at a time.
* :class:`MPIExecutor`: rank 0 dispatches, the roots of the environment's groups evaluate.
* :class:`ProcessExecutor`: worker processes on this machine evaluate, several per GPU if asked.
* :class:`SimulatedExecutor`: N virtual workers on a simulated clock, for tabular benchmarks.
* :class:`ProcessPool`: not a candidate executor but its seed-level sibling, for comparisons
  that run many independent searches.

:mod:`nord.search.executors.base` defines the interface (``Task``, ``Completion``,
``Executor``): the seam for new ways of evaluating.
"""
from nord.search.executors.base import Completion, Executor, Task, TimeBudgetSpent, run_task
from nord.search.executors.mpi import MPIExecutor
from nord.search.executors.pool import ProcessPool
from nord.search.executors.processes import ProcessExecutor
from nord.search.executors.serial import SerialExecutor
from nord.search.executors.simulated import SimulatedExecutor


__all__ = ["Task", "Completion", "Executor", "TimeBudgetSpent", "run_task", "SerialExecutor",
           "MPIExecutor", "ProcessExecutor", "ProcessPool", "SimulatedExecutor"]
