"""Legs: the ledger of a run whose scheduler trains candidates in legs, paused and resumed.

A candidate trains from ``start`` to ``target`` epochs at a time; at the end of each leg the
scheduler decides: go on, pause (a checkpoint waits for a promotion), stop, or done. The one
:class:`~nord.search.engine.loop.Search` holds a :class:`Legs` and asks it for the task of
each leg and to end each leg that comes back; what the loop then does (queue the next leg,
tell the candidate, delete its checkpoint) follows the decision::

    task = legs.first(candidate.number, candidate.genome, key, descriptor, epochs)
    ...
    leg = legs.end(done, task, candidate)      # leg.decision: CONTINUE, PAUSE, STOP or DONE

Under :class:`~nord.search.schedulers.TrainToEnd` it stays empty. Details (legs, telling, the
journal, checkpoints, budget): docs/engine.md; the decisions themselves: docs/schedulers.md.
"""
from __future__ import annotations

from typing import Callable, Dict, Hashable, List, Optional, Set, Tuple, Union

from nord.evaluators.result import EvaluationResult
from nord.evaluators.stop_rules import stopped_by_rule
from nord.journal import LegRecord
from nord.journal.recorder import RunRecorder
from nord.search.algorithms.base import Candidate
from nord.search.engine.checkpoints import CheckpointStore
from nord.search.engine.outcomes import Outcome
from nord.search.executors import Completion, Task
from nord.search.schedulers import RUNGS_METRIC, Scheduler, TrainToEnd

__all__ = ["Legs"]


class Legs:
    """The legs of one run: those in flight, each candidate's latest result and the rungs it
    reached, and what training them cost.

    Args:
        scheduler: decides at the end of each leg.
        space: the search space, to decode a candidate promoted after a resume.
        recorder: the journal's recorder (every leg is journaled as it is handed out and ends).
        checkpoints: where legs leave their checkpoints.
        checkpoint_every: epochs between the checkpoints within a leg.
        now: the journal's clock.
    """

    def __init__(self, scheduler: Union[Scheduler, TrainToEnd], space, recorder: RunRecorder,
                 checkpoints: CheckpointStore, checkpoint_every: int,
                 now: Callable[[], float]):
        self.scheduler = scheduler
        self.space = space
        self.recorder = recorder
        self.checkpoints = checkpoints
        self.checkpoint_every = checkpoint_every
        self.now = now
        self.event = 0                                # orders leg hand-outs and ends
        self.count = 0                                # legs journaled, earlier sessions' too
        self.in_flight: Dict[int, LegRecord] = {}     # candidate -> its leg handed out
        self.latest: Dict[int, Outcome] = {}          # candidate -> result at its highest epochs
        self.reached: Dict[int, List[List]] = {}      # candidate -> [epochs, accuracy] per leg
        self.basis: Dict[int, Task] = {}              # candidate -> its genome and descriptor
        self.told: Set[int] = set()                   # candidates told (a later leg may train)
        self.trained: Dict[int, None] = {}            # candidates that trained in legs, in order
        self.resumed: Dict[int, LegRecord] = {}       # legs in flight when the run stopped
        self.ended = 0                                # legs ended in this session
        self.epochs_trained = 0
        self.unusable_checkpoints = 0                 # legs that could not resume a checkpoint

    # --- handing out -----------------------------------------------------------------------
    def first(self, number: int, genome, key: Hashable, descriptor, epochs: int) -> Task:
        """The task of a new candidate's first leg, to ``epochs``."""
        self.basis[number] = Task(number, genome, key, self.space, descriptor)
        return self.hand_out(number, 0, epochs)

    def hand_out(self, number: int, start: int, target: int,
                 again: Optional[LegRecord] = None) -> Task:
        """The task of a leg from ``start`` to ``target`` epochs, journaled as handed out;
        ``again``: the journal's record of a leg that was in flight when the run stopped,
        which runs again under its own number and hand-out event."""
        basis = self.basis_of(number)
        path = self.checkpoints.path(number)
        task = Task(number, basis.genome, basis.key, self.space, basis._descriptor,
                    basis._json, epochs=target, resume_from=path if start > 0 else None,
                    checkpoint=path, checkpoint_every=self.checkpoint_every,
                    keep_at_end=target < self.scheduler.max_epochs,
                    max_epochs=self.scheduler.max_epochs)
        if again is None:
            self.event += 1
            self.count += 1
            leg = LegRecord(self.count, number, start, target, self.event, self.now())
            self.recorder.leg(leg)
        else:
            leg = again
        self.in_flight[number] = leg
        self.trained[number] = None
        return task

    def reopen(self, number: int, leg: LegRecord) -> Task:
        """A leg that was in flight when the run stopped, open again without being handed out
        (it ends at once, given up); the candidate's task."""
        self.in_flight[number] = leg
        return self.basis_of(number)

    def basis_of(self, number: int) -> Task:
        """The task that holds candidate ``number``'s genome, key and descriptor (decoded
        again for a candidate told before a resume and promoted after it)."""
        basis = self.basis.get(number)
        if basis is None:
            genome = self.latest[number].candidate.genome
            key, descriptor = self.space.identify(genome)
            basis = self.basis[number] = Task(number, genome, key, self.space, descriptor)
        return basis

    # --- ending ----------------------------------------------------------------------------
    def end(self, done: Completion, task: Task, candidate: Candidate) -> LegRecord:
        """A leg is back: the scheduler decides (``leg.decision``), the leg is journaled, and
        its result is the candidate's latest."""
        number = done.number
        leg = self.in_flight.pop(number)
        self.ended += 1
        result = done.result
        resumed = int(result.metrics.get("epochs_resumed", leg.start_epochs) or 0)
        self.checkpoints.note_resumed(number, result.metrics, leg.start_epochs)
        reached = min(leg.target_epochs, result.epochs or leg.target_epochs)
        self.epochs_trained += max(0, reached - resumed) if result.ok else 0
        self.latest[number] = Outcome(candidate, result, task.key, task,
                                      worker_rank=done.worker_rank, started=done.started,
                                      ended=done.ended)
        self.reached.setdefault(number, []).append([leg.target_epochs, result.accuracy])
        # a candidate a stopping rule ended is out, as a failure is, whatever its accuracy
        decision = self.scheduler.report(number, leg.target_epochs, result.accuracy,
                                         result.ok and not stopped_by_rule(result.metrics))
        self.event += 1
        leg.ended_event, leg.ended, leg.result, leg.decision = (self.event, done.ended, result,
                                                                decision)
        leg.worker_rank = done.worker_rank
        leg.detail = str(result.metrics.get("checkpoint", ""))
        if leg.detail:
            self.unusable_checkpoints += 1
        self.recorder.leg(leg)
        return leg

    def tell(self, number: int) -> Outcome:
        """Candidate ``number``'s outcome to tell, at its highest epochs; its result's
        ``metrics['rungs']`` holds ``[epochs, accuracy]`` at each rung it passed on the way
        (what multi-fidelity algorithms such as BOHB learn from)."""
        outcome = self.latest[number]
        earlier = self.reached.get(number, [])[:-1]
        if earlier:   # its rungs below the one it is told at (a copy: the leg keeps its own)
            outcome.result = outcome.result.copy()
            outcome.result.metrics[RUNGS_METRIC] = [list(rung) for rung in earlier]
        self.told.add(number)
        return outcome

    # --- the run's outcome -----------------------------------------------------------------
    def best(self) -> Tuple[Optional[Candidate], Optional[EvaluationResult]]:
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
