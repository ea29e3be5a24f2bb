"""Search: the loop of one run on the rank that runs the engine (ask, identify, evaluate, tell).

:func:`~nord.search.engine.run.run_search` builds one and calls ``run_sync`` or ``run_async``;
:class:`~nord.search.engine.legs.ScheduledSearch` extends it with legs of training.
"""
from __future__ import annotations

import logging
import time
import traceback
from collections import deque
from typing import Any, Callable, Deque, Dict, Hashable, List, Optional, Set, Union

from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import NordError
from nord.evaluators.result import EvaluationResult
from nord.journal import Journal
from nord.journal.recorder import NoJournal, recorder_for
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.engine.checkpoints import CheckpointStore, NoCheckpoints
from nord.search.engine.outcomes import NO_KEY, Outcome, SearchProgress, SearchSummary
from nord.search.engine.stopping import Stopping
from nord.search.executors import Executor, Task
from nord.search.schedulers import Scheduler, TrainToEnd

__all__ = ["Search", "MAX_ATTEMPTS", "killed_result"]

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 2
"""How often a candidate's evaluation may kill the run's process (the out-of-memory killer's
SIGKILL) without finishing an epoch in between, before a resume records it as failed instead
of handing it out again."""


def killed_result(number: int, deaths: int) -> EvaluationResult:
    """The failed result of candidate ``number`` (or of its leg of training) during whose
    evaluation the run stopped ``deaths`` times in a row without a word: it is not tried again.

    The run's own process cannot tell whether the network brought it down (the out-of-memory
    killer) or it was killed from outside, so the result says both; a worker process that dies
    alone is told apart by its executor."""
    logger.warning("the run stopped %d times in a row while candidate %d was evaluated, each "
                   "time before it finished an epoch; it is recorded as failed and the run "
                   "goes on", deaths, number)
    return EvaluationResult.failure(
        f"the run stopped {deaths} times in a row while evaluating it, each time before it "
        "finished an epoch and without recording why (SIGKILL, the out-of-memory killer, a "
        "lost host or a cancelled job end a run so); it was not tried again. Either the "
        "network needs more memory than the machine has or the run was killed from outside: "
        "a run in one process cannot tell which (with --workers, a worker that dies alone is "
        "named as such). An epoch finished between two stops starts the count again")


class Search:
    """The state of one call of run_search on the rank that runs the engine."""

    promotes = False
    """Whether :meth:`promote` can hand out anything (a scheduler's searches)."""

    trains_told = False
    """Whether a candidate already told may still be in training (a scheduler's later legs),
    so that the journal's attempts of told candidates count on resume."""

    def __init__(self, algorithm: SearchAlgorithm, executor: Executor,
                 journal: Union[Journal, NoJournal],
                 budget: int, mode: str, batch_size: int,
                 on_result: Optional[Callable[[SearchProgress], None]],
                 scheduler: Union[Scheduler, TrainToEnd] = TrainToEnd(),
                 checkpoints: CheckpointStore = NoCheckpoints(), checkpoint_every: int = 0,
                 stopping: Optional[Stopping] = None):
        self.algorithm = algorithm
        self.scheduler = scheduler
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
        self.charge_repeats = executor.charges_repeats   # a repeat occupies a worker too
        self.repeats: Dict[int, Outcome] = {}          # candidate -> the outcome it repeats
        self.waiting: Dict[Hashable, List[Candidate]] = {}   # key -> candidates waiting for it
        self.recorder = recorder_for(journal)          # the journal's rows until a commit
        self.recording = self.recorder.keeps           # else its calls are skipped
        self.max_attempts = MAX_ATTEMPTS
        self.killed: Dict[int, int] = {}               # candidate -> deaths while evaluating it
        self.on_epoch: Optional[Callable[[int, Any], None]] = None
        self.evaluated = self.cached = self.undecodable = self.failed = self.replayed = 0
        self.busy_time = 0.0
        self.time_budget_spent = False
        self.checkpoints = checkpoints
        self.checkpoint_every = checkpoint_every
        self.stopping = stopping if stopping is not None else Stopping(budget)
        self.limited = self.stopping.limited           # a limit besides the budget is set
        self.now = executor.now   # the journal's clock: wall-clock or simulated seconds
        self.started = time.monotonic()

    # --- asking and identifying ----------------------------------------------------------
    def ask(self) -> Optional[Candidate]:
        if self.algorithm.finished or (self.limited and self.stopping.limit()):
            return None
        candidate = self.algorithm.ask()
        if candidate is None:
            return None
        self.pending[candidate.number] = candidate
        self.asked += 1
        if self.recording:
            self.recorder.asked(candidate, self.told)
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
            self.reuse(candidate, earlier)
        elif key in self.evaluating:
            self.join(candidate, key, descriptor)
        else:
            self.evaluating[key] = candidate.number
            self.start(candidate, key, descriptor)

    def start(self, candidate: Candidate, key: Hashable, descriptor) -> None:
        """Queue the evaluation of a candidate whose architecture is new to the run."""
        if candidate.number in self.killed:
            self.give_up(candidate, key)
            return
        task = Task(candidate.number, candidate.genome, key, self.space, descriptor)
        self.checkpoints.attach(task, self.checkpoint_every)
        self.tasks[candidate.number] = task
        self.queue.append(task)

    def give_up(self, candidate: Candidate, key: Hashable) -> None:
        """A candidate whose evaluation killed the run's process ``max_attempts`` times is a
        failed result (a repeat of its architecture reuses it), so the run goes on."""
        now = self.now()
        outcome = Outcome(candidate, killed_result(candidate.number,
                                                   self.killed.pop(candidate.number)),
                          key, started=now, ended=now)
        del self.evaluating[key]
        self.cache.setdefault(key, outcome)
        self.checkpoints.delete(candidate.number)
        self.finish(outcome)

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
                form = NeuralDescriptor.from_json(earlier.descriptor).canonical_form()
            self.forms[key] = form
        if descriptor.canonical_form() != form:
            raise NordError(
                f"two different architectures share the key {key!r} of the search space "
                f"{type(self.space).__name__}; the search stops rather than reuse a result for "
                "the wrong network. Please report this, with the journal")

    def join(self, candidate: Candidate, key: Hashable, descriptor) -> None:
        """A candidate whose architecture is being evaluated waits for that result."""
        self.waiting.setdefault(key, []).append(candidate)

    def reuse(self, candidate: Candidate, earlier: Outcome) -> None:
        """Answer a repeat of an architecture evaluated earlier in the run: from the cache at
        once, or, where the executor charges repeats, after a worker has spent its cost."""
        if not self.charge_repeats:
            self.finish(self._cached(candidate, earlier))
            return
        answer = earlier.result.copy()
        if "epochs_resumed" in answer.metrics:   # a repeat trains from scratch
            answer.metrics["epochs_resumed"] = 0
        task = Task(candidate.number, candidate.genome, earlier.key, self.space)
        task.answer = answer
        self.tasks[candidate.number] = task
        self.repeats[candidate.number] = earlier
        self.queue.append(task)

    def end_repeat(self, done) -> None:
        """A charged repeat is back from its worker: tell it as reused."""
        earlier = self.repeats.pop(done.number)
        del self.tasks[done.number]
        spent = done.ended - done.started
        if spent > 0:   # max(0.0, spent) without the call: a clock that stepped back adds nothing
            self.busy_time += spent
        self.finish(Outcome(self.pending[done.number], done.result, earlier.key, None,
                            done.worker_rank, done.started, done.ended,
                            descriptor_json=earlier.descriptor,
                            cached_from=earlier.candidate.number))

    def _cached(self, candidate: Candidate, earlier: Outcome) -> Outcome:
        now = self.now()
        return Outcome(candidate, earlier.result.copy(), earlier.key,
                       descriptor_json=earlier.descriptor,
                       cached_from=earlier.candidate.number, started=now, ended=now)

    # --- evaluating ----------------------------------------------------------------------
    def dispatch(self) -> int:
        """Hand queued tasks to idle workers; the workers left idle."""
        queue = self.queue
        executor, recording = self.executor, self.recording
        if not queue:
            return executor.free_slots
        free = executor.free_slots   # each submit takes one
        while queue and free > 0:
            task = queue.popleft()
            executor.submit(task)
            if recording:
                self.recorder.handed_out(task.number)   # committed before it is waited for
            free -= 1
        return free

    def collect(self) -> None:
        """Wait for one evaluation; finish it and every candidate waiting for its architecture."""
        done = self.executor.wait()
        number = done.number
        if number in self.repeats:
            self.end_repeat(done)
            return
        task = self.tasks.pop(number)
        task.report = None   # it points back at this search: the outcome keeps the task
        key = task.key
        self.evaluated += 1
        spent = done.ended - done.started
        if spent > 0:   # max(0.0, spent) without the call: a clock that stepped back adds nothing
            self.busy_time += spent
        outcome = Outcome(self.pending[number], done.result, key, task, done.worker_rank,
                          done.started, done.ended)
        del self.evaluating[key]
        self.cache.setdefault(key, outcome)
        self.checkpoints.ended(number, done.result.metrics)
        self.finish(outcome)
        for waiter in self.waiting.pop(key, ()):
            self.reuse(waiter, outcome)

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
        if self.recording:
            self.recorder.told(self.sequence[number], outcome)
        if asynchronous:
            self._tell_outcome(number, outcome)
        else:
            self.ready[number] = outcome

    def tell(self, number: int) -> None:
        self._tell_outcome(number, self.ready.pop(number))

    def _tell_outcome(self, number: int, outcome: Outcome) -> None:
        self.algorithm.tell(self.pending.pop(number), outcome.result)
        self.told += 1
        if self.stopping.target is not None:
            self.stopping.told(number, outcome.result.accuracy, outcome.result.ok)
        if self.on_result is not None:
            self.on_result(SearchProgress(outcome, self))

    def epoch_finished(self, number: int, record, worker_rank: Optional[int]) -> None:
        """A candidate finished an epoch (on any worker): its learning curve grows, in the
        journal at once (a crash keeps the epochs already done)."""
        self.recorder.epoch(number, record, worker_rank)
        self.recorder.commit()
        if self.on_epoch is not None:
            self.on_epoch(number, record)

    def flush(self) -> None:
        """Commit the journal rows of everything since the last flush, in one transaction.

        Called once tasks are handed out, so that workers do not wait for the disk. The rows
        keep their order, so the file is always a consistent prefix of the run: after a crash,
        only what happened since the last flush is lost, and it was in flight.
        """
        self.recorder.commit()

    # --- the two modes -------------------------------------------------------------------
    def run_sync(self) -> None:
        """Batches of candidates: each is asked, evaluated (and, with a scheduler, trained as
        far as it decides) and told as a whole, in candidate order."""
        # ``ready`` holds only outcomes of the current batch (a batch is told as a whole)
        batch = self.requeue_in_flight()   # a batch in progress when resumed
        executor = self.executor
        while True:
            if not batch:
                batch = self._ask_batch(min(self.next_batch_size(), self.budget - self.told))
                if not batch:
                    return
            while True:
                self.dispatch()
                self.flush()  # after the hand-out, so that workers do not wait for the disk
                if executor.in_flight:
                    self.collect()
                elif not self.queue and not self.promote(len(batch)):
                    self.decide_batch(batch)
                    if not self.queue:   # else charged repeats of what it told go out now
                        break
            self.flush()
            unfinished = [number for number in batch if number not in self.ready]
            if unfinished:
                raise NordError(f"internal error: candidates {unfinished} of batch {batch} are "
                                "unfinished with nothing in flight")
            for number in batch:
                self.tell(number)
            batch = []

    def run_async(self) -> None:
        """Steady state: a free worker gets the next candidate (or promotion) at once, and a
        result is told as soon as it comes."""
        self.requeue_in_flight()   # candidates in flight when the run stopped go first
        executor, queue, promote, promotes = self.executor, self.queue, self.promote, self.promotes
        dispatch, ask, prepare, flush = self.dispatch, self.ask, self.prepare, self.flush
        if type(self).flush is Search.flush:   # the same, one call fewer (none) per result
            flush = self.recorder.commit if self.recording else None
        while True:
            free = dispatch() if queue else executor.free_slots
            while not queue and free > 0:
                if promotes and promote(1):
                    free = dispatch()
                    continue
                if self.asked >= self.budget:
                    break
                candidate = ask()
                if candidate is None:
                    break
                prepare(candidate)
                if queue:
                    free = dispatch()
            if flush is not None:
                flush()  # after the hand-out, so that workers do not wait for the disk
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

    # --- what a scheduler changes in the two loops -------------------------------------------
    def resume_training(self) -> Set[int]:
        """After the algorithm's replay (:func:`~nord.search.engine.replay.replay`): make
        ready what trains (nothing more without a scheduler); the candidates that were in
        training when the run stopped."""
        return set(self.pending) - set(self.ready)

    def finish_run(self) -> None:
        """The run is over (without a scheduler nothing waits for a promotion)."""

    def requeue_in_flight(self) -> List[int]:
        """After a replay: the candidates asked but not evaluated when the run stopped are
        prepared again, in order (each goes on from its checkpoint); in sync mode, returns
        the batch in progress."""
        for number in sorted(self.pending):
            if number not in self.ready:
                self.prepare(self.pending[number])
        return sorted(self.pending) if self.mode == "sync" else []

    def promote(self, free: int) -> int:
        """Hand out up to ``free`` more legs of candidates already told; how many (none
        without a scheduler)."""
        return 0

    def next_batch_size(self) -> int:
        """The size of the next synchronous batch."""
        return self.batch_size

    def decide_batch(self, batch: List[int]) -> None:
        """A synchronous batch has nothing left in flight: make every candidate's outcome
        ready to be told (without a scheduler, they are)."""

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

    def _stopped_early(self) -> None:
        if self.told >= self.budget:
            return
        if self.stopping.reason is not None:
            logger.info("%s after %d of %d evaluations; the search stops here",
                        self.stopping.reason, self.told, self.budget)
        elif self.algorithm.finished:
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
            journal=self.journal.path and str(self.journal.path),
            time_budget_spent=self.time_budget_spent,
            stopped_by=self.stopping.ended_by(self.told, self.algorithm.finished,
                                              self.time_budget_spent),
            running_time=self.stopping.running_time(),
            checkpoint_peak_bytes=self.checkpoints.peak_bytes,
            resumed_candidates=len(self.checkpoints.resumed),
            resumed_epochs=sum(self.checkpoints.resumed.values()))

