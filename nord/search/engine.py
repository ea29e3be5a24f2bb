"""run_search: the search engine, one loop for every search nord runs.

The engine asks the algorithm for candidates, identifies each genome's architecture with the
search space (evaluating each architecture once: a repeat reuses the first result), has an
executor evaluate it, tells the algorithm the result and records it in the journal. A real
search on a cluster, a comparison of a thousand seeds on a benchmark table and a resumed run
are this same loop with different options::

    from nord.search import RandomSearch, run_search

    summary = run_search(RandomSearch(space, seed=0), evaluator, budget=100,
                         journal="runs/random.db")
    print(summary.best_result.accuracy, summary.evaluations, summary.wall_time)

Over MPI, every rank calls the same function with an
:class:`~nord.search.executors.MPIExecutor`; rank 0 runs the loop and the algorithm and returns
the summary, the other ranks evaluate what they are sent and return None.

**Budget.** ``budget`` counts the results the algorithm is told: evaluated candidates, cached
ones (an architecture already evaluated in the run is not evaluated again; its earlier result
is reused) and failed ones (a genome that does not decode, a network that does not train)
alike. The engine never asks for more candidates than the budget has room for, so a run ends
with exactly ``budget`` evaluations unless the algorithm finishes first.

**Identity.** ``space.identify(genome)`` gives the key under which an architecture is
evaluated once: the canonical hash of its descriptor (isomorphic networks share it), or a
benchmark cell's table index. A genome is decoded only when finding its key or evaluating it
needs a descriptor.

**Modes.**

* ``'sync'`` (generations): ask until the algorithm returns None (a generation barrier) or
  the batch holds ``batch_size`` candidates (default: the executor's number of workers),
  evaluate the batch, then tell every result **in candidate order**, whichever worker
  finished first. A seeded synchronous run therefore gives the same journal (times and
  worker ranks aside) for any number of workers, as long as ``batch_size`` is the same, or
  the algorithm's proposals within a generation do not depend on results told within it
  (true of generational algorithms and random search).
* ``'async'`` (steady state): the algorithm is told a result as soon as it comes, and the
  worker that finished gets the next candidate at once (with ``MPIExecutor(prefetch=1)`` it
  already holds it); there is no barrier, so no worker waits for the slowest network. The
  order of results depends on timing.

**Journal.** Proposals and results are committed together, once per result, right after the
next tasks are handed out (so workers never wait for the disk); the file is therefore always
a consistent prefix of the run, and a crash loses only what was in flight. The run's status
says how it ended (``nord.journal``): ``finished``, ``interrupted`` (SIGINT or SIGTERM, raised
here as :class:`~nord.errors.RunInterrupted`), ``failed`` (a full disk) or ``crashed``.

**Time budget.** An executor may end the search on a clock of its own
(:class:`~nord.search.executors.SimulatedExecutor` with a ``time_budget``): its ``wait`` raises
:class:`~nord.search.executors.TimeBudgetSpent`, and the run ends as ``finished`` with what
was told so far (``SearchSummary.time_budget_spent``). Evaluations in flight are abandoned,
never told; in sync mode, results of the unfinished batch that came back in time are journaled
but not told (as after a crash, resuming would tell them).

**Resume.** ``resume=True`` continues the run journaled in ``journal`` (see
:mod:`nord.search.replay`): the algorithm is rebuilt in exactly the state it had, nothing
finished is evaluated again, and the candidates in flight are evaluated again.
"""
from __future__ import annotations

import logging
import math
import os
import time
import traceback
from collections import deque
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Callable, Deque, Dict, Hashable, List, Optional, Tuple, Union

from nord.environments import interruptible
from nord.errors import ConfigurationError, DiskFullError, NordError
from nord.evaluators.result import EvaluationResult
from nord.journal import CandidateRecord, EvaluationRecord, Journal, RunRecord
from nord.search.algorithm import Candidate, SearchAlgorithm
from nord.search.executors import Executor, SerialExecutor, Task, TimeBudgetSpent

__all__ = ["run_search", "RunInfo", "SearchSummary", "SearchProgress", "Outcome", "MODES"]

logger = logging.getLogger(__name__)

MODES = ("sync", "async")
NO_KEY = ""
"""The key of a candidate whose genome did not decode (it has no architecture)."""


@dataclass
class RunInfo:
    """What the journal records about a run besides what the engine knows itself.

    Attributes:
        evaluator: how candidates are evaluated; default ``evaluator.describe()``.
        dataset: the data set, when there is one.
        config: the settings a runner needs to start the run again (must match on resume).
        execution: where it runs (may change on resume), added to the executor's description.
        extra: anything else (free-form).
    """

    evaluator: Optional[Dict[str, Any]] = None
    dataset: Optional[Dict[str, Any]] = None
    config: Dict[str, Any] = field(default_factory=dict)
    execution: Dict[str, Any] = field(default_factory=dict)
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Outcome:
    """A result ready to be told, with what the journal records about it.

    Attributes:
        candidate: the candidate.
        result: its result.
        key: the space's identity of its architecture (``NO_KEY`` when it did not decode).
        task: the task that was evaluated (its descriptor is journaled), or None.
        worker_rank: the world rank that evaluated it (None: no worker did).
        started, ended: wall-clock times.
        descriptor_json: the descriptor's JSON when there is no task (cached, replayed).
        cached_from: the candidate whose result was reused, or None.
    """

    candidate: Candidate
    result: EvaluationResult
    key: Hashable = NO_KEY
    task: Optional[Task] = None
    worker_rank: Optional[int] = None
    started: Optional[float] = None
    ended: Optional[float] = None
    _: KW_ONLY
    descriptor_json: Optional[str] = None
    cached_from: Optional[int] = None

    @property
    def descriptor(self) -> Optional[str]:
        return self.task.descriptor_json if self.task is not None else self.descriptor_json


class SearchProgress:
    """What ``on_result`` is given after each told result (on the engine's rank).

    A snapshot: a callback may keep it, and it still says how the search stood then.

    Attributes:
        outcome: the result just told (:class:`Outcome`).
        sequence: its place in the order told.
        evaluations: results told so far, replayed ones included.
        budget: the run's budget.
        replayed, evaluated, cached, undecodable, failed: counts so far (see
            :class:`SearchSummary`).
        best_accuracy: best search accuracy so far (NaN while none succeeded).
        elapsed: seconds since this call of ``run_search`` started.
        remaining: estimated seconds left, from this session's rate (NaN before the first).
    """

    __slots__ = ("outcome", "sequence", "evaluations", "budget", "replayed", "evaluated",
                 "cached", "undecodable", "failed", "best_accuracy", "elapsed")

    def __init__(self, outcome: "Outcome", search: "Search"):
        self.outcome = outcome
        self.sequence = search.sequence.get(outcome.candidate.number, search.told - 1)
        self.evaluations = search.told
        self.budget = search.budget
        self.replayed = search.replayed
        self.evaluated = search.evaluated
        self.cached = search.cached
        self.undecodable = search.undecodable
        self.failed = search.failed
        best = search.algorithm.best_result
        self.best_accuracy = best.accuracy if best is not None else math.nan
        self.elapsed = time.monotonic() - search.started

    @property
    def generation(self) -> int:
        return self.outcome.candidate.generation

    @property
    def remaining(self) -> float:
        done_here = self.evaluations - self.replayed
        if done_here <= 0:
            return math.nan
        return self.elapsed / done_here * (self.budget - self.evaluations)


@dataclass
class SearchSummary:
    """What ``run_search`` returns on the rank that runs the engine.

    Attributes:
        best: the best candidate (lowest fitness among successful results), or None.
        best_result: its result.
        evaluations: results told, replayed from the journal included: the budget's unit.
            It is ``replayed + evaluated + cached + undecodable``.
        replayed: results taken from the journal when resuming.
        evaluated: evaluations run by the executor in this session.
        cached: results reused in this session for an architecture evaluated earlier in the
            run.
        undecodable: genomes of this session that did not decode (failed, never evaluated).
        failed: failed results among all of them, replayed ones included.
        wall_time: seconds this session took.
        busy_time: seconds workers spent evaluating in this session.
        workers: the executor's number of workers.
        mode: 'sync' or 'async'.
        journal: the journal's path, or None.
        epochs_trained, legs, checkpoint_peak_bytes: with a scheduler, the epochs training
            cost in this session, the legs of training run, and the largest size of the
            checkpoint folder (None without one).
        time_budget_spent: the executor's time budget ended the run.
    """

    best: Optional[Candidate]
    best_result: Optional[EvaluationResult]
    evaluations: int
    evaluated: int
    cached: int
    failed: int
    replayed: int
    wall_time: float
    undecodable: int
    busy_time: float
    workers: int
    mode: str
    journal: Optional[str] = None
    epochs_trained: Optional[int] = None
    legs: Optional[int] = None
    checkpoint_peak_bytes: Optional[int] = None
    time_budget_spent: bool = False

    def counts(self) -> str:
        """``"N evaluations (R from the journal, E evaluated, C reused, U not decodable; F
        failed)"``, the parts that are not zero; the first four add up to N."""
        parts = [f"{value} {label}" for value, label in (
            (self.replayed, "from the journal"), (self.evaluated, "evaluated"),
            (self.cached, "reused"), (self.undecodable, "not decodable")) if value]
        return (f"{self.evaluations} evaluations ({', '.join(parts) or 'none'}; "
                f"{self.failed} failed)")

    @property
    def utilisation(self) -> float:
        """Busy time / (workers x wall time) of this session."""
        if self.wall_time <= 0 or self.workers <= 0:
            return math.nan
        return self.busy_time / (self.workers * self.wall_time)


class Search:
    """The state of one call of run_search on the rank that runs the engine."""

    def __init__(self, algorithm: SearchAlgorithm, executor: Executor, journal: Optional[Journal],
                 budget: int, mode: str, batch_size: int,
                 on_result: Optional[Callable[[SearchProgress], None]]):
        self.algorithm = algorithm
        self.space = algorithm.space
        self.executor = executor
        self.journal = journal
        self.budget = budget
        self.mode = mode
        self.asynchronous = mode == "async"
        self.batch_size = batch_size
        self.on_result = on_result
        self.told = 0
        self.asked = 0
        self.pending: Dict[int, Candidate] = {}        # asked, not yet told
        self.ready: Dict[int, Outcome] = {}            # evaluated, not yet told (sync)
        self.sequence: Dict[int, int] = {}             # candidate -> its place in the tell order
        self.queue: Deque[Task] = deque()              # identified, waiting for a worker
        self.tasks: Dict[int, Task] = {}               # candidate -> its task, until it is back
        self.cache: Dict[Hashable, Outcome] = {}       # key -> first outcome
        self.forms: Dict[Hashable, str] = {}           # key -> canonical form, once checked
        self.evaluating: Dict[Hashable, int] = {}      # key -> candidate being evaluated
        self.waiting: Dict[Hashable, List[Candidate]] = {}   # key -> candidates waiting for it
        self.unwritten_candidates: List[CandidateRecord] = []
        self.unwritten_evaluations: List[EvaluationRecord] = []
        self.unwritten_epochs: List[Tuple[int, Any, Optional[int]]] = []
        self.unwritten_legs: List[Any] = []
        self.on_epoch: Optional[Callable[[int, Any], None]] = None
        self.evaluated = self.cached = self.undecodable = self.failed = self.replayed = 0
        self.busy_time = 0.0
        self.time_budget_spent = False
        self.now = executor.now   # the journal's clock: wall-clock or simulated seconds
        self.started = time.monotonic()

    # --- asking and identifying ----------------------------------------------------------
    def ask(self) -> Optional[Candidate]:
        if self.algorithm.finished:
            return None
        candidate = self.algorithm.ask()
        if candidate is None:
            return None
        self.pending[candidate.number] = candidate
        self.asked += 1
        if self.journal is not None:
            self.unwritten_candidates.append(CandidateRecord(
                candidate.number, candidate.generation, candidate.genome, self.told))
        return candidate

    def prepare(self, candidate: Candidate) -> None:
        """Identify; then a ready outcome (decode failure, cached), a wait, or a queued task."""
        try:
            key, descriptor = self.space.identify(candidate.genome)
        except Exception as error:  # noqa: BLE001 - a genome that does not decode is a result
            logger.debug("candidate %d does not decode:\n%s", candidate.number,
                         traceback.format_exc())
            now = self.now()
            self.undecodable += 1
            self.finish(Outcome(candidate, EvaluationResult.failure(
                f"{type(error).__name__}: {error}"), NO_KEY, started=now, ended=now))
            return
        earlier = self.cache.get(key)
        if earlier is not None:
            if descriptor is not None:
                self._check_same(key, descriptor, earlier)
            self.finish(self._cached(candidate, earlier))
        elif key in self.evaluating:
            self.waiting.setdefault(key, []).append(candidate)
        else:
            self.evaluating[key] = candidate.number
            self.start(candidate, key, descriptor)

    def start(self, candidate: Candidate, key: Hashable, descriptor) -> None:
        """Queue the evaluation of a candidate whose architecture is new to the run."""
        task = Task(candidate.number, candidate.genome, key, self.space, descriptor)
        self.tasks[candidate.number] = task
        self.queue.append(task)

    def _check_same(self, key: Hashable, descriptor, earlier: Outcome) -> None:
        """A key that is a digest of the canonical form (the default) is checked against the
        form itself, so a reused result is never another architecture's, however unlikely a
        shared digest is. ``descriptor``: the new candidate's (the space decoded it to find
        the key)."""
        if earlier.descriptor is None:
            return   # the key is the identity itself (e.g. a table row)
        form = self.forms.get(key)
        if form is None:
            if earlier.task is not None:
                form = earlier.task.descriptor.canonical_form()
            else:
                from nord.descriptors import NeuralDescriptor
                form = NeuralDescriptor.from_json(earlier.descriptor).canonical_form()
            self.forms[key] = form
        if descriptor.canonical_form() != form:
            raise NordError(
                f"two different architectures share the key {key!r} of the search space "
                f"{type(self.space).__name__}; the search stops rather than reuse a result for "
                "the wrong network. Please report this, with the journal")

    def _cached(self, candidate: Candidate, earlier: Outcome) -> Outcome:
        now = self.now()
        return Outcome(candidate, earlier.result.copy(), earlier.key,
                       descriptor_json=earlier.descriptor,
                       cached_from=earlier.candidate.number, started=now, ended=now)

    # --- evaluating ----------------------------------------------------------------------
    def dispatch(self) -> None:
        """Hand queued tasks to idle workers."""
        queue, executor = self.queue, self.executor
        while queue and executor.free_slots > 0:
            executor.submit(queue.popleft())

    def collect(self) -> None:
        """Wait for one evaluation; finish it and every candidate waiting for its architecture."""
        done = self.executor.wait()
        task = self.tasks.pop(done.number)
        task.report = None   # it points back at this search: the outcome keeps the task
        key = task.key
        self.evaluated += 1
        self.busy_time += max(0.0, done.ended - done.started)
        outcome = Outcome(self.pending[done.number], done.result, key, task, done.worker_rank,
                          done.started, done.ended)
        del self.evaluating[key]
        self.cache.setdefault(key, outcome)
        self.finish(outcome)
        for waiter in self.waiting.pop(key, ()):
            self.finish(self._cached(waiter, outcome))

    def finish(self, outcome: Outcome) -> None:
        """Record an outcome; in async mode tell it at once, in sync mode keep it for the batch."""
        number = outcome.candidate.number
        asynchronous = self.asynchronous
        if asynchronous:
            self.sequence[number] = self.told
        if outcome.cached_from is not None:
            self.cached += 1
        if outcome.result.status != "ok":
            self.failed += 1
        if self.journal is not None:
            self.unwritten_evaluations.append(EvaluationRecord(
                self.sequence[number], number, outcome.candidate.generation,
                outcome.candidate.genome, outcome.key, outcome.descriptor, outcome.worker_rank,
                outcome.result, outcome.cached_from, outcome.started, outcome.ended))
        if asynchronous:
            self._tell_outcome(number, outcome)
        else:
            self.ready[number] = outcome

    def tell(self, number: int) -> None:
        self._tell_outcome(number, self.ready.pop(number))

    def _tell_outcome(self, number: int, outcome: Outcome) -> None:
        self.algorithm.tell(self.pending.pop(number), outcome.result)
        self.told += 1
        if self.on_result is not None:
            self.on_result(SearchProgress(outcome, self))

    def epoch_finished(self, number: int, record, worker_rank: Optional[int]) -> None:
        """A candidate finished an epoch (on any worker): its learning curve grows, in the
        journal at once (a crash keeps the epochs already done)."""
        if self.journal is not None:
            self.unwritten_epochs.append((number, record, worker_rank))
            self.flush()
        if self.on_epoch is not None:
            self.on_epoch(number, record)

    def flush(self) -> None:
        """Commit the journal rows of everything since the last flush, in one transaction.

        Called once tasks are handed out, so that workers do not wait for the disk. The rows
        keep their order, so the file is always a consistent prefix of the run: after a crash,
        only what happened since the last flush is lost, and it was in flight.
        """
        if self.journal is not None and (self.unwritten_candidates or self.unwritten_evaluations
                                         or self.unwritten_epochs or self.unwritten_legs):
            candidates, evaluations = self.unwritten_candidates, self.unwritten_evaluations
            epochs, legs = self.unwritten_epochs, self.unwritten_legs
            self.unwritten_candidates, self.unwritten_evaluations = [], []
            self.unwritten_epochs, self.unwritten_legs = [], []
            self.journal.record(candidates, evaluations, epochs, legs)

    # --- the two modes -------------------------------------------------------------------
    def run_sync(self) -> None:
        # In sync mode ``ready`` holds only outcomes of the current batch (a batch is told as
        # a whole), so the batch is complete when it holds them all.
        batch: List[int] = sorted(self.pending)  # a batch in progress when resumed
        for number in batch:
            if number not in self.ready:
                self.prepare(self.pending[number])
        while True:
            if not batch:
                batch = self._ask_batch(min(self.batch_size, self.budget - self.told))
                if not batch:
                    return
            while len(self.ready) < len(batch):
                self.dispatch()
                self.flush()  # after the hand-out, so that workers do not wait for the disk
                if not self.executor.in_flight:
                    raise NordError(f"internal error: batch {batch} is incomplete with nothing "
                                    "in flight")
                self.collect()
            self.flush()
            for number in batch:
                self.tell(number)
            batch = []

    def _ask_batch(self, room: int) -> List[int]:
        """Ask for up to ``room`` candidates and identify them; their numbers, sorted (empty
        when the budget is spent or the algorithm proposes nothing)."""
        if room <= 0:
            return []
        asked: List[Candidate] = []
        while len(asked) < room:
            candidate = self.ask()
            if candidate is None:
                break
            asked.append(candidate)
        if not asked:
            self.flush()
            self._stopped_early()
            return []
        batch = sorted(c.number for c in asked)
        for offset, number in enumerate(batch):
            self.sequence[number] = self.told + offset
        self.batch_started(batch)
        for candidate in asked:
            self.prepare(candidate)
        return batch

    def batch_started(self, batch: List[int]) -> None:
        """A synchronous batch was asked (its candidates' numbers), before any is prepared."""

    def run_async(self) -> None:
        if self.told >= self.budget:
            return
        # candidates in flight when the run stopped go first, in order
        for number in sorted(self.pending):
            self.prepare(self.pending[number])
        executor, queue = self.executor, self.queue
        while True:
            self.dispatch()
            while not queue and executor.free_slots > 0 and self.asked < self.budget:
                candidate = self.ask()
                if candidate is None:
                    break
                self.prepare(candidate)
                if queue:
                    self.dispatch()
            self.flush()  # after the hand-out, so that workers do not wait for the disk
            if executor.in_flight == 0:
                if queue:
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
            evaluations=self.told, evaluated=self.evaluated, cached=self.cached,
            failed=self.failed, replayed=self.replayed, undecodable=self.undecodable,
            wall_time=time.monotonic() - self.started, busy_time=self.busy_time,
            workers=self.executor.n_workers, mode=self.mode,
            journal=None if self.journal is None else str(self.journal.path),
            time_budget_spent=self.time_budget_spent)


def _check_settings(mode: str, budget: Any, batch_size: Any) -> None:
    if mode not in MODES:
        raise ConfigurationError(f"mode must be one of {MODES}; got {mode!r}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ConfigurationError(
            f"budget (number of evaluations) must be an integer >= 0; got {budget!r}")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                   or batch_size < 1):
        raise ConfigurationError(f"batch_size must be a positive integer or None; got {batch_size!r}")


def run_record(algorithm: SearchAlgorithm, evaluator, executor: Executor, mode: str,
               budget: int, batch_size: Optional[int], info: RunInfo,
               scheduler=None) -> RunRecord:
    """The journal's record of a run, from the engine's parts and the caller's ``info``."""
    parameters = algorithm.parameters()
    evaluator_info = info.evaluator if info.evaluator is not None else (
        evaluator.describe() if evaluator is not None else {})
    return RunRecord(
        algorithm=parameters.get("algorithm", algorithm.name), parameters=parameters,
        seed=algorithm.seed, space=algorithm.space.describe(), evaluator=evaluator_info,
        dataset=info.dataset, mode=mode, batch_size=batch_size, budget=budget,
        execution={**executor.describe(), **info.execution}, config=info.config,
        extra=info.extra, scheduler=scheduler.parameters() if scheduler is not None else {})


def run_search(algorithm: Optional[SearchAlgorithm], evaluator=None, budget: int = 100,
               journal: Union[Journal, str, os.PathLike, None] = None, mode: str = "sync",
               executor: Optional[Executor] = None, resume: bool = False,
               on_result: Optional[Callable[[SearchProgress], None]] = None,
               batch_size: Optional[int] = None,
               info: Optional[RunInfo] = None, scheduler=None,
               on_epoch: Optional[Callable[[int, Any], None]] = None) -> Optional[SearchSummary]:
    """Run a search: ask, identify, evaluate (once per architecture), tell, journal.

    Args:
        algorithm: a :class:`SearchAlgorithm`; it is told every result, in the order recorded.
            Ranks that do not run the engine (MPI workers) never touch it: None will do there.
        evaluator: evaluates candidates in this process (a :class:`SerialExecutor` is made
            for it). Leave it None when ``executor`` is given.
        budget: number of results to tell the algorithm, cached and failed ones included
            (see the module docstring).
        journal: a :class:`~nord.journal.Journal` or a path: every proposal and result is
            committed there as it happens, by the engine's rank only. None keeps no record.
        mode: 'sync' (generations, results told in candidate order) or 'async' (steady state).
        executor: where evaluations run; default ``SerialExecutor(evaluator)``. With an
            :class:`~nord.search.executors.MPIExecutor`, call this on every rank: the ranks
            that do not run the engine evaluate until it ends, and return None.
        resume: continue the run journaled in ``journal`` (which must hold one).
        on_result: called with a :class:`SearchProgress` after each result told.
        batch_size: the most candidates in a synchronous batch; default the number of workers
            (on resume, the journal's). Ignored in async mode.
        info: what the journal records besides the engine's own knowledge (:class:`RunInfo`).
        scheduler: a :class:`~nord.search.schedulers.Scheduler` that decides how far each
            candidate trains (early stopping; see :mod:`nord.search.scheduled`). None: every
            candidate trains as far as its evaluator says.
        on_epoch: called with ``(candidate number, EpochRecord)`` as each epoch of training
            ends (on the engine's rank).

    Returns:
        A :class:`SearchSummary` on the rank that runs the engine; None on worker ranks.

    Raises:
        ConfigurationError: a bad ``mode``, ``budget`` or ``batch_size``, or neither evaluator
            nor executor.
        JournalError: the journal cannot be started or resumed by this run (nothing is then
            written), or cannot be written.
        RunInterrupted: SIGINT or SIGTERM stopped the run (journaled as ``interrupted``).
    """
    _check_settings(mode, budget, batch_size)
    if executor is None:
        if evaluator is None:
            raise ConfigurationError("run_search needs an evaluator, or an executor that has one")
        executor = SerialExecutor(evaluator)
    if evaluator is None:
        evaluator = getattr(executor, "evaluator", None)
    with interruptible():
        return _run(algorithm, evaluator, budget, journal, mode, executor, resume, on_result,
                    batch_size, info, scheduler, on_epoch)


def _run(algorithm, evaluator, budget, journal, mode, executor, resume, on_result, batch_size,
         info, scheduler, on_epoch) -> Optional[SearchSummary]:
    executor.start()
    if not executor.is_dispatcher:
        executor.serve()
        return None

    own_journal = journal is not None and not isinstance(journal, Journal)
    if own_journal:
        journal = Journal(journal)
    search: Optional[Search] = None
    failed = True
    try:
        effective_batch = (batch_size or executor.n_workers) if mode == "sync" else None
        if scheduler is not None:
            scheduler.prepare(budget, mode)   # what it cannot serve: refused before anything
            scheduler.check_serves(algorithm, evaluator)
            if mode == "sync":
                effective_batch = scheduler.batch_size(0, batch_size, executor.n_workers)
                if batch_size is not None and effective_batch != batch_size:
                    raise ConfigurationError(
                        f"the {scheduler.name} scheduler sets the size of each synchronous "
                        f"batch itself; batch_size={batch_size} was given. Leave batch_size "
                        "unset")
        if journal is not None:
            recorded_batch = None if mode == "async" else (
                batch_size if resume else effective_batch)
            record = run_record(algorithm, evaluator, executor, mode, budget, recorded_batch,
                                info or RunInfo(), scheduler)
        if scheduler is not None:
            if journal is not None:   # a refusal must leave no checkpoint folder behind
                journal.check_start(record, resume=resume)
            from nord.search.scheduled import checkpoint_folder
            folder = checkpoint_folder(None if journal is None else journal.path)
        if journal is not None:
            stored = journal.start(record, resume=resume)
            if stored is not None and mode == "sync" and batch_size is None:
                effective_batch = stored.batch_size
        if scheduler is None:
            search = Search(algorithm, executor, journal, budget, mode, effective_batch or 1,
                            on_result)
        else:
            from nord.search.scheduled import ScheduledSearch
            search = ScheduledSearch(
                algorithm, executor, journal, budget, mode, effective_batch or 1, on_result,
                scheduler=scheduler, temporary=journal is None, folder=folder)
        search.on_epoch = on_epoch
        if journal is not None or on_epoch is not None:   # someone keeps the learning curves
            executor.on_epoch = search.epoch_finished
        if journal is not None and resume:
            from nord.search.replay import replay
            replay(search)
            if scheduler is not None:
                from nord.search.scheduled import replay_scheduler
                replay_scheduler(search)
        try:
            if mode == "sync":
                search.run_sync()
            else:
                search.run_async()
        except TimeBudgetSpent as spent:
            search.time_budget_spent = True
            search.flush()
            logger.debug("%s; %d results told, %d in flight abandoned", spent, search.told,
                         search.executor.in_flight)
        if scheduler is not None:
            search.finish_run()
        if journal is not None:
            journal.finish("finished")
        summary = search.summary()
        logger.debug("search done: %s in %.1f s", summary.counts(), summary.wall_time)
        failed = False
        return summary
    except KeyboardInterrupt as stop:   # RunInterrupted too
        _stop(journal, search, "interrupted", getattr(stop, "signal_name", "SIGINT"))
        raise
    except DiskFullError as error:
        _stop(journal, search, "failed", f"disk full: {error}")
        raise
    except BaseException as error:
        _stop(journal, search, "crashed", f"{type(error).__name__}: {error}")
        raise
    finally:
        executor.on_epoch = None   # the search is done: no cycle keeps it alive
        executor.close(failed=failed)
        if own_journal:
            journal.close()


def _stop(journal: Optional[Journal], search: Optional[Search], status: str, detail: str) -> None:
    """Keep what is known and mark how the run ended, if this process holds the journal."""
    if journal is None or not journal.writing:
        return   # a refused start: the journal is not this run's to mark
    try:
        if search is not None:
            search.flush()   # what is known is a consistent prefix: keep it
    except Exception:  # noqa: BLE001 - the original error matters more
        logger.debug("could not flush the journal", exc_info=True)
    try:
        journal.finish(status, detail)
    except Exception:  # noqa: BLE001 - the original error matters more
        logger.debug("could not mark the journal %s", status, exc_info=True)
