"""MPIExecutor: rank 0 runs the search engine and the algorithm; the other ranks evaluate.

Every rank calls :func:`~nord.search.engine.run_search` with the same executor; rank 0 returns
the summary, the other ranks serve evaluations until rank 0 is done and return None::

    from nord.parallel import Environment
    from nord.search import MPIExecutor, run_search

    with Environment(group_size=1) as env:          # mpirun -np 4: 3 workers, ranks 1, 2, 3
        executor = MPIExecutor(evaluator, env, space=space)
        summary = run_search(algorithm, budget=100, journal="run.db", executor=executor,
                             mode="async")

Details (who evaluates, the protocol, waiting, dispatch overhead): docs/executors.md.
"""
from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from typing import Any, Deque, Dict, List, Set

from nord.checks import check_int
from nord.errors import ConfigurationError
from nord.evaluators.result import EpochRecord, EvaluationResult
from nord.parallel import import_mpi, launched_by_mpi, on_stop_signal, wait_for_message
from nord.search.executors.base import Completion, Executor, Task, run_task

__all__ = ["MPIExecutor", "TAG_TASK", "TAG_RESULT", "TAG_STOP", "TAG_SURVIVED"]

logger = logging.getLogger(__name__)

TAG_TASK = 71
TAG_RESULT = 72
TAG_STOP = 73
TAG_EPOCH = 75
TAG_SURVIVED = 76
SURVIVOR_WAIT = 0.5
"""Seconds rank 0 waits, after a SIGTERM, for the workers to say they got it too (Open MPI
sends SIGKILL 1 s after its SIGTERM: ``odls_base_sigkill_timeout``)."""


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
        self.comm = None
        if launched_by_mpi():
            self.comm = import_mpi().COMM_WORLD
        self.rank = 0 if self.comm is None else self.comm.Get_rank()
        self.size = 1 if self.comm is None else self.comm.Get_size()
        self.group = _SoloGroup(self.rank)
        self.n_groups = self.size
        self.group_roots = tuple(range(self.size))


class MPIExecutor(Executor):
    """Evaluate on the group roots of an MPI job; rank 0 runs the search engine.

    Args:
        evaluator: the :class:`~nord.evaluators.base.Evaluator` every evaluating rank calls;
            with groups of several ranks, one that trains data-parallel (it needs ``serve``
            and ``release``: ``DistributedEvaluator``). None on a dedicated rank 0, which
            never evaluates.
        env: a started :class:`~nord.parallel.Environment` (or any object with ``comm``,
            ``rank``, ``size``, ``group``, ``n_groups`` and ``group_roots``). None uses
            ``COMM_WORLD`` with one group per rank (rank 0 dispatches, ranks 1.. evaluate), or
            a single process when not launched by an MPI launcher.
        space: the search space, given on every rank alike: workers then decode genomes
            themselves, and only descriptors the engine decoded anyway are sent. None: every
            task carries its descriptor.
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

    def __init__(self, evaluator, env=None, space=None, poll_interval: float = 0.00025,
                 prefetch: int = 0):
        if poll_interval < 0:
            raise ConfigurationError(f"poll_interval must be >= 0 seconds; got {poll_interval!r}")
        prefetch = check_int(prefetch, "prefetch", 0)
        self.evaluator = evaluator
        self.env = env
        self.space = space
        self.poll_interval = poll_interval
        self.prefetch = prefetch
        self._active = False
        self._requests: List[Any] = []

    # --- set-up --------------------------------------------------------------------------
    def start(self) -> None:
        """Work out this rank's role and duplicate the world communicator (collective).

        ``run_search`` calls it on every rank; after the search (``close`` on rank 0, the end of
        ``serve`` elsewhere) the executor can start again for another search in the same job.

        Raises:
            ConfigurationError: groups of several ranks with an evaluator that cannot train
                data-parallel (raised on every rank alike).
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
        layout = getattr(view, "group_layout", ())
        # group root -> the world ranks that evaluate its candidates (all must survive a stop)
        self._evaluators = {members[0]: tuple(members) for members in layout}
        largest = max((len(members) for members in layout), default=1)
        # what the training groups hold, recorded: a rank 0 that only dispatches has none
        self._group_size = largest if layout else (None if group is None else group.size)
        if largest > 1 and not (hasattr(self.evaluator, "serve") or group is None):
            raise ConfigurationError(
                f"groups of {largest} ranks train each network together, which needs a "
                "data-parallel evaluator (DistributedEvaluator); got "
                f"{type(self.evaluator).__name__}. Use group_size=1, or a DistributedEvaluator")
        self._world = comm.Dup() if comm is not None and self.size > 1 else None
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

    # --- the engine's side (rank 0) -----------------------------------------------------
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
        self._send(task.message(with_descriptor=self.space is None), worker, TAG_TASK)

    def wait(self) -> Completion:
        if self._local:
            task = self._local_tasks[0]   # in flight until it is done (see survivors)
            self._local_report(task, 0)
            done = run_task(self.evaluator, task, 0)
            self._local_tasks.popleft()
            return done
        MPI = import_mpi()
        status = MPI.Status()
        while True:   # finished epochs arrive before their task's result, in order
            wait_for_message(self._world, MPI.ANY_SOURCE, MPI.ANY_TAG, status,
                             self.poll_interval)
            worker, tag = status.Get_source(), status.Get_tag()
            message = self._world.recv(source=worker, tag=tag)
            if tag == TAG_RESULT:
                break
            if tag == TAG_EPOCH and self.on_epoch is not None:
                number, record = message
                self.on_epoch(number, EpochRecord.from_dict(record), worker)
        number, result, started, ended = message
        expected = self._outstanding[worker].popleft()
        if number != expected:  # a protocol bug, never a user error
            raise RuntimeError(f"rank {worker} returned candidate {number}, expected {expected}")
        return Completion(number, EvaluationResult.from_dict(result), worker, started, ended)

    def survivors(self) -> List[int]:
        """The candidates in flight whose every evaluating rank said it got the SIGTERM too
        (waiting up to ``SURVIVOR_WAIT`` seconds): mpirun ends every rank so when one dies,
        and only the candidates of a rank that said nothing may have killed it.

        A candidate trained by a group of ranks (a group worker and its members, or rank 0
        with every other rank) is spared only when all of them spoke: any one of them may be
        the one that died. Ctrl-C reaches only mpirun, which ends the ranks the same way, so
        this is also what tells a user's stop from a killed rank."""
        if self._local:
            if self.size == 1 or self._world is None:
                return [task.number for task in self._local_tasks]
            in_flight = {0: [task.number for task in self._local_tasks]}
            needed = {0: set(self._group.members) - {0}}
        else:
            in_flight = {rank: list(numbers) for rank, numbers in self._outstanding.items()
                         if numbers}
            needed = {rank: set(self._evaluators.get(rank, (rank,))) for rank in in_flight}
        MPI = import_mpi()
        status = MPI.Status()
        heard: Set[int] = set()
        deadline = time.monotonic() + SURVIVOR_WAIT
        while (any(not ranks <= heard for ranks in needed.values())
               and time.monotonic() < deadline):
            if not self._world.Iprobe(source=MPI.ANY_SOURCE, tag=TAG_SURVIVED, status=status):
                time.sleep(0.005)
                continue
            heard.add(status.Get_source())
            self._world.recv(source=status.Get_source(), tag=TAG_SURVIVED)
        spared: List[int] = []
        silent: Set[int] = set()
        for worker, numbers in in_flight.items():
            if needed[worker] <= heard:
                spared.extend(numbers)
            else:
                silent |= needed[worker] - heard
        if silent:
            logger.info("ranks %s did not say they survived the stop: the candidates they "
                        "trained count as having killed their process", sorted(silent))
        return spared

    def close(self, failed: bool = False) -> None:
        """Stop every worker (rank 0) and the members of rank 0's group; free the communicator.

        After a failure (``failed``) the stop messages are sent but not waited for, and
        rank 0's group is not released: the other ranks may be gone or failing too, and a run
        that was interrupted must end before its launcher kills it.
        """
        if not self._active:
            return
        if self.rank == 0:
            if self._world is not None and not self._local:
                for worker in self.worker_ranks:
                    self._send(None, worker, TAG_STOP)
            if not failed:
                self._release_members()
        self._free(wait=not failed)

    def _release_members(self) -> None:
        """A group root lets its group's members leave the evaluator's serve() loop."""
        if self._group is not None and self._group.size > 1:
            self.evaluator.release()

    def _send(self, message: Any, dest: int, tag: int) -> None:
        """Send without blocking: Open MPI's blocking send of a medium-sized message (a few
        hundred bytes, as a descriptor) waits, spinning, until the receiver takes it, which
        would stall the dispatcher while a worker is busy. The request is completed later."""
        self._requests.append(self._world.isend(message, dest=dest, tag=tag))
        if len(self._requests) > 64:
            self._requests = [request for request in self._requests if not request.Test()]

    def _free(self, wait: bool = True) -> None:
        if self._requests and wait:
            import_mpi().Request.Waitall(self._requests)
        self._requests = []
        if self._world is not None and wait:
            self._world.Free()
        self._world = None
        self._active = False

    def describe(self) -> Dict[str, Any]:
        return {"ranks": self.size, "groups": self.n_groups, "workers": self.n_workers,
                "worker_ranks": list(self.worker_ranks),
                "group_size": self._group_size,
                "dispatcher_evaluates": self._local, "prefetch": self.prefetch}

    # --- the workers' side ------------------------------------------------------------
    def serve(self) -> None:
        """Evaluate tasks until rank 0 says stop (group roots), or follow the group root
        through the evaluator (group members)."""
        self._said_survived = threading.Lock()
        with self._listening():
            if self.role == "worker":
                self._serve_worker()
            elif self._group is not None and self._group.size > 1:
                try:
                    self.evaluator.serve()
                except KeyboardInterrupt:   # this member lived to be stopped: see survivors
                    self._say_survived()
                    raise
        self._free()

    def _listening(self):
        """Say that this rank survived from a thread as soon as the stop signal comes: a rank
        blocked in its group's collective (a member that stopped first leaves it waiting)
        cannot run Python's handler until it is killed. Only where MPI may be called from
        any thread (``MPI_THREAD_MULTIPLE``, mpi4py's default)."""
        MPI = import_mpi()
        if self._world is None or MPI.Query_thread() != MPI.THREAD_MULTIPLE:
            return contextlib.nullcontext()
        return on_stop_signal(self._say_survived)

    def _serve_worker(self) -> None:
        MPI = import_mpi()
        status = MPI.Status()
        served = 0
        try:
            while True:
                wait_for_message(self._world, 0, MPI.ANY_TAG, status, self.poll_interval)
                tag = status.Get_tag()
                message = self._world.recv(source=0, tag=tag)
                if tag == TAG_STOP:
                    break
                done = self._evaluate(message)
                self._send((done.number, done.result.to_dict(), done.started, done.ended),
                           0, TAG_RESULT)
                served += 1
        except KeyboardInterrupt:   # RunInterrupted: this rank lived to be stopped
            self._say_survived()
            raise
        self._release_members()
        logger.debug("rank %d evaluated %d candidates", self.rank, served)

    def _say_survived(self) -> None:
        """Tell rank 0 that this rank got the stop signal alive (see :meth:`survivors`),
        waiting a little for the message to leave: rank 0 may be gone already. Said once."""
        if not self._said_survived.acquire(blocking=False):
            return
        try:
            request = self._world.isend(self.rank, dest=0, tag=TAG_SURVIVED)
            deadline = time.monotonic() + SURVIVOR_WAIT
            while not request.Test() and time.monotonic() < deadline:
                time.sleep(0.005)
        except Exception:  # noqa: BLE001 - the stop matters more than the message
            logger.debug("could not tell rank 0 that rank %d survived", self.rank, exc_info=True)

    def _evaluate(self, message) -> Completion:
        try:
            task = Task.from_message(message, self.space)
        except Exception as error:  # noqa: BLE001 - a bad message is a failed candidate
            now = time.time()
            return Completion(message[0], EvaluationResult.failure(
                f"{type(error).__name__}: {error}"), self.rank, now, now)
        task.report = lambda record, number=task.number: self._send(
            (number, record.to_dict()), 0, TAG_EPOCH)
        return run_task(self.evaluator, task, self.rank)
