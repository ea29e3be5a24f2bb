"""ProcessExecutor: N worker processes on this machine evaluate; this process runs the engine.

A single machine runs several candidates at once without MPI, several per GPU if asked::

    from functools import partial
    from nord.evaluators import LocalEvaluator
    from nord.search import ProcessExecutor, run_search

    executor = ProcessExecutor(partial(LocalEvaluator, epochs=2), workers=4,
                               devices=["cuda:0"] * 4)     # four workers on one GPU
    summary = run_search(algorithm, executor=executor, budget=100, journal="run.db",
                         mode="async")

Each worker is a fresh interpreter (the ``spawn`` start method: forking a process that holds
CUDA state is unsafe) that builds its evaluator once with ``make_evaluator(device=...)`` (a
picklable callable: a class, a module-level function, or a ``functools.partial`` of one),
then evaluates the candidates it is sent. In sync and async mode it behaves as the MPI
executor does: one task per worker, results told by the engine in its own order.

* GPUs: workers take the visible GPUs round robin (``nord.parallel.placement``), several per
  GPU allowed; with ``mps`` they share them under CUDA MPS (``nord.parallel.mps``).
* Memory: with ``memory_need``, a candidate starts on a GPU only if its estimate fits beside
  those running there (``nord.parallel.admission``); one that runs out of GPU memory next to
  others is tried once more alone before its failure counts.
* A worker killed (``kill -9``, the out-of-memory killer) is a failed result for the
  candidate it held, and a new worker takes its place; workers die with this process.

Details (the rule for ``workers``, MPS, what was measured where): docs/executors.md.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import wait as wait_for_any
from typing import Any, Callable, Deque, Dict, List, Optional, Set

from nord.checks import check_int
from nord.errors import ConfigurationError, DiskFullError, NordError
from nord.evaluators.result import EpochRecord, EvaluationResult
from nord.parallel.admission import HEADROOM, admits, check_headroom
from nord.parallel.mps import (MPSDaemon, check_mps_setting, control_program, daemon_running,
                               sharing_mode)
from nord.search.executors.base import Completion, Executor, Task, run_task

__all__ = ["ProcessExecutor", "OUT_OF_MEMORY", "START_METHOD"]

logger = logging.getLogger(__name__)

START_METHOD = "spawn"
"""How workers start: a fresh interpreter (fork after torch or CUDA started is unsafe)."""
OUT_OF_MEMORY = "OutOfMemoryError"
"""The name of the exception (``torch.cuda.OutOfMemoryError``) whose failure is retried alone."""
READY_TIMEOUT = 300.0
"""Seconds a new worker may take to import torch, load the data and build its evaluator."""


# --- the worker's side ----------------------------------------------------------------------
def _watch_parent(parent: int) -> None:
    """End this worker when the engine's process is gone, however it ended: the kernel's
    death signal on Linux, and a thread that polls the parent elsewhere (and covers the
    moment before the signal was set)."""
    if sys.platform.startswith("linux"):
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG

    def poll() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    if os.getppid() != parent:
        os._exit(1)
    threading.Thread(target=poll, name="nord-parent-watch", daemon=True).start()


def _serve(connection, make_evaluator: Callable, device: str, rank: int,
           environment: Dict[str, str], threads: Optional[int], parent: int) -> None:
    """A worker process: build the evaluator, say ready, evaluate until told to stop."""
    os.environ.update(environment)          # before CUDA starts (MPS's pipe directory)
    _watch_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)         # the engine's process handles Ctrl-C
    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(128 + signum))
    try:
        if threads is not None:
            import torch
            torch.set_num_threads(threads)
        evaluator = make_evaluator(device=device)
        free = _free_gpu_memory(device)
    except Exception as error:  # noqa: BLE001 - the engine's process says why, and stops
        connection.send(("broken", f"{type(error).__name__}: {error}"))
        return
    connection.send(("ready", os.getpid(), free))
    try:
        while True:
            message = connection.recv()
            if message is None:
                return
            task = Task.from_message(message)
            task.report = lambda record, number=task.number: connection.send(
                ("epoch", number, record.to_dict()))
            try:
                done = run_task(evaluator, task, rank)
            except DiskFullError as error:   # the run's to handle: the engine stops it
                connection.send(("disk full", str(error)))
                return
            connection.send(("result", done.number, done.result.to_dict(), done.started,
                             done.ended))
    except (EOFError, OSError):   # the engine's process is gone: nobody wants the result
        return


def _free_gpu_memory(device: str) -> Optional[int]:
    """Bytes free on the worker's GPU once its own context exists; None off a GPU."""
    if not device.startswith("cuda"):
        return None
    import torch
    free, _ = torch.cuda.mem_get_info(torch.device(device))
    return int(free)


# --- the engine's side ----------------------------------------------------------------------
@dataclass
class _Worker:
    rank: int
    device: str
    process: Any
    connection: Any
    ready: bool = False
    task: Optional[Task] = None
    shared: bool = False        # another candidate ran on its device beside this task
    pid: Optional[int] = None


@dataclass
class _Devices:
    """Per device: its free memory when the workers started, and a lone retry's claim."""

    capacity: Dict[str, Optional[int]] = field(default_factory=dict)
    alone: Dict[str, int] = field(default_factory=dict)   # device -> candidate alone there


class ProcessExecutor(Executor):
    """Evaluate on ``workers`` worker processes of this machine; this process runs the engine.

    Args:
        make_evaluator: called once in each worker as ``make_evaluator(device=...)`` and
            returning its :class:`~nord.evaluators.base.Evaluator`; it must pickle (a class,
            a module-level function, or a ``functools.partial`` of one).
        workers: worker processes (the rule for how many: :func:`check_worker_count` in
            ``nord.parallel.placement``; not enforced here, so tests may oversubscribe).
        devices: each worker's device, e.g. from ``placement.worker_devices``; default all
            on the CPU.
        evaluator: an evaluator like the workers', in this process, for the journal's
            description and the scheduler's checks (never evaluates here). None: none.
        memory_need: ``memory_need(descriptor)`` -> bytes or None, the admission rule's input
            (``LocalEvaluator.memory_need``); None admits every candidate a worker is free for.
        headroom: the share of a GPU's free memory not handed out by the admission rule.
        device_memory: bytes each device offers the admission rule, by device name, e.g. to leave
            room for other users of a GPU; default: the free memory each worker finds on its
            GPU once its CUDA context exists (the smallest figure of a GPU's workers), and no
            limit on the CPU.
        threads: torch CPU threads in each worker (None: the evaluator's or torch's choice).
        mps: 'auto', 'on' or 'off' (``nord.parallel.mps``); decided in ``start``.
    """

    def __init__(self, make_evaluator: Callable, workers: int = 2,
                 devices: Optional[List[str]] = None, evaluator=None,
                 memory_need: Optional[Callable[[Any], Optional[int]]] = None,
                 headroom: float = HEADROOM, threads: Optional[int] = None, mps: str = "auto",
                 device_memory: Optional[Dict[str, int]] = None):
        workers = check_int(workers, "workers", 1)
        devices = list(devices) if devices is not None else ["cpu"] * workers
        if len(devices) != workers:
            raise ConfigurationError(
                f"devices names one device per worker: {workers} workers, {len(devices)} "
                f"devices given ({devices})")
        if threads is not None:
            check_int(threads, "threads", 1)
        try:
            pickle.dumps(make_evaluator)
        except Exception as error:  # noqa: BLE001 - pickle raises several kinds
            raise ConfigurationError(
                f"make_evaluator goes to each worker process, so it must pickle; "
                f"{make_evaluator!r:.80} does not ({type(error).__name__}: {error}). Give a "
                "class, a module-level function or a functools.partial of one, not a lambda "
                "or a function defined inside another") from None
        self.make_evaluator = make_evaluator
        self.workers = workers
        self.devices = devices
        self.evaluator = evaluator
        self.memory_need = memory_need
        self.headroom = check_headroom(headroom)
        self.threads = threads
        self.mps = check_mps_setting(mps)
        self.device_memory = dict(device_memory or {})
        for device, size in self.device_memory.items():
            check_int(size, f"device_memory of {device}", 1, rule="a number of bytes >= 1")
        self.sharing: Optional[str] = None
        self._pool: List[_Worker] = []
        self._held: Deque[Task] = deque()
        self._needs: Dict[int, Optional[int]] = {}
        self._lone: Set[int] = set()           # candidates to retry alone on their device
        self._retried: Set[int] = set()
        self._state = _Devices()
        self._daemon: Optional[MPSDaemon] = None
        self._context = None
        self.replaced = 0                      # workers that died and were replaced

    # --- set-up and tear-down --------------------------------------------------------------
    def start(self) -> None:
        """Decide how the device is shared (MPS), start the workers and wait until each has
        built its evaluator.

        Raises:
            ConfigurationError: ``mps='on'`` where MPS cannot run.
            NordError: a worker could not build its evaluator (its error is named).
        """
        if self._pool:
            return
        gpu = any(device.startswith("cuda") for device in self.devices)
        per_gpu = max((self.devices.count(device) for device in set(self.devices)), default=1)
        control = control_program() if gpu else None
        self.sharing, start_daemon = sharing_mode(
            self.mps, "cuda" if gpu else "cpu", per_gpu,
            daemon_running(control=control) if gpu else False, control is not None)
        if start_daemon:
            self._daemon = MPSDaemon(control).start()
        self._state.capacity = dict(self.device_memory)
        self._context = multiprocessing.get_context(START_METHOD)
        try:
            self._pool = [self._spawn(rank, device)
                          for rank, device in enumerate(self.devices, start=1)]
            deadline = time.monotonic() + READY_TIMEOUT
            while not all(worker.ready for worker in self._pool):
                self._receive(deadline - time.monotonic(), starting=True)
        except BaseException:
            self._stop_all(wait=False)
            raise
        logger.debug("%d worker processes ready (%s)", self.workers, self.sharing)

    def _spawn(self, rank: int, device: str) -> _Worker:
        ours, theirs = self._context.Pipe()
        environment = self._daemon.environment if self._daemon is not None else {}
        process = self._context.Process(
            target=_serve, name=f"nord-worker-{rank}", daemon=True,
            args=(theirs, self.make_evaluator, device, rank, environment, self.threads,
                  os.getpid()))
        process.start()
        theirs.close()
        return _Worker(rank, device, process, ours)

    def close(self, failed: bool = False) -> None:
        """Stop the workers (at once after a failure: they may be training for minutes) and
        the MPS daemon this executor started."""
        self._stop_all(wait=not failed)

    def _stop_all(self, wait: bool) -> None:
        pool, self._pool = self._pool, []
        for worker in pool:
            if wait and worker.task is None and worker.process.is_alive():
                try:
                    worker.connection.send(None)
                except OSError:
                    pass
        for worker in pool:
            if wait and worker.task is None:
                worker.process.join(timeout=10)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(timeout=10)
            worker.connection.close()
        self._held.clear()
        if self._daemon is not None:
            self._daemon.stop()
            self._daemon = None

    # --- the engine's side -----------------------------------------------------------------
    @property
    def n_workers(self) -> int:
        return self.workers

    @property
    def in_flight(self) -> int:
        return len(self._held) + sum(worker.task is not None for worker in self._pool)

    def submit(self, task: Task) -> None:
        self._held.append(task)
        self._admit()

    def wait(self) -> Completion:
        while True:
            done = self._receive(None)
            if done is not None:
                self._admit()
                return done

    def describe(self) -> Dict[str, Any]:
        return {"ranks": 1, "groups": self.workers, "workers": self.workers,
                "worker_ranks": list(range(1, self.workers + 1)), "executor": "processes",
                "devices": list(self.devices), "sharing": self.sharing}

    # --- admission ---------------------------------------------------------------------
    def _admit(self) -> None:
        """Start every held task that an idle worker may take, in the order submitted."""
        for task in list(self._held):
            worker = self._worker_for(task)
            if worker is None:
                continue
            self._held.remove(task)
            beside = [other for other in self._pool
                      if other.task is not None and other.device == worker.device]
            for other in beside:
                other.shared = True
            worker.task, worker.shared = task, bool(beside)
            if task.number in self._lone:
                self._state.alone[worker.device] = task.number
            worker.connection.send(task.message(with_descriptor=True))

    def _worker_for(self, task: Task) -> Optional[_Worker]:
        idle = [worker for worker in self._pool if worker.ready and worker.task is None]
        if not idle:
            return None
        lone = task.number in self._lone
        need = self._need(task) if not lone else None
        for worker in sorted(idle, key=lambda w: self._load(w.device)):
            device = worker.device
            if device in self._state.alone:
                continue
            running = [self._needs.get(other.task.number) for other in self._pool
                       if other.task is not None and other.device == device]
            if lone:
                if not running:
                    return worker
            elif admits(need, running, self._state.capacity.get(device), self.headroom):
                return worker
        return None

    def _load(self, device: str) -> int:
        return sum(worker.task is not None for worker in self._pool if worker.device == device)

    def _need(self, task: Task) -> Optional[int]:
        if task.number not in self._needs:
            need = None
            if self.memory_need is not None and any(
                    capacity is not None for capacity in self._state.capacity.values()):
                try:
                    need = self.memory_need(task.descriptor)
                except Exception as error:  # noqa: BLE001 - the worker's evaluation says why
                    logger.debug("no memory estimate for candidate %d: %s", task.number, error)
            self._needs[task.number] = need
        return self._needs[task.number]

    # --- messages and deaths -----------------------------------------------------------
    def _receive(self, timeout: Optional[float], starting: bool = False) -> Optional[Completion]:
        """Handle one message or one death; a completion when a task ended."""
        if timeout is not None and timeout <= 0:
            raise NordError(f"the worker processes were not ready after {READY_TIMEOUT:g} s")
        if not starting and not any(worker.task is not None for worker in self._pool) \
                and all(worker.ready for worker in self._pool):
            raise NordError("internal error: waiting with no candidate on any worker")
        by_handle: Dict[Any, _Worker] = {}
        for worker in self._pool:
            by_handle[worker.connection] = worker
            by_handle[worker.process.sentinel] = worker
        handles = wait_for_any(list(by_handle), timeout)
        if not handles:
            return None
        worker = by_handle[handles[0]]
        if worker.connection.poll():   # messages sent before a death come first
            try:
                message = worker.connection.recv()
            except (EOFError, OSError):
                return self._died(worker, starting)
            return self._handle(worker, message, starting)
        return self._died(worker, starting)

    def _handle(self, worker: _Worker, message, starting: bool) -> Optional[Completion]:
        kind = message[0]
        if kind == "ready":
            _, worker.pid, free = message
            worker.ready = True
            known = self._state.capacity.get(worker.device)
            if free is not None and worker.device not in self.device_memory:
                # the last worker to start sees every context on its GPU
                self._state.capacity[worker.device] = free if known is None else min(known, free)
            if not starting:
                self._admit()
            return None
        if kind == "disk full":
            raise DiskFullError(f"worker {worker.rank} ({worker.device}): {message[1]}")
        if kind == "broken":
            raise NordError(f"worker {worker.rank} ({worker.device}) could not build its "
                            f"evaluator: {message[1]}")
        if kind == "epoch":
            _, number, record = message
            if self.on_epoch is not None:
                self.on_epoch(number, EpochRecord.from_dict(record), worker.rank)
            return None
        _, number, result, started, ended = message
        task = self._finish(worker, number)
        result = EvaluationResult.from_dict(result)
        if self._retry_alone(task, result, worker):
            return None
        return Completion(number, result, worker.rank, started, ended)

    def _finish(self, worker: _Worker, number: int) -> Task:
        task, worker.task = worker.task, None
        if task is None or task.number != number:   # a protocol bug, never a user error
            raise RuntimeError(f"worker {worker.rank} returned candidate {number}, expected "
                               f"{None if task is None else task.number}")
        if self._state.alone.get(worker.device) == number:
            del self._state.alone[worker.device]
        self._lone.discard(number)
        return task

    def _retry_alone(self, task: Task, result: EvaluationResult, worker: _Worker) -> bool:
        """A candidate that ran out of GPU memory beside others goes back to the front of
        the queue, to run alone on a device once; True when it does."""
        if (result.status == "ok" or not worker.shared or task.number in self._retried
                or not (result.error or "").startswith(OUT_OF_MEMORY)):
            return False
        logger.info("candidate %d ran out of memory beside others on %s; it is tried once more "
                    "alone", task.number, worker.device)
        self._retried.add(task.number)
        self._lone.add(task.number)
        self._held.appendleft(task)
        self._admit()
        return True

    def _died(self, worker: _Worker, starting: bool) -> Optional[Completion]:
        """A worker process ended: its candidate, if any, failed; a new worker replaces it."""
        worker.process.join(timeout=5)
        code = worker.process.exitcode
        worker.connection.close()
        how = (f"was killed by {signal.Signals(-code).name}" if code is not None and code < 0
               and -code in signal.valid_signals() else f"exited with code {code}")
        if not worker.ready:
            raise NordError(f"worker {worker.rank} ({worker.device}) {how} before it was ready; "
                            "run one candidate without --workers to see its error")
        logger.warning("worker %d (pid %s) %s", worker.rank, worker.pid, how)
        index = self._pool.index(worker)
        self._pool[index] = self._spawn(worker.rank, worker.device)
        self.replaced += 1
        if worker.task is None:
            return None
        task = worker.task
        if self._state.alone.get(worker.device) == task.number:
            del self._state.alone[worker.device]
        self._lone.discard(task.number)
        now = time.time()
        return Completion(task.number, EvaluationResult.failure(
            f"its worker process (pid {worker.pid}, {worker.device}) {how} while evaluating it, "
            "likely by the out-of-memory killer: the network may need more memory than the "
            "machine has"), worker.rank, now, now)
