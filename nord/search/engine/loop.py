"""Search: the loop of one run on the rank that runs the engine (ask, identify, evaluate, tell).

:func:`~nord.search.engine.run.run_search` builds one and calls ``run_sync`` or ``run_async``.
Where runs differ, the loop asks its scheduler and does what the answer says: how far a new
candidate's first leg trains (None, under :class:`~nord.search.schedulers.TrainToEnd`: to the
end, in one evaluation), what a leg's end decides, which paused candidates go on, how large
each synchronous batch is. The legs themselves are kept by :class:`~nord.search.engine.legs.Legs`.
"""
from __future__ import annotations

import logging
import time
import traceback
from collections import deque
from typing import Deque, Dict, Hashable, List, Optional, Set, Union

from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import NordError
from nord.evaluators.result import EvaluationResult
from nord.journal import Journal, LegRecord
from nord.journal.recorder import NoJournal, recorder_for
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.engine.checkpoints import CheckpointStore, NoCheckpoints
from nord.search.engine.legs import Legs
from nord.search.engine.outcomes import NO_KEY, Outcome, SearchProgress, SearchSummary
from nord.search.engine.settings import MAX_ATTEMPTS, Reporting, Training
from nord.search.engine.stopping import Stopping
from nord.search.executors import Completion, Executor, Task
from nord.search.schedulers import CONTINUE, DONE, STOP

__all__ = ["Search", "MAX_ATTEMPTS", "killed_result"]

logger = logging.getLogger(__name__)


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
    """The state of one call of run_search on the rank that runs the engine.

    Args:
        algorithm: asked for candidates and told their results.
        executor: evaluates the tasks handed out.
        journal: where the run is recorded (a ``NoJournal`` keeps nothing).
        stopping: the run's limits (its ``budget`` is the loops' count).
        mode: 'sync' or 'async'.
        batch_size: the synchronous batch size given or set (the scheduler may size each).
        training: its ``scheduler`` (never None here), ``checkpoint_every``.
        reporting: its ``on_result`` and ``on_epoch``.
        checkpoints: where candidates in training keep their checkpoints, if anywhere.
    """

    def __init__(self, algorithm: SearchAlgorithm, executor: Executor,
                 journal: Union[Journal, NoJournal], stopping: Stopping, mode: str,
                 batch_size: int, training: Training, reporting: Reporting = Reporting(),
                 checkpoints: CheckpointStore = NoCheckpoints()):
        self.algorithm = algorithm
        self.scheduler = training.scheduler
        self.in_legs = self.scheduler.trains_in_legs   # its decisions come at ends of legs
        self.space = algorithm.space
        self.executor = executor
        self.journal = journal
        self.budget = stopping.budget
        self.mode = mode
        self.asynchronous = mode == "async"
        self.batch_size = batch_size
        self.batches = 0                               # synchronous batches asked
        self.on_result = reporting.on_result
        self.on_epoch = reporting.on_epoch
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
        # a benchmark answers each query at the fidelity asked: under a scheduler that trains
        # in legs, a charged repeat trains in legs of its own
        self.repeats_train = self.charge_repeats and self.in_legs
        self.repeats: Dict[int, Outcome] = {}          # candidate -> the outcome it repeats
        self.waiting: Dict[Hashable, List[Candidate]] = {}   # key -> candidates waiting for it
        self.recorder = recorder_for(journal)          # the journal's rows until a commit
        self.recording = self.recorder.keeps           # else its calls are skipped
        self.killed: Dict[int, int] = {}               # candidate -> deaths while evaluating it
        self.evaluated = self.cached = self.undecodable = self.failed = self.replayed = 0
        self.busy_time = 0.0
        self.time_budget_spent = False
        self.checkpoints = checkpoints
        self.checkpoint_every = training.checkpoint_every
        self.stopping = stopping
        self.limited = self.stopping.limited           # a limit besides the budget is set
        self.now = executor.now   # the journal's clock: wall-clock or simulated seconds
        self.legs = Legs(self.scheduler, self.space, self.recorder, checkpoints,
                         self.checkpoint_every, self.now)
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
        """Queue the training of a candidate whose architecture is new to the run, as its
        scheduler says: its first leg, or (``first_epochs`` None) one evaluation to the end."""
        number = candidate.number
        if number in self.killed:
            self.give_up(candidate, key)
            return
        epochs = self.scheduler.first_epochs(number)
        if epochs is not None:
            self.tasks[number] = task = self.legs.first(number, candidate.genome, key,
                                                        descriptor, epochs)
        else:
            task = Task(number, candidate.genome, key, self.space, descriptor)
            self.checkpoints.attach(task, self.checkpoint_every)
            self.tasks[number] = task
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
        """A candidate whose architecture is being evaluated waits for that result (a charged
        repeat under a scheduler that trains in legs trains its own)."""
        if self.repeats_train:
            self.start(candidate, key, descriptor)
        else:
            self.waiting.setdefault(key, []).append(candidate)

    def reuse(self, candidate: Candidate, earlier: Outcome) -> None:
        """Answer a repeat of an architecture evaluated earlier in the run: from the cache at
        once, or, where the executor charges repeats, after a worker has spent its cost (under
        a scheduler that trains in legs, by training it in legs of its own)."""
        if self.repeats_train:
            self.start(candidate, earlier.key, None)
            return
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

    def end_repeat(self, done: Completion) -> None:
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
        """Wait for one evaluation, leg of training or charged repeat, and end it."""
        done = self.executor.wait()
        number = done.number
        if number in self.repeats:
            self.end_repeat(done)
        elif number in self.legs.in_flight:
            self.end_leg(done)
        else:
            self.end_evaluation(done)

    def end_evaluation(self, done: Completion) -> None:
        """A candidate trained to the end is back: its outcome, and every candidate waiting
        for its architecture."""
        task = self.tasks.pop(done.number)
        task.report = None   # it points back at this search: the outcome keeps the task
        spent = done.ended - done.started
        if spent > 0:   # max(0.0, spent) without the call: a clock that stepped back adds nothing
            self.busy_time += spent
        self.checkpoints.ended(done.number, done.result.metrics)
        self.evaluation_over(Outcome(self.pending[done.number], done.result, task.key, task,
                                     done.worker_rank, done.started, done.ended))

    def evaluation_over(self, outcome: Outcome) -> None:
        """An architecture's evaluation is over: its outcome is kept for repeats, finished,
        and reused for every candidate that waited for it."""
        self.evaluated += 1
        key = outcome.key
        self.evaluating.pop(key, None)
        self.cache.setdefault(key, outcome)
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

    # --- legs of training ----------------------------------------------------------------
    def queue_leg(self, number: int, start: int, target: int, first: bool = False,
                  again: Optional[LegRecord] = None) -> None:
        """Queue a leg from ``start`` to ``target`` epochs (continuations and promotions to
        the front: finishing good candidates comes before starting new ones); ``again``: the
        journal's record of a leg that was in flight when the run stopped."""
        task = self.legs.hand_out(number, start, target, again)
        self.tasks[number] = task
        if first:
            self.queue.append(task)
        else:
            self.queue.appendleft(task)

    def end_leg(self, done: Completion) -> None:
        """A leg is back: do what the scheduler decided (go on, pause, stop, done); in async
        mode a candidate whose training stopped is told the first time it does."""
        number = done.number
        task = self.tasks.pop(number)
        task.report = None   # it points back at this search: the outcome keeps the task
        self.busy_time += max(0.0, done.ended - done.started)
        leg = self.legs.end(done, task, self.pending_or_told(number))
        decision = leg.decision
        if decision == CONTINUE:
            self.queue_leg(number, leg.target_epochs, self.scheduler.next_epochs(number))
        elif decision in (STOP, DONE):
            self.checkpoints.delete(number)
        if self.asynchronous and decision != CONTINUE and number not in self.legs.told:
            self.release(number)
        self.track_disk()

    def pending_or_told(self, number: int) -> Candidate:
        candidate = self.pending.get(number)
        return candidate if candidate is not None else self.legs.latest[number].candidate

    def release(self, number: int) -> None:
        """Tell candidate ``number`` at its highest epochs, and the repeats waiting for it."""
        self.evaluation_over(self.legs.tell(number))

    def track_disk(self) -> None:
        """Checkpoints no promotion can reach any more go; the folder's peak is measured."""
        for number in self.scheduler.releasable():
            self.checkpoints.delete(number)
        self.checkpoints.measure()

    def promote(self, free: int) -> int:
        """Queue up to ``free`` promotions of paused candidates, as the scheduler chooses; how
        many were queued (none once a time budget or a target has ended the run, and none
        where candidates do not train in legs)."""
        if not self.in_legs or self.stopping.limit() is not None:
            return 0
        chosen = self.scheduler.promotions(free)
        for number, target in chosen:
            self.queue_leg(number, self.scheduler.epochs[number], target)
        return len(chosen)

    def give_up_leg(self, number: int, leg: LegRecord) -> None:
        """A leg whose training killed the run's process ``max_attempts`` times ends as a
        failed result at its rung (the scheduler stops the candidate), so the run goes on."""
        self.tasks[number] = self.legs.reopen(number, leg)
        now = self.now()
        self.end_leg(Completion(number, killed_result(number, self.killed.pop(number)),
                                None, now, now))

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
        executor, queue, promote, promotes = self.executor, self.queue, self.promote, self.in_legs
        dispatch, ask, prepare = self.dispatch, self.ask, self.prepare
        flush = self.recorder.commit if self.recording else None   # self.flush, a call fewer
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

    # --- resuming and ending ---------------------------------------------------------------
    def in_training(self) -> Set[int]:
        """After a replay (:func:`~nord.search.engine.replay.replay`): the candidates that
        were in training when the run stopped, those of a leg in flight included."""
        return set(self.legs.resumed) | {number for number in self.pending
                                         if number not in self.ready
                                         and number not in self.legs.latest}

    def requeue_in_flight(self) -> List[int]:
        """After a replay: legs that were running when the run stopped run again (from their
        checkpoints), candidates asked but not evaluated are prepared again, in order; in
        sync mode, returns the batch in progress."""
        for number, leg in sorted(self.legs.resumed.items(), key=lambda item: item[1].leg):
            if number in self.killed:
                self.give_up_leg(number, leg)
            else:
                self.queue_leg(number, leg.start_epochs, leg.target_epochs, first=True,
                               again=leg)
        started = set(self.legs.resumed) | set(self.legs.latest)
        self.legs.resumed = {}
        for number in sorted(self.pending):
            if number not in started and number not in self.ready:
                self.prepare(self.pending[number])
        return sorted(self.pending) if self.mode == "sync" else []

    def finish_run(self) -> None:
        """The run is over: no checkpoint can be promoted any more (the folder itself goes
        when the run closes it)."""
        self.checkpoints.release(list(self.legs.trained))

    # --- synchronous batches ---------------------------------------------------------------
    def next_batch_size(self) -> int:
        """The size of the next synchronous batch, as the scheduler sets it."""
        return self.scheduler.batch_size(self.batches, self.batch_size, self.executor.n_workers)

    def decide_batch(self, batch: List[int]) -> None:
        """A synchronous batch has nothing left in flight: every candidate's outcome is made
        ready to be told, a candidate trained in legs at its highest rung."""
        for number in batch:
            if number in self.legs.latest and number not in self.legs.told:
                self.release(number)

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
        self.scheduler.start_batch(batch)
        self.batches += 1
        for candidate in asked:
            self.prepare(candidate)
        return batch

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
        """The run's summary; where candidates trained in legs, its best is the best among
        those trained furthest, and it counts the legs and the epochs they cost."""
        summary = SearchSummary(
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
        if self.in_legs:
            summary.best, summary.best_result = self.legs.best()
            summary.epochs_trained = self.legs.epochs_trained
            summary.legs = self.legs.ended
            summary.unusable_checkpoints = self.legs.unusable_checkpoints
        return summary
