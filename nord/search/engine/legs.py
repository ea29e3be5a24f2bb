"""The search engine with a scheduler: candidates train in legs, paused and resumed.

``run_search(..., scheduler=make_scheduler('asha', ...))`` runs this; everything else about the
engine (budget, identity and cache, journal, executors, resume) is as without a scheduler.
At the end of each leg the scheduler decides: go on, pause (a checkpoint waits for a
promotion), stop, or done; promotions and continuations go to the front of the queue.

Details (legs, telling, the journal, checkpoints, budget): docs/engine.md; the decisions
themselves: docs/schedulers.md.
"""
from __future__ import annotations

import logging
from typing import Callable, Dict, Hashable, List, Optional, Set, Union

from nord.evaluators.result import EvaluationResult
from nord.evaluators.stop_rules import stopped_by_rule
from nord.journal import Journal, LegRecord
from nord.journal.recorder import NoJournal
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.engine.checkpoints import Checkpoints
from nord.search.engine.loop import Search, killed_result
from nord.search.engine.outcomes import Outcome, SearchProgress
from nord.search.engine.stopping import Stopping
from nord.search.executors import Completion, Executor, Task
from nord.search.schedulers import CONTINUE, DONE, RUNGS_METRIC, STOP, Scheduler

__all__ = ["ScheduledSearch"]

logger = logging.getLogger(__name__)


class ScheduledSearch(Search):
    """A :class:`~nord.search.engine.loop.Search` whose candidates a scheduler trains in legs."""

    promotes = True
    trains_told = True

    def __init__(self, algorithm: SearchAlgorithm, executor: Executor,
                 journal: Union[Journal, NoJournal], budget: int, mode: str, batch_size: int,
                 on_result: Optional[Callable[[SearchProgress], None]], scheduler: Scheduler,
                 checkpoints: Checkpoints, checkpoint_every: int = 0,
                 stopping: Optional[Stopping] = None):
        super().__init__(algorithm, executor, journal, budget, mode, batch_size, on_result,
                         scheduler=scheduler, checkpoints=checkpoints,
                         checkpoint_every=checkpoint_every, stopping=stopping)
        self.event = 0                             # orders leg hand-outs and ends
        self.leg_count = 0
        self.legs: Dict[int, LegRecord] = {}       # candidate -> its leg in flight
        self.latest: Dict[int, Outcome] = {}       # candidate -> result at its highest epochs
        self.reached: Dict[int, List[List]] = {}   # candidate -> [epochs, accuracy] per leg ended
        self.basis: Dict[int, Task] = {}           # candidate -> its task (genome, descriptor)
        self.told_numbers: Set[int] = set()
        self.legs_run = 0
        self.epochs_trained = 0
        self.unusable_checkpoints = 0              # legs that could not resume their checkpoint
        self.batches = 0

    # --- legs ------------------------------------------------------------------------------
    def queue_leg(self, number: int, start: int, target: int, first: bool = False,
                  again: Optional[LegRecord] = None) -> None:
        """Hand out a leg from ``start`` to ``target`` epochs (continuations to the front);
        ``again``: the journal's record of a leg that was in flight when the run stopped, which
        runs again under its own number and hand-out event."""
        basis = self.basis.get(number) or self._rebuild_basis(number)
        path = self.checkpoints.path(number)
        task = Task(number, basis.genome, basis.key, self.space, basis._descriptor,
                    basis._json, epochs=target, resume_from=path if start > 0 else None,
                    checkpoint=path, checkpoint_every=self.checkpoint_every,
                    keep_at_end=target < self.scheduler.max_epochs)
        if again is None:
            self.event += 1
            self.leg_count += 1
            leg = LegRecord(self.leg_count, number, start, target, self.event, self.now())
            self.recorder.leg(leg)
        else:
            leg = again
        self.legs[number] = leg
        self.tasks[number] = task
        if first:
            self.queue.append(task)
        else:
            self.queue.appendleft(task)

    def _rebuild_basis(self, number: int) -> Task:
        """After a resume: the task of a candidate told before the stop and promoted now."""
        genome = self.latest[number].candidate.genome
        key, descriptor = self.space.identify(genome)
        self.basis[number] = Task(number, genome, key, self.space, descriptor)
        return self.basis[number]

    def start(self, candidate: Candidate, key: Hashable, descriptor) -> None:
        """Start the first leg of a candidate whose architecture is new to the run."""
        self.basis[candidate.number] = Task(candidate.number, candidate.genome, key, self.space,
                                            descriptor)
        self.queue_leg(candidate.number, 0, self.scheduler.first_epochs(candidate.number),
                       first=True)

    def join(self, candidate: Candidate, key: Hashable, descriptor) -> None:
        """Where repeats are charged, a repeat trains in legs of its own, as any candidate
        (the benchmark answers each query at the fidelity asked); else it waits."""
        if self.charge_repeats:
            self.start(candidate, key, descriptor)
        else:
            super().join(candidate, key, descriptor)

    def reuse(self, candidate: Candidate, earlier: Outcome) -> None:
        if self.charge_repeats:
            self.start(candidate, earlier.key, None)
        else:
            super().reuse(candidate, earlier)

    def collect(self) -> None:
        """Wait for a leg (or a charged repeat) and end it."""
        done = self.executor.wait()
        if done.number in self.repeats:
            self.end_repeat(done)
        else:
            self.end_leg(done)

    def end_leg(self, done: Completion) -> None:
        """A leg is back: let the scheduler decide; tell, continue, pause or release."""
        number = done.number
        task = self.tasks.pop(number)
        task.report = None   # it points back at this search: the outcome keeps the task
        leg = self.legs.pop(number)
        self.legs_run += 1
        self.busy_time += max(0.0, done.ended - done.started)
        result = done.result
        resumed = int(result.metrics.get("epochs_resumed", leg.start_epochs) or 0)
        self.checkpoints.note_resumed(number, result.metrics, leg.start_epochs)
        reached = min(leg.target_epochs, result.epochs or leg.target_epochs)
        self.epochs_trained += max(0, reached - resumed) if result.ok else 0
        outcome = Outcome(self.pending_or_told(number), result, task.key, task,
                          worker_rank=done.worker_rank, started=done.started, ended=done.ended)
        self.latest[number] = outcome
        self.reached.setdefault(number, []).append([leg.target_epochs, result.accuracy])
        # a candidate a stopping rule ended is out, as a failure is, whatever its accuracy
        decision = self.scheduler.report(number, leg.target_epochs, result.accuracy,
                                         result.ok and not stopped_by_rule(result.metrics))
        self.event += 1
        leg.ended_event, leg.ended, leg.result, leg.decision = self.event, done.ended, result, decision
        leg.worker_rank = done.worker_rank
        leg.detail = str(result.metrics.get("checkpoint", ""))
        if leg.detail:
            self.unusable_checkpoints += 1
        self.recorder.leg(leg)
        if decision == CONTINUE:
            self.queue_leg(number, leg.target_epochs, self.scheduler.next_epochs(number))
        elif decision in (STOP, DONE):
            self.checkpoints.delete(number)
        if self.mode == "async" and decision != CONTINUE and number not in self.told_numbers:
            self.release(number)
        self.track_disk()

    def pending_or_told(self, number: int) -> Candidate:
        candidate = self.pending.get(number)
        return candidate if candidate is not None else self.latest[number].candidate

    def release(self, number: int) -> None:
        """Tell candidate ``number`` (at its highest epochs) and the repeats waiting for it;
        its result's ``metrics['rungs']`` holds ``[epochs, accuracy]`` at each rung it passed
        on the way (what multi-fidelity algorithms such as BOHB learn from)."""
        outcome = self.latest[number]
        earlier = self.reached.get(number, [])[:-1]
        if earlier:   # its rungs below the one it is told at (a copy: the leg keeps its own)
            outcome.result = outcome.result.copy()
            outcome.result.metrics[RUNGS_METRIC] = [list(rung) for rung in earlier]
        self.told_numbers.add(number)
        self.evaluated += 1
        key = outcome.key
        self.evaluating.pop(key, None)
        self.cache.setdefault(key, outcome)
        self.finish(outcome)
        for waiter in self.waiting.pop(key, ()):
            self.reuse(waiter, outcome)

    def track_disk(self) -> None:
        """Checkpoints no promotion can reach any more go; the folder's peak is measured."""
        for number in self.scheduler.releasable():
            self.checkpoints.delete(number)
        self.checkpoints.measure()

    def promote(self, free: int) -> int:
        """Queue up to ``free`` promotions of paused candidates; how many were queued (none
        once a time budget or a target has ended the run)."""
        if self.stopping.limit() is not None:
            return 0
        chosen = self.scheduler.promotions(free)
        for number, target in chosen:
            self.queue_leg(number, self.scheduler.epochs[number], target)
        return len(chosen)

    # --- what a scheduler changes in the two loops -------------------------------------------
    def next_batch_size(self) -> int:
        return self.scheduler.batch_size(self.batches, self.batch_size, self.executor.n_workers)

    def decide_batch(self, batch: List[int]) -> None:
        """The batch is decided: tell it, each candidate at its highest rung."""
        for number in batch:
            if number in self.latest and number not in self.told_numbers:
                self.release(number)

    def batch_started(self, batch: List[int]) -> None:
        self.scheduler.start_batch(batch)
        self.batches += 1

    def requeue_in_flight(self) -> List[int]:
        """After a replay: legs that were running when the run stopped run again, candidates
        asked but never started start; in sync mode, returns the batch in progress."""
        for number, row in sorted(self.resumed_legs.items(), key=lambda item: item[1]["leg"]):
            again = LegRecord(row["leg"], number, row["start_epochs"], row["target_epochs"],
                              row["started_event"], row["started"])
            if number in self.killed:
                self.give_up_leg(number, again)
            else:
                self.queue_leg(number, row["start_epochs"], row["target_epochs"], first=True,
                               again=again)
        started = set(self.resumed_legs) | set(self.latest)
        self.resumed_legs = {}
        for number in sorted(self.pending):
            if number not in started and number not in self.ready:
                self.prepare(self.pending[number])
        return sorted(self.pending) if self.mode == "sync" else []

    resumed_legs: Dict[int, Dict] = {}

    def resume_training(self) -> Set[int]:
        """After the algorithm's replay: the scheduler rebuilt from the journal's legs; the
        candidates whose leg was in training when the run stopped (promoted ones too)."""
        replay_scheduler(self)
        return set(self.resumed_legs)

    def give_up_leg(self, number: int, leg: LegRecord) -> None:
        """A leg whose training killed the run's process ``max_attempts`` times ends as a
        failed result at its rung (the scheduler stops the candidate), so the run goes on."""
        self.legs[number] = leg
        self.tasks[number] = self.basis.get(number) or self._rebuild_basis(number)
        now = self.now()
        self.end_leg(Completion(number, killed_result(number, self.killed.pop(number)),
                                None, now, now))

    def best(self):
        """The run's best candidate and result: the best search accuracy among the
        candidates trained furthest (a candidate paused early is not compared with one
        trained to ``max_epochs``)."""
        finished = [o for o in self.latest.values() if o.result.ok]
        if not finished:
            return None, None
        top = max(o.result.epochs for o in finished)
        outcome = max((o for o in finished if o.result.epochs == top),
                      key=lambda o: (o.result.accuracy, -o.candidate.number))
        return outcome.candidate, outcome.result

    def finish_run(self) -> None:
        """The run is over: no checkpoint can be promoted any more (the folder itself goes
        when the run closes it)."""
        self.checkpoints.release(list(self.scheduler.epochs))

    def summary(self):
        summary = super().summary()
        summary.best, summary.best_result = self.best()
        summary.epochs_trained = self.epochs_trained
        summary.legs = self.legs_run
        summary.unusable_checkpoints = self.unusable_checkpoints
        return summary


def replay_scheduler(search: ScheduledSearch) -> None:
    """After the algorithm's replay: rebuild the scheduler from the journal's legs, in the
    order they were handed out and ended; remember the legs that were in flight."""
    legs = search.journal.legs()
    events = []
    for leg in legs:
        events.append((leg["started_event"], 0, leg))
        if leg["ended_event"] is not None:
            events.append((leg["ended_event"], 1, leg))
    events.sort(key=lambda item: (item[0], item[1]))
    batches = _batches(search)
    started_batches: Set[int] = set()
    in_flight: Dict[int, Dict] = {}
    rows = {row["candidate"]: row for row in search.journal.evaluations(told=True)}
    for _, kind, leg in events:
        number = leg["candidate"]
        if kind == 0:
            batch = batches.get(number)
            if search.mode == "sync" and batch is not None and batch[0] not in started_batches:
                started_batches.add(batch[0])
                search.scheduler.start_batch(batch)
                search.batches += 1
            if leg["start_epochs"] == 0:
                search.scheduler.first_epochs(number)
            else:
                search.scheduler.sent_on(number, leg["start_epochs"])
            in_flight[number] = leg
        else:
            search.scheduler.report(number, leg["target_epochs"], leg["accuracy"],
                                    leg["status"] == "ok" and not stopped_by_rule(
                                        (leg["result"] or {}).get("metrics") or {}))
            search.reached.setdefault(number, []).append(
                [leg["target_epochs"], (leg["result"] or {}).get("accuracy", leg["accuracy"])])
            in_flight.pop(number, None)
            result = EvaluationResult.from_dict(leg["result"] or {"status": "failed"})
            candidate = search.pending.get(number) or Candidate(
                tuple(rows[number]["genome"]) if number in rows else (), 0, number)
            search.latest[number] = Outcome(candidate, result, rows[number]["key"]
                                            if number in rows else None)
        search.event = max(search.event, leg["started_event"], leg["ended_event"] or 0)
    search.leg_count = max((leg["leg"] for leg in legs), default=0)
    search.told_numbers = set(rows)
    for number, row in rows.items():
        if number in search.latest:
            search.latest[number].key = row["key"]
    # the candidates asked but not told: their genomes and keys, to go on training them
    for number, candidate in search.pending.items():
        if number not in search.latest and number not in in_flight:
            continue     # never started: prepared again
        key, descriptor = search.space.identify(candidate.genome)
        search.basis[number] = Task(number, candidate.genome, key, search.space, descriptor)
        search.evaluating[key] = number
        if number in search.latest:
            search.latest[number] = Outcome(candidate, search.latest[number].result, key,
                                            search.basis[number])
    search.resumed_legs = in_flight


def _batches(search: ScheduledSearch) -> Dict[int, List[int]]:
    """Candidate -> the batch it was asked in (sync mode: asked at the same told count)."""
    groups: Dict[int, List[int]] = {}
    for row in search.journal.candidates():
        groups.setdefault(row["told_before"], []).append(row["candidate"])
    return {number: sorted(members) for members in groups.values() for number in members}
