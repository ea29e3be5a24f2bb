"""MPIExecutor: rank 0 runs the search loop and the algorithm; the other ranks evaluate.

Every rank calls :func:`~nord.search.loop.run_search` with the same executor; rank 0 returns
the summary, the other ranks serve evaluations until rank 0 is done and return None::

    from nord.environments import Environment
    from nord.search.dispatch import MPIExecutor
    from nord.search.loop import run_search

    with Environment(group_size=1) as env:          # mpirun -np 4: 3 workers, ranks 1, 2, 3
        executor = MPIExecutor(evaluator, env)
        summary = run_search(algorithm, budget=100, journal="run.db", executor=executor,
                             mode="async")
        env.log("best %.3f", summary.best_result.accuracy) if env.is_root else None

Who evaluates. A *worker* is the root of a group of the environment (world rank
``env.group_roots[i]``); the other ranks of its group follow it: the root forwards each task to
them over the group communicator and all of them call the evaluator, whose own collectives
(e.g. a Horovod-distributed evaluator's) make them train the network together. The result of
the group root is the one sent back and recorded, with the root's world rank.

* Several groups: rank 0 only dispatches (it answers a finished worker at once, which an
  evaluating rank 0 could not), and the workers are the roots of the groups other than rank
  0's. With ``Environment(group_size=k, dedicated_root=True)`` rank 0 is in no group and every
  other rank works; with ``dedicated_root=False`` and ``k > 1`` the other ranks of rank 0's
  group stay idle (a warning says so).
* One group (``group_size=None``, the paper's experiment 2), or a single process: there is
  nobody to dispatch to, so rank 0 evaluates itself, with its group's ranks following it.

Protocol (on a duplicate of the world communicator, so no message can meet the evaluator's):
rank 0 sends a task ``(candidate number, descriptor JSON)`` with tag ``TAG_TASK`` to an idle
worker; the worker sends ``(number, result dict, started, ended)`` back with ``TAG_RESULT``;
rank 0 receives results from ``MPI.ANY_SOURCE``, so whichever worker finishes first is served
first. ``close`` (always called by ``run_search``, also after an error) sends ``TAG_STOP`` to
every worker and group member, so no rank waits forever. A rank that dies aborts the whole
job (the Environment calls ``MPI_Abort``).

Waiting without burning a core: Open MPI's blocking receive spins on the CPU, which on a
machine with more ranks than cores slows the ranks that train. Waiting ranks therefore poll
with ``Iprobe`` and sleep between polls, from 50 microseconds doubling up to ``poll_interval``
(0.25 ms by default): a quick answer is seen within about 0.1 ms, and a long wait adds at most
``poll_interval`` (plus the timer's slack) and costs about one poll per interval. Sends are
non-blocking (``isend``), so rank 0 never waits for a busy worker to take its message.
(Spinning first, even with ``sched_yield``, measured worse on an oversubscribed machine: the
spinning rank delays the very rank it waits for.) ``poll_interval=0`` uses a blocking
``Probe`` instead (lowest latency, one busy core per waiting rank).

Dispatch overhead. Between two evaluations a worker waits for its result to reach rank 0,
for rank 0 to tell it, ask, decode, hash and journal the next candidate, and for the task to
reach it: about a millisecond or two, which matters only for evaluations that take
milliseconds. ``prefetch=1`` keeps the next task waiting at each worker, so the worker goes
on at once and the round trip overlaps its work.
"""
from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any, Deque, Dict, List

from nord.descriptors import NeuralDescriptor
from nord.errors import ConfigurationError, MissingDependencyError
from nord.evaluators.result import EvaluationResult
from nord.search.loop import Completion, Executor, Task, evaluate_task

__all__ = ["MPIExecutor", "TAG_TASK", "TAG_RESULT", "TAG_STOP"]

logger = logging.getLogger(__name__)

TAG_TASK = 71
TAG_RESULT = 72
TAG_STOP = 73
_FIRST_SLEEP = 5e-5


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise MissingDependencyError(
            "MPIExecutor needs mpi4py; install it with `pip install mpi4py` (or "
            "`pip install nord[mpi]`) next to an MPI library such as Open MPI") from error
    return MPI


class _SoloGroup:
    """The group of a rank that evaluates alone."""

    def __init__(self, index: int):
        self.index, self.rank, self.size, self.comm = index, 0, 1, None
        self.members = (index,)

    @property
    def is_root(self) -> bool:
        return True


class _WorldView:
    """An Environment-like view of COMM_WORLD with one group per rank (used when no env is given)."""

    def __init__(self):
        from nord.environments import launched_by_mpi

        self.comm = None
        if launched_by_mpi():
            self.comm = _mpi().COMM_WORLD
        self.rank = 0 if self.comm is None else self.comm.Get_rank()
        self.size = 1 if self.comm is None else self.comm.Get_size()
        self.group = _SoloGroup(self.rank)
        self.n_groups = self.size
        self.group_roots = tuple(range(self.size))


class MPIExecutor(Executor):
    """Evaluate on the group roots of an MPI job; rank 0 runs the search loop.

    Args:
        evaluator: the :class:`~nord.evaluators.base.Evaluator` every evaluating rank calls.
        env: a started :class:`~nord.environments.Environment` (or any object with ``comm``,
            ``rank``, ``size``, ``group``, ``n_groups`` and ``group_roots``). None uses
            ``COMM_WORLD`` with one group per rank (rank 0 dispatches, ranks 1.. evaluate), or
            a single process when not launched by an MPI launcher.
        poll_interval: the longest sleep, in seconds, between polls of a waiting rank. The
            default, 0.25 ms, adds at most that to a message's latency, and a waiting rank costs
            about 4% of a core. 0 blocks in ``MPI_Probe`` instead: lowest latency, but a waiting
            rank keeps a core busy (for machines with a core per rank; see the module docstring).
        prefetch: tasks each worker holds in reserve. 0 (default): a worker is sent its next
            task when it returns a result, so the algorithm proposes it knowing that result.
            1: the next task is already waiting when a worker finishes, which takes the
            dispatch round trip off the workers' time, at the price of proposals made one
            result earlier (in async mode; a sync batch is dealt out the same way).

    The constructor stores its arguments; ``start`` (called by ``run_search`` on every rank,
    collectively) sets up the communicators.
    """

    def __init__(self, evaluator, env=None, poll_interval: float = 0.00025, prefetch: int = 0):
        if poll_interval < 0:
            raise ConfigurationError(f"poll_interval must be >= 0 seconds; got {poll_interval!r}")
        if isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 0:
            raise ConfigurationError(f"prefetch must be an integer >= 0; got {prefetch!r}")
        self.evaluator = evaluator
        self.env = env
        self.poll_interval = poll_interval
        self.prefetch = prefetch
        self._active = False
        self._requests: List[Any] = []

    # --- set-up --------------------------------------------------------------------------
    def start(self) -> None:
        """Work out this rank's role and duplicate the communicators (collective).

        ``run_search`` calls it on every rank; after the search (``close`` on rank 0, the end of
        ``serve`` elsewhere) the executor can start again for another search in the same job.
        """
        if self._active:
            return
        view = self.env if self.env is not None else _WorldView()
        comm = view.comm
        self.rank = view.rank
        self.size = view.size
        self.n_groups = view.n_groups
        group = view.group
        self._group = group
        self._world = comm.Dup() if comm is not None and self.size > 1 else None
        self._group_comm = (group.comm.Dup() if group is not None and group.size > 1
                            and group.comm is not None else None)
        self._local = self.size == 1 or comm is None or (group is not None and self.n_groups == 1)
        if self.rank == 0:
            self.role = "dispatcher"
        elif group is not None and group.is_root:
            self.role = "worker"
        else:
            self.role = "member"
        if self.rank == 0:
            if self._local:
                self.worker_ranks: List[int] = [0]
            else:
                self.worker_ranks = [root for root in view.group_roots if root != 0]
                if group is not None and group.size > 1:
                    logger.warning(
                        "ranks %s share rank 0's group but rank 0 only dispatches when there are "
                        "several groups, so they stay idle; use Environment(dedicated_root=True) "
                        "or group_size=1", list(getattr(group, "members", ()))[1:])
            # worker rank -> candidate numbers sent to it, in order
            self._outstanding: Dict[int, Deque[int]] = {rank: deque() for rank in self.worker_ranks}
            self._local_tasks: Deque[Task] = deque()
        self._active = True
        logger.debug("rank %d of %d: %s", self.rank, self.size, self.role)

    @property
    def is_dispatcher(self) -> bool:
        return self.rank == 0

    # --- the loop's side (rank 0) ------------------------------------------------------
    @property
    def n_workers(self) -> int:
        return len(self.worker_ranks)

    @property
    def capacity(self) -> int:
        return 1 if self._local else self.n_workers * (1 + self.prefetch)

    @property
    def in_flight(self) -> int:
        if self._local:
            return len(self._local_tasks)
        return sum(len(numbers) for numbers in self._outstanding.values())

    def submit(self, task: Task) -> None:
        if self._local:
            self._local_tasks.append(task)
            return
        # the least loaded worker: without prefetch, an idle one (the one that just finished)
        worker = min(self.worker_ranks, key=lambda rank: len(self._outstanding[rank]))
        self._outstanding[worker].append(task.number)
        self._send(self._world, (task.number, task.descriptor_json), worker, TAG_TASK)

    def wait(self) -> Completion:
        if self._local:
            task = self._local_tasks.popleft()
            self._forward(TAG_TASK, (task.number, task.descriptor_json))
            return evaluate_task(self.evaluator, task.descriptor, 0, task.number)
        MPI = _mpi()
        status = MPI.Status()
        self._poll(self._world, MPI.ANY_SOURCE, TAG_RESULT, status)
        worker = status.Get_source()
        number, result, started, ended = self._world.recv(source=worker, tag=TAG_RESULT)
        expected = self._outstanding[worker].popleft()
        if number != expected:  # a protocol bug, never a user error
            raise RuntimeError(f"rank {worker} returned candidate {number}, expected {expected}")
        return Completion(number, EvaluationResult.from_dict(result), worker, started, ended)

    def close(self) -> None:
        """Stop every worker and follower (rank 0); free the duplicated communicators."""
        if not self._active:
            return
        if self.rank == 0:
            if self._world is not None and not self._local:
                for worker in self.worker_ranks:
                    self._send(self._world, None, worker, TAG_STOP)
            self._forward(TAG_STOP, None)
        self._free()

    def _send(self, comm, message: Any, dest: int, tag: int) -> None:
        """Send without blocking: Open MPI's blocking send of a medium-sized message (a few
        hundred bytes, as a descriptor) waits, spinning, until the receiver takes it, which
        would stall the dispatcher while a worker is busy. The request is completed later."""
        self._requests.append(comm.isend(message, dest=dest, tag=tag))
        if len(self._requests) > 64:
            self._requests = [request for request in self._requests if not request.Test()]

    def _free(self) -> None:
        if self._requests:
            _mpi().Request.Waitall(self._requests)
            self._requests = []
        for comm in (self._world, self._group_comm):
            if comm is not None:
                comm.Free()
        self._world = self._group_comm = None
        self._active = False

    def describe(self) -> Dict[str, Any]:
        group = self._group
        return {"ranks": self.size, "groups": self.n_groups, "workers": self.n_workers,
                "worker_ranks": list(self.worker_ranks),
                "group_size": None if group is None else group.size,
                "dispatcher_evaluates": self._local, "prefetch": self.prefetch}

    # --- the workers' side ------------------------------------------------------------
    def serve(self) -> None:
        """Evaluate tasks until rank 0 (or this rank's group root) says stop."""
        if self.role == "worker":
            self._serve_worker()
        else:
            self._serve_member()
        self._free()

    def _serve_worker(self) -> None:
        MPI = _mpi()
        status = MPI.Status()
        served = 0
        while True:
            self._poll(self._world, 0, MPI.ANY_TAG, status)
            message = self._world.recv(source=0, tag=status.Get_tag())
            tag = status.Get_tag()
            self._forward(tag, message)
            if tag == TAG_STOP:
                break
            number, descriptor_json = message
            done = self._evaluate(number, descriptor_json)
            self._send(self._world, (number, done.result.to_dict(), done.started, done.ended),
                       0, TAG_RESULT)
            served += 1
        logger.debug("rank %d evaluated %d candidates", self.rank, served)

    def _serve_member(self) -> None:
        if self._group_comm is None:  # rank without a group (cannot happen off rank 0)
            return
        MPI = _mpi()
        status = MPI.Status()
        while True:
            self._poll(self._group_comm, 0, MPI.ANY_TAG, status)
            message = self._group_comm.recv(source=0, tag=status.Get_tag())
            if status.Get_tag() == TAG_STOP:
                break
            number, descriptor_json = message
            self._evaluate(number, descriptor_json)  # the group root's result is the one recorded

    def _evaluate(self, number: int, descriptor_json: str) -> Completion:
        try:
            descriptor = NeuralDescriptor.from_json(descriptor_json)
        except Exception as error:  # noqa: BLE001 - a bad message is a failed candidate
            now = time.time()
            return Completion(number, EvaluationResult.failure(f"{type(error).__name__}: {error}"),
                              self.rank, now, now)
        return evaluate_task(self.evaluator, descriptor, self.rank, number)

    def _forward(self, tag: int, message: Any) -> None:
        """A group root passes a task (or stop) on to the other ranks of its group."""
        if self._group_comm is None:
            return
        for member in range(1, self._group.size):
            self._send(self._group_comm, message, member, tag)

    def _poll(self, comm, source: int, tag: int, status) -> None:
        """Wait for a matching message without spinning a core (see the module docstring)."""
        if self.poll_interval <= 0:
            comm.Probe(source=source, tag=tag, status=status)
            return
        sleep = _FIRST_SLEEP
        while not comm.Iprobe(source=source, tag=tag, status=status):
            time.sleep(sleep)
            sleep = min(sleep * 2, self.poll_interval)
