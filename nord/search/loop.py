"""run_search: the one search loop, serial or over MPI, synchronous or asynchronous, resumable.

The loop asks the algorithm for candidates, decodes each genome to a descriptor, has an
executor evaluate it, tells the algorithm the result and records it in the journal. Who
evaluates, and where, is the executor's business::

    from nord.search.loop import run_search
    from nord.search.random_search import RandomSearch

    algorithm = RandomSearch(space, seed=0)
    summary = run_search(algorithm, evaluator, budget=100, journal="runs/random.db")
    print(summary.best_result.accuracy, summary.evaluations, summary.wall_time)

Over MPI, every rank calls the same function with an :class:`~nord.search.dispatch.MPIExecutor`;
rank 0 runs the loop and the algorithm and returns the summary, the other ranks evaluate
what they are sent and return None::

    with Environment(group_size=1) as env:
        executor = MPIExecutor(evaluator, env)
        summary = run_search(algorithm, budget=100, journal="run.db", executor=executor,
                             mode="async", resume=args.resume)

**Budget.** ``budget`` counts the results the algorithm is told: trained candidates,
cached ones (an architecture already evaluated in the run is not trained again; its earlier
result is reused) and failed ones (a genome that does not decode, a network that does not
train) alike. The loop never asks for more candidates than the budget has room for, so a run
ends with exactly ``budget`` evaluations unless the algorithm finishes first.

**Modes.**

* ``'sync'`` (generations): ask until the algorithm returns None (a generation barrier) or
  the batch holds ``batch_size`` candidates (default: the executor's number of workers),
  evaluate the batch, then tell every result **in candidate order**, whichever worker
  finished first. A seeded synchronous run therefore gives the same journal (times and
  worker ranks aside) for any number of workers, as long as ``batch_size`` is the same, or
  the algorithm's proposals within a generation do not depend on results told within it
  (true of generational algorithms and random search).
* ``'async'`` (steady state): the algorithm is told a result as soon as it comes, and the
  worker that finished gets the next candidate at once (with
  ``MPIExecutor(prefetch=1)`` it already holds it); there is no barrier, so no worker waits
  for the slowest network. The order of results depends on timing.

**Journal.** Proposals and results are committed together, once per result, right after the
next tasks are handed out (so workers never wait for the disk); the file is therefore always
a consistent prefix of the run, and a crash loses only what was in flight.

**Resume.** ``resume=True`` with a journal that holds a run re-creates the run's state: the
algorithm (built again with the same seed) is asked for its candidates at exactly the points
recorded in the journal and told the journaled results in the journaled order; candidates
whose result is journaled are not evaluated again and not recorded twice; candidates that
were in flight when the run stopped are evaluated again. Then the run goes on.

* Synchronous runs: a run killed at any point and resumed (any number of times, even after
  ``kill -9`` of ``mpirun``) ends with the same journal, times aside, as an uninterrupted
  run with the same seed and batch size.
* Asynchronous runs: after resuming, the algorithm is in exactly the state it was in when
  the run stopped (same proposals, same results in the same order), every finished
  evaluation is kept once and none is repeated, and the candidates in flight are evaluated
  again with the same genomes. What follows depends on timing, as in any asynchronous run
  (with a single worker it is again identical to an uninterrupted run).

The algorithm must be deterministic given its seed and must not change state when its
``ask`` returns None; a replay that gets a different genome than the journal's raises
:class:`~nord.errors.JournalError`.
"""
from __future__ import annotations

import json
import logging
import math
import os
import time
import traceback
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Union

from nord.descriptors import NeuralDescriptor
from nord.errors import ConfigurationError, JournalError, NordError
from nord.evaluators.result import EvaluationResult
from nord.journal import Journal, evaluation_result
from nord.search.algorithm import Candidate, SearchAlgorithm

__all__ = ["run_search", "SearchSummary", "SearchProgress", "Task", "Completion", "Executor",
           "SerialExecutor", "MODES"]

logger = logging.getLogger(__name__)

MODES = ("sync", "async")


# --- executors ------------------------------------------------------------------------------
@dataclass
class Task:
    """One descriptor to evaluate.

    Attributes:
        number: the candidate's number (``Candidate.number``).
        descriptor: the decoded descriptor.
        descriptor_json: its JSON (what is sent to other ranks).
    """

    number: int
    descriptor: NeuralDescriptor
    descriptor_json: str


@dataclass
class Completion:
    """An evaluated task: its result, the world rank that evaluated it, wall-clock times."""

    number: int
    result: EvaluationResult
    worker_rank: int
    started: float
    ended: float


class Executor:
    """Where evaluations run. The loop submits tasks while there are free slots and waits for
    completions.

    Subclasses implement ``n_workers``, ``submit``, ``wait`` and ``in_flight``, and may hold
    more tasks than workers (``capacity``, e.g. one in reserve per worker); ``start`` and
    ``close`` bracket a search (``close`` must release every worker, also after an error).
    """

    #: False on ranks that do not run the loop (MPI workers): run_search calls ``serve`` there.
    is_dispatcher = True

    @property
    def n_workers(self) -> int:
        raise NotImplementedError

    @property
    def in_flight(self) -> int:
        raise NotImplementedError

    @property
    def capacity(self) -> int:
        """How many tasks it takes at once (default: one per worker)."""
        return self.n_workers

    @property
    def free_slots(self) -> int:
        return self.capacity - self.in_flight

    def start(self) -> None:
        """Prepare for a search (MPI: set up communicators). Called once by ``run_search``."""

    def submit(self, task: Task) -> None:
        """Start evaluating ``task`` (only called when ``free_slots > 0``)."""
        raise NotImplementedError

    def wait(self) -> Completion:
        """Block until a submitted task is evaluated; return it."""
        raise NotImplementedError

    def close(self) -> None:
        """End the search: release the workers."""

    def serve(self) -> None:
        """Evaluate tasks until told to stop (ranks that do not run the loop)."""
        raise NotImplementedError(f"{type(self).__name__} runs no workers of its own")

    def describe(self) -> Dict[str, Any]:
        """Ranks, groups and workers, for the journal."""
        return {"ranks": 1, "groups": 1, "workers": self.n_workers, "worker_ranks": [0]}


def evaluate_task(evaluator, descriptor: NeuralDescriptor, rank: int, number: int) -> Completion:
    """Evaluate one descriptor in this process; the executors' common step."""
    started = time.time()
    result = evaluator.descriptor_evaluate(descriptor)
    return Completion(number, result, rank, started, time.time())


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

    def wait(self) -> Completion:
        task = self._queue.popleft()
        return evaluate_task(self.evaluator, task.descriptor, 0, task.number)

    def describe(self) -> Dict[str, Any]:
        return {"ranks": 1, "groups": 1, "workers": 1, "worker_ranks": [0]}


# --- progress and summary -------------------------------------------------------------------
@dataclass
class SearchProgress:
    """What the ``progress`` callback is given after each told result (rank 0 only).

    Attributes:
        evaluations: results told so far (replayed ones included).
        budget: the run's budget.
        generation: the generation of the result just told.
        best_accuracy: best search accuracy so far (NaN while none succeeded).
        elapsed: seconds since this call of ``run_search`` started.
        remaining: estimated seconds left, from this session's rate (NaN before the first).
        last: the journal row of the result just told.
    """

    evaluations: int
    budget: int
    generation: int
    best_accuracy: float
    elapsed: float
    remaining: float
    last: Dict[str, Any]


@dataclass
class SearchSummary:
    """What ``run_search`` returns on the rank that runs the loop.

    Attributes:
        best: the best candidate (lowest fitness among successful results), or None.
        best_result: its result.
        evaluations: results told, replayed from the journal included: the budget's unit.
        trained: evaluations run by the executor in this session.
        cached: results reused for an architecture evaluated earlier in the run.
        failed: failed results (decode errors included).
        replayed: results taken from the journal when resuming.
        wall_time: seconds this session took.
        busy_time: seconds workers spent evaluating in this session.
        workers: the executor's number of workers.
        mode: 'sync' or 'async'.
        journal: the journal's path, or None.
    """

    best: Optional[Candidate]
    best_result: Optional[EvaluationResult]
    evaluations: int
    trained: int
    cached: int
    failed: int
    replayed: int
    wall_time: float
    busy_time: float
    workers: int
    mode: str
    journal: Optional[str] = None

    @property
    def utilisation(self) -> float:
        """Busy time / (workers x wall time) of this session."""
        if self.wall_time <= 0 or self.workers <= 0:
            return math.nan
        return self.busy_time / (self.workers * self.wall_time)


# --- the loop -------------------------------------------------------------------------------
@dataclass
class _Outcome:
    """A result ready to be told, with what the journal records about it."""

    candidate: Candidate
    result: EvaluationResult
    descriptor_json: Optional[str] = None
    worker_rank: Optional[int] = None
    cached_from: Optional[int] = None
    started: Optional[float] = None
    ended: Optional[float] = None


@dataclass
class _Waiting:
    """A candidate whose architecture is being evaluated for another candidate."""

    candidate: Candidate
    descriptor_json: str


class _Search:
    """The state of one call of run_search on the rank that runs the loop."""

    def __init__(self, algorithm: SearchAlgorithm, executor: Executor, journal: Optional[Journal],
                 budget: int, mode: str, batch_size: int,
                 progress: Optional[Callable[[SearchProgress], None]]):
        self.algorithm = algorithm
        self.space = algorithm.space
        self.executor = executor
        self.journal = journal
        self.budget = budget
        self.mode = mode
        self.batch_size = batch_size
        self.progress = progress
        self.told = 0
        self.asked = 0
        self.pending: Dict[int, Candidate] = {}        # asked, not yet told
        self.outcomes: Dict[int, _Outcome] = {}        # evaluated, not yet told (sync)
        self.sequence: Dict[int, int] = {}             # candidate -> its place in the tell order
        self.queue: Deque[Task] = deque()              # decoded, waiting for a worker
        self.cache: Dict[str, _Outcome] = {}           # descriptor hash -> first outcome
        self.evaluating: Dict[str, int] = {}           # hash -> candidate being evaluated
        self.waiting: Dict[str, List[_Waiting]] = {}   # hash -> candidates waiting for it
        self.tasks: Dict[int, Task] = {}
        self.unwritten_candidates: List[Dict[str, Any]] = []   # journal rows not yet committed
        self.unwritten_evaluations: List[Dict[str, Any]] = []
        self.trained = self.cached = self.failed = self.replayed = 0
        self.busy_time = 0.0
        self.started = time.monotonic()

    # --- replay -----------------------------------------------------------------------
    def replay(self) -> None:
        """Rebuild the algorithm's state from the journal (see the module docstring)."""
        asks = self.journal.candidates()
        rows = self.journal.evaluations()
        by_sequence = {row["sequence"]: row for row in rows}
        index = 0
        while True:
            while index < len(asks) and asks[index]["told_before"] <= self.told:
                self._replay_ask(asks[index])
                index += 1
            row = by_sequence.get(self.told)
            if row is None or row["candidate"] not in self.pending:
                break
            candidate = self.pending.pop(row["candidate"])
            self.algorithm.tell(candidate, evaluation_result(row))
            self._count(row, replayed=True)
            self.told += 1
        if index < len(asks):
            raise JournalError(
                f"'{self.journal.path}' is inconsistent: candidate {asks[index]['candidate']} was "
                f"proposed after {asks[index]['told_before']} results, but only {self.told} "
                "results can be replayed in order; the file was edited or written by two runs")
        for row in rows:
            number = row["candidate"]
            if row["descriptor_hash"] and not row["cached"] and row["descriptor_hash"] not in self.cache:
                self.cache[row["descriptor_hash"]] = self._outcome_from_row(row)
            if number in self.pending:  # journaled but not told: a synchronous batch in progress
                outcome = self._outcome_from_row(row)
                self.outcomes[number] = outcome
                self.sequence[number] = row["sequence"]
                self._count(row, replayed=True)
            elif row["sequence"] >= self.told:
                raise JournalError(
                    f"'{self.journal.path}' is inconsistent: evaluation {row['sequence']} "
                    f"(candidate {number}) cannot be replayed")
        if self.pending and self.mode == "sync":
            first = min(self.pending)
            for offset, number in enumerate(sorted(self.pending)):
                self.sequence.setdefault(number, self.told + offset)
            logger.info("resuming inside a batch: candidates %d..%d, %d of them already evaluated",
                        first, max(self.pending), len(self.outcomes))
        logger.info("replayed %d journaled results (%d candidates proposed) from %s",
                    self.told, self.asked, self.journal.path)

    def _replay_ask(self, recorded: Dict[str, Any]) -> None:
        candidate = self.algorithm.ask()
        expected = recorded["candidate"]
        if candidate is None:
            raise JournalError(
                f"cannot resume '{self.journal.path}': when replayed, the algorithm proposed "
                f"nothing where the journal has candidate {expected}; the algorithm is not "
                "deterministic for its seed, or differs from the journaled run")
        genome = list(candidate.genome)
        if candidate.number != expected or not _json_equal(genome, recorded["genome"]):
            raise JournalError(
                f"cannot resume '{self.journal.path}': when replayed, the algorithm proposed "
                f"candidate {candidate.number} = {genome} where the journal has candidate "
                f"{expected} = {recorded['genome']}; the algorithm is not deterministic for its "
                "seed, or differs from the journaled run. Start a new journal")
        self.pending[candidate.number] = candidate
        self.asked += 1

    def _outcome_from_row(self, row: Dict[str, Any]) -> _Outcome:
        candidate = self.pending.get(row["candidate"]) or Candidate(
            tuple(row["genome"]), row["generation"], row["candidate"])
        return _Outcome(candidate, evaluation_result(row), row["descriptor"], row["worker_rank"],
                        row["cached_from"], row["started"], row["ended"])

    def _count(self, row: Dict[str, Any], replayed: bool = False) -> None:
        if replayed:
            self.replayed += 1
        if row["cached"]:
            self.cached += 1
        if row["status"] != "ok":
            self.failed += 1

    # --- asking and preparing ------------------------------------------------------------
    def ask(self) -> Optional[Candidate]:
        if self.algorithm.finished:
            return None
        candidate = self.algorithm.ask()
        if candidate is None:
            return None
        self.pending[candidate.number] = candidate
        self.asked += 1
        return candidate

    def record_asks(self, candidates: Sequence[Candidate]) -> None:
        if self.journal is not None:
            self.unwritten_candidates.extend(
                {"candidate": c.number, "generation": c.generation, "genome": c.genome,
                 "told_before": self.told} for c in candidates)

    def flush(self) -> None:
        """Commit the journal rows of everything since the last flush, in one transaction.

        Called once tasks are handed out, so that workers do not wait for the disk. The rows
        keep their order, so the file is always a consistent prefix of the run: after a crash,
        only what happened since the last flush is lost, and it was in flight.
        """
        if self.journal is not None and (self.unwritten_candidates or self.unwritten_evaluations):
            candidates, evaluations = self.unwritten_candidates, self.unwritten_evaluations
            self.unwritten_candidates, self.unwritten_evaluations = [], []
            self.journal.record(candidates, evaluations)

    def prepare(self, candidate: Candidate) -> None:
        """Decode; then a ready outcome (decode failure, cached), a wait, or a queued task."""
        try:
            descriptor = self.space.to_descriptor(candidate.genome)
            descriptor_hash = descriptor.hash  # validates
            descriptor_json = descriptor.to_json()
        except Exception as error:  # noqa: BLE001 - a genome that does not decode is a result
            logger.debug("candidate %d does not decode:\n%s", candidate.number,
                         traceback.format_exc())
            now = time.time()
            result = EvaluationResult.failure(f"{type(error).__name__}: {error}")
            self.finish(_Outcome(candidate, result, None, None, None, now, now))
            return
        if descriptor_hash in self.cache:
            self.finish(self._cached(candidate, descriptor_json, self.cache[descriptor_hash]))
        elif descriptor_hash in self.evaluating:
            self.waiting.setdefault(descriptor_hash, []).append(_Waiting(candidate, descriptor_json))
        else:
            self.evaluating[descriptor_hash] = candidate.number
            task = Task(candidate.number, descriptor, descriptor_json)
            self.tasks[candidate.number] = task
            self.queue.append(task)

    @staticmethod
    def _cached(candidate: Candidate, descriptor_json: str, earlier: _Outcome) -> _Outcome:
        now = time.time()
        result = EvaluationResult.from_dict(earlier.result.to_dict())
        return _Outcome(candidate, result, descriptor_json, None, earlier.candidate.number, now, now)

    # --- evaluating ----------------------------------------------------------------------
    def dispatch(self) -> None:
        """Hand queued tasks to idle workers."""
        while self.queue and self.executor.free_slots > 0:
            self.executor.submit(self.queue.popleft())

    def collect(self) -> None:
        """Wait for one evaluation; finish it and every candidate waiting for its architecture."""
        done = self.executor.wait()
        task = self.tasks.pop(done.number)
        candidate = self.pending[done.number]
        self.trained += 1
        self.busy_time += max(0.0, done.ended - done.started)
        # the loop's own hash: an evaluator (or a worker that could not decode) may leave the
        # result's empty, and the bookkeeping of cache and waiters is keyed by this one
        descriptor_hash = task.descriptor.hash
        if done.result.descriptor_hash != descriptor_hash:
            done.result.descriptor_hash = descriptor_hash
        outcome = _Outcome(candidate, done.result, task.descriptor_json, done.worker_rank, None,
                           done.started, done.ended)
        self.evaluating.pop(descriptor_hash, None)
        if descriptor_hash:
            self.cache.setdefault(descriptor_hash, outcome)
        self.finish(outcome)
        for waiter in self.waiting.pop(descriptor_hash, []):
            self.finish(self._cached(waiter.candidate, waiter.descriptor_json, outcome))

    def finish(self, outcome: _Outcome) -> None:
        """Journal an outcome; in async mode tell it at once, in sync mode keep it for the batch."""
        number = outcome.candidate.number
        if self.mode == "async":
            self.sequence[number] = self.told
        self._record(outcome)
        self.outcomes[number] = outcome
        if self.mode == "async":
            self.tell(number)

    def _record(self, outcome: _Outcome) -> None:
        if outcome.cached_from is not None:
            self.cached += 1
        if not outcome.result.ok:
            self.failed += 1
        if self.journal is None:
            return
        candidate = outcome.candidate
        self.unwritten_evaluations.append({
            "sequence": self.sequence[candidate.number], "candidate": candidate.number,
            "generation": candidate.generation, "genome": candidate.genome,
            "descriptor": outcome.descriptor_json, "worker_rank": outcome.worker_rank,
            "result": outcome.result, "cached": outcome.cached_from is not None,
            "cached_from": outcome.cached_from, "started": outcome.started,
            "ended": outcome.ended})

    def tell(self, number: int) -> None:
        outcome = self.outcomes.pop(number)
        candidate = self.pending.pop(number)
        self.algorithm.tell(candidate, outcome.result)
        self.told += 1
        if self.progress is not None:
            self._report(outcome)

    def _report(self, outcome: _Outcome) -> None:
        elapsed = time.monotonic() - self.started
        done_here = self.told - self.replayed
        remaining = (elapsed / done_here * (self.budget - self.told)) if done_here > 0 else math.nan
        best = self.algorithm.best_result
        candidate = outcome.candidate
        self.progress(SearchProgress(
            evaluations=self.told, budget=self.budget, generation=candidate.generation,
            best_accuracy=best.accuracy if best is not None else math.nan,
            elapsed=elapsed, remaining=remaining,
            last={"sequence": self.sequence.get(candidate.number), "candidate": candidate.number,
                  "genome": list(candidate.genome), "worker_rank": outcome.worker_rank,
                  "cached": outcome.cached_from is not None, **outcome.result.to_dict()}))

    # --- the two modes -------------------------------------------------------------------
    def run_sync(self) -> None:
        if self.told >= self.budget:
            return
        batch: List[int] = sorted(self.pending)  # a batch in progress when resumed
        if batch:
            for number in batch:
                if number not in self.outcomes:
                    self.prepare(self.pending[number])
        while True:
            if not batch:
                room = min(self.batch_size, self.budget - self.told)
                if room <= 0:
                    return
                asked: List[Candidate] = []
                while len(asked) < room:
                    candidate = self.ask()
                    if candidate is None:
                        break
                    asked.append(candidate)
                if not asked:
                    self.flush()
                    self._stopped_early()
                    return
                self.record_asks(asked)
                batch = [c.number for c in asked]
                for offset, number in enumerate(sorted(batch)):
                    self.sequence[number] = self.told + offset
                for candidate in asked:
                    self.prepare(candidate)
            while any(number not in self.outcomes for number in batch):
                self.dispatch()
                self.flush()  # after the hand-out, so that workers do not wait for the disk
                if self.executor.in_flight == 0:
                    raise NordError(f"internal error: batch {batch} is incomplete with nothing "
                                    "in flight")
                self.collect()
            self.flush()
            for number in sorted(batch):
                self.tell(number)
            batch = []

    def run_async(self) -> None:
        if self.told >= self.budget:
            return
        # candidates in flight when the run stopped go first, in order
        for number in sorted(self.pending):
            self.prepare(self.pending[number])
        while True:
            self.dispatch()
            while not self.queue and self.executor.free_slots > 0 and self.asked < self.budget:
                candidate = self.ask()
                if candidate is None:
                    break
                self.record_asks([candidate])
                self.prepare(candidate)
                self.dispatch()
            self.flush()  # after the hand-out, so that workers do not wait for the disk
            if self.executor.in_flight == 0:
                if self.queue:
                    continue
                if self.pending:
                    raise NordError(f"internal error: candidates {sorted(self.pending)} are "
                                    "pending with nothing in flight")
                if self.told < self.budget:
                    self._stopped_early()
                return
            self.collect()

    def _stopped_early(self) -> None:
        if self.told >= self.budget:
            return
        if self.algorithm.finished:
            logger.info("the algorithm finished after %d of %d evaluations", self.told, self.budget)
        else:
            logger.warning(
                "%s proposed nothing (ask() returned None) with no result outstanding, after %d of "
                "%d evaluations; the search stops here", type(self.algorithm).__name__,
                self.told, self.budget)

    def summary(self) -> SearchSummary:
        return SearchSummary(
            best=self.algorithm.best, best_result=self.algorithm.best_result,
            evaluations=self.told, trained=self.trained, cached=self.cached, failed=self.failed,
            replayed=self.replayed, wall_time=time.monotonic() - self.started,
            busy_time=self.busy_time, workers=self.executor.n_workers, mode=self.mode,
            journal=None if self.journal is None else str(self.journal.path))


def _json_equal(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _describe(obj: Any) -> Dict[str, Any]:
    """``obj.describe()`` when it has one, else its class and its plain settings."""
    describe = getattr(obj, "describe", None)
    if callable(describe):
        try:
            described = describe()
            if isinstance(described, dict):
                return described
            return {"description": str(described)}
        except Exception as error:  # noqa: BLE001 - metadata must not stop a run
            logger.debug("%r.describe() failed: %s", obj, error)
    described: Dict[str, Any] = {"class": f"{type(obj).__module__}.{type(obj).__qualname__}"}
    for name, value in sorted(getattr(obj, "__dict__", {}).items()):
        if not name.startswith("_") and (value is None or isinstance(value, (bool, int, float, str))):
            described[name] = value
    return described


def _dataset(evaluator: Any, described_evaluator: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The evaluator's data set: its curator's ``describe()``, else the name it reports."""
    curator = getattr(evaluator, "curator", None)
    if curator is None:
        name = described_evaluator.get("dataset")
        return None if name is None else {"name": name}
    described = _describe(curator)
    described.setdefault("name", getattr(curator, "name", type(curator).__name__))
    return described


def run_search(algorithm: SearchAlgorithm, evaluator=None, budget: int = 100,
               journal: Union[Journal, str, os.PathLike, None] = None, mode: str = "sync",
               executor: Optional[Executor] = None, resume: bool = False,
               progress: Optional[Callable[[SearchProgress], None]] = None,
               batch_size: Optional[int] = None,
               metadata: Optional[Dict[str, Any]] = None) -> Optional[SearchSummary]:
    """Run a search: ask, decode, evaluate (once per architecture), tell, journal.

    Args:
        algorithm: a :class:`SearchAlgorithm`; it is told every result, in the order recorded.
            Ranks that do not run the loop (MPI workers) never touch it: None will do there.
        evaluator: evaluates descriptors in this process (a :class:`SerialExecutor` is made
            for it). Leave it None when ``executor`` is given.
        budget: number of results to tell the algorithm, cached and failed ones included
            (see the module docstring).
        journal: a :class:`Journal` or a path: every proposal and result is committed there as
            it happens, by the loop's rank only. None keeps no record (no resume).
        mode: 'sync' (generations, results told in candidate order) or 'async' (steady state).
        executor: where evaluations run; default ``SerialExecutor(evaluator)``. With an
            :class:`~nord.search.dispatch.MPIExecutor`, call this on every rank: the ranks that
            do not run the loop evaluate until it ends, and return None.
        resume: continue the run journaled in ``journal`` (a new run when it holds none).
        progress: called with a :class:`SearchProgress` after each result told (loop's rank).
        batch_size: the most candidates in a synchronous batch; default the number of workers
            (on resume, the journal's). Ignored in async mode.
        metadata: extra values stored in the journal's ``extra`` column (e.g. the data set name,
            the command line).

    Returns:
        A :class:`SearchSummary` on the rank that runs the loop; None on worker ranks.

    Raises:
        ConfigurationError: a bad ``mode``, ``budget`` or ``batch_size``, or neither evaluator nor
            executor.
        JournalError: the journal cannot be written, or cannot be resumed by this run.
    """
    if mode not in MODES:
        raise ConfigurationError(f"mode must be one of {MODES}; got {mode!r}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ConfigurationError(f"budget (number of evaluations) must be an integer >= 0; got {budget!r}")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                   or batch_size < 1):
        raise ConfigurationError(f"batch_size must be a positive integer or None; got {batch_size!r}")
    if executor is None:
        if evaluator is None:
            raise ConfigurationError("run_search needs an evaluator, or an executor that has one")
        executor = SerialExecutor(evaluator)
    if evaluator is None:
        evaluator = getattr(executor, "evaluator", None)

    executor.start()
    if not executor.is_dispatcher:
        executor.serve()
        return None

    own_journal = journal is not None and not isinstance(journal, Journal)
    if own_journal:
        journal = Journal(journal)
    search: Optional[_Search] = None
    try:
        described = executor.describe()
        resumed = False
        effective_batch = (batch_size or executor.n_workers) if mode == "sync" else None
        if journal is not None:
            params = algorithm.parameters()
            described_evaluator = _describe(evaluator) if evaluator is not None else {}
            run = {
                "algorithm": params.get("algorithm", getattr(algorithm, "name", type(algorithm).__name__)),
                "parameters": params, "seed": algorithm.seed, "space": algorithm.space.describe(),
                "evaluator": described_evaluator,
                "dataset": _dataset(evaluator, described_evaluator), "mode": mode, "budget": budget,
                "batch_size": effective_batch, "extra": metadata or {}, **described,
            }
            resumed = journal.start(run, resume=resume)
            recorded = journal.metadata()["batch_size"] if resumed else None
            if recorded is not None and mode == "sync":
                if batch_size is not None and batch_size != recorded:
                    raise JournalError(
                        f"cannot resume '{journal.path}': field 'batch_size' differs: the journal "
                        f"has {recorded}, this run has {batch_size}. Leave batch_size unset to "
                        "take the journal's, or give a new journal path")
                effective_batch = recorded
        batch_size = effective_batch or 1
        search = _Search(algorithm, executor, journal, budget, mode, batch_size, progress)
        if resumed:
            search.replay()
        if mode == "sync":
            search.run_sync()
        else:
            search.run_async()
        if journal is not None:
            journal.set_status("finished")
        summary = search.summary()
        logger.info("search done: %d evaluations (%d trained, %d cached, %d failed, %d replayed) in "
                    "%.1f s", summary.evaluations, summary.trained, summary.cached, summary.failed,
                    summary.replayed, summary.wall_time)
        return summary
    except BaseException:
        if journal is not None and journal._connection is not None:
            try:
                if search is not None:
                    search.flush()  # what is known is a consistent prefix: keep it
                journal.set_status("crashed")
            except Exception:  # noqa: BLE001 - the original error matters more
                logger.debug("could not mark the journal crashed", exc_info=True)
        raise
    finally:
        executor.close()
        if own_journal:
            journal.close()
