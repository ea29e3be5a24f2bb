"""The executor interface: where the search engine's evaluations run.

The engine hands an executor :class:`Task` s while it has free slots and waits for
:class:`Completion` s; whether they run in this process, on MPI ranks or on a simulated clock
is the executor's business. A new executor implements five members::

    class MyExecutor(Executor):
        n_workers = 4                     # workers evaluating at once
        in_flight: int                    # tasks submitted and not yet returned by wait()
        def submit(self, task): ...       # start evaluating (called only when free_slots > 0)
        def wait(self) -> Completion: ... # block until one submitted task is done

Details (what it may override, ``TimeBudgetSpent``, epochs as they train): docs/executors.md.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Dict, Hashable, Optional, Sequence, Tuple

from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import ConfigurationError
from nord.evaluators.result import EvaluationResult

__all__ = ["Task", "Completion", "Executor", "TimeBudgetSpent", "run_task"]


class TimeBudgetSpent(Exception):
    """Raised by an executor's ``wait`` when the run's time budget is spent: the search
    engine ends the run as finished; evaluations still in flight are abandoned, not told.

    Attributes:
        budget: the time budget, in the executor's seconds.
        clock: the executor's clock when it stopped.
    """

    def __init__(self, budget: float, clock: float):
        super().__init__(f"the time budget of {budget:g} s is spent (clock at {clock:g} s)")
        self.budget = budget
        self.clock = clock


class Task:
    """One candidate to evaluate: its number, genome and the space's key, with the descriptor
    decoded only when someone asks for it, and how far to train it.

    Args:
        number: the candidate's number (``Candidate.number``).
        genome: its genome.
        key: the space's identity of its architecture.
        space: the search space, to decode the genome (None on ranks that do not know it).
        descriptor: the descriptor, when it was decoded already.
        descriptor_json: its JSON, when it came over the wire.
        epochs: train up to this many epochs (None: the evaluator's own setting).
        resume_from: a checkpoint to go on from (its epochs are not trained again).
        checkpoint: the candidate's checkpoint file (None: none), gone on from when it is
            there: see :class:`~nord.evaluators.base.Leg`.
        checkpoint_every: epochs between checkpoints within the leg (0: none).
        keep_at_end: leave a checkpoint when this leg of training ends.
        max_epochs: the most epochs the candidate may train over all its legs (a scheduler's
            ``max_epochs``; None: the evaluator's own setting), which a learning-rate
            schedule spans.

    ``answer`` (None unless set) is the result of a repeat the run charges for (an
    executor whose ``charges_repeats`` is true): the executor occupies a worker for its cost
    instead of evaluating. ``report`` (set where the task runs, never sent) receives each finished epoch's
    :class:`~nord.evaluators.result.EpochRecord`. An evaluator that trains in legs is handed
    these as a :class:`~nord.evaluators.base.Leg`.
    """

    __slots__ = ("number", "genome", "key", "space", "_descriptor", "_json", "epochs",
                 "resume_from", "checkpoint", "checkpoint_every", "keep_at_end", "max_epochs",
                 "report", "answer")

    def __init__(self, number: int, genome: Sequence[Any], key: Hashable = None, space=None,
                 descriptor=None, descriptor_json: Optional[str] = None,
                 epochs: Optional[int] = None, resume_from: Optional[str] = None,
                 checkpoint: Optional[str] = None, checkpoint_every: int = 0,
                 keep_at_end: bool = True, max_epochs: Optional[int] = None):
        self.number = number
        self.genome = genome
        self.key = key
        self.space = space
        self._descriptor = descriptor
        self._json = descriptor_json
        self.epochs = epochs
        self.resume_from = resume_from
        self.checkpoint = checkpoint
        self.checkpoint_every = checkpoint_every
        self.keep_at_end = keep_at_end
        self.max_epochs = max_epochs
        self.report = None
        self.answer = None

    @property
    def decoded(self) -> bool:
        """Whether the descriptor exists already (no decoding needed to send or record it)."""
        return self._descriptor is not None or self._json is not None

    @property
    def descriptor(self):
        """The NeuralDescriptor, decoded on first use (from its JSON, or by the space)."""
        if self._descriptor is None:
            if self._json is not None:
                self._descriptor = NeuralDescriptor.from_json(self._json)
            elif self.space is not None:
                self._descriptor = self.space.to_descriptor(self.genome)
            else:
                raise ConfigurationError(
                    f"candidate {self.number} came without a descriptor and this rank has no "
                    "search space to decode its genome; give the executor the space")
        return self._descriptor

    @property
    def descriptor_json(self) -> Optional[str]:
        """The descriptor's JSON when it was decoded, else None (never decodes)."""
        if self._json is None and self._descriptor is not None:
            self._json = self._descriptor.to_json()
        return self._json

    def message(self, with_descriptor: bool) -> Tuple[Any, ...]:
        """What travels to another rank: number, genome, key, (when asked, or already
        decoded) the descriptor's JSON, and the leg of training."""
        if with_descriptor:
            self.descriptor  # noqa: B018 - decode now, for ranks without the space
        return (self.number, tuple(self.genome), self.key, self.descriptor_json, self.epochs,
                self.resume_from, self.checkpoint, self.checkpoint_every, self.keep_at_end,
                self.max_epochs)

    @classmethod
    def from_message(cls, message, space=None) -> "Task":
        (number, genome, key, descriptor_json, epochs, resume_from, checkpoint, every,
         keep_at_end, max_epochs) = message
        return cls(number, genome, key, space, descriptor_json=descriptor_json, epochs=epochs,
                   resume_from=resume_from, checkpoint=checkpoint, checkpoint_every=every,
                   keep_at_end=keep_at_end, max_epochs=max_epochs)

    def __repr__(self) -> str:
        return f"Task({self.number}, {tuple(self.genome)}, key={self.key!r})"


@dataclass(slots=True)
class Completion:
    """An evaluated task: its result, the world rank that evaluated it, wall-clock times."""

    number: int
    result: EvaluationResult
    worker_rank: int
    started: float
    ended: float


def run_task(evaluator, task: Task, rank: int = 0) -> Completion:
    """Evaluate one task in this process and time it: the executors' common step."""
    started = time.time()
    result = evaluator.evaluate_task(task)
    return Completion(task.number, result, rank, started, time.time())


class Executor:
    """Where evaluations run. A new one implements ``n_workers``, ``in_flight``, ``submit``
    and ``wait`` and is handed to :func:`~nord.search.engine.run_search`; executors are objects
    a run is given, not names, so there is nothing to register::

        class LastInFirstOut(Executor):
            # one worker in this process, the newest task first
            def __init__(self, evaluator):
                self.evaluator, self.tasks = evaluator, []

            n_workers = property(lambda self: 1)
            in_flight = property(lambda self: len(self.tasks))

            def submit(self, task):
                self.tasks.append(task)

            def wait(self):
                return run_task(self.evaluator, self.tasks.pop(), 0)

        summary = run_search(algorithm, executor=LastInFirstOut(evaluator), budget=10)
    """

    #: False on ranks that do not run the engine (MPI workers): run_search calls ``serve`` there.
    is_dispatcher = True
    #: Where finished epochs go: ``on_epoch(number, EpochRecord, worker_rank)`` (or None).
    on_epoch = None
    #: True: a repeat of an architecture the run has evaluated is charged as a benchmark
    #: charges every query: the engine hands it out with its ``Task.answer`` (a simulated
    #: clock occupies a worker for its cost). False: the engine's cache answers it at once.
    charges_repeats = False

    def _local_report(self, task: Task, rank: int) -> None:
        """Point a task evaluated in this process at ``on_epoch``."""
        sink = self.on_epoch
        if sink is not None:
            task.report = lambda record, number=task.number: sink(number, record, rank)

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

    def now(self) -> float:
        """The time the journal records for an event now (default: wall-clock seconds since
        the epoch; a simulated executor gives its simulated clock)."""
        return time.time()

    def start(self) -> None:
        """Prepare for a search (MPI: set up communicators). Called once by ``run_search``."""

    def submit(self, task: Task) -> None:
        """Start evaluating ``task`` (only called when ``free_slots > 0``)."""
        raise NotImplementedError

    def wait(self) -> Completion:
        """Block until a submitted task is evaluated; return it."""
        raise NotImplementedError

    def survivors(self) -> Sequence[int]:
        """After a SIGTERM stopped the run (as mpirun sends when one rank dies): the candidates
        in flight whose evaluating process is known to have lived to get it too, so their
        evaluation killed nothing (see ``Journal.attempts``). Default: none is known, and
        every evaluation in flight counts as one that may have killed its process."""
        return ()

    def close(self, failed: bool = False) -> None:
        """End the search: release the workers. ``failed``: the search ended with an error
        or an interruption, so do not wait for workers that may be gone."""

    def serve(self) -> None:
        """Evaluate tasks until told to stop (ranks that do not run the engine)."""
        raise NotImplementedError(f"{type(self).__name__} runs no workers of its own")

    def describe(self) -> Dict[str, Any]:
        """Ranks, groups and workers, for the journal."""
        return {"ranks": 1, "groups": 1, "workers": self.n_workers, "worker_ranks": [0]}
