"""What a search produces: the outcome of each candidate, progress while it runs, the summary.

Every other room of the engine imports these records; they import nothing of the engine::

    summary = run_search(...)            # a SearchSummary
    summary.best_result.accuracy, summary.counts()
"""
from __future__ import annotations

import math
import time
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Dict, Hashable, Optional

from nord.evaluators.result import EvaluationResult
from nord.search.algorithms.base import Candidate
from nord.search.executors import Task

__all__ = ["RunInfo", "Outcome", "SearchProgress", "SearchSummary", "MODES", "NO_KEY"]

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

    def __init__(self, outcome: Outcome, search: Any):
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
        epochs_trained, legs: with a scheduler, the epochs training cost in this session and
            the legs of training run (None without one).
        checkpoint_peak_bytes: the largest size of the checkpoint folder in this session
            (None where the run keeps no checkpoints).
        resumed_candidates, resumed_epochs: candidates of this session that went on from a
            checkpoint an interrupted session left within their training, and the epochs
            those checkpoints kept from being trained again.
        unusable_checkpoints: with a scheduler, the legs of this session that were to resume
            from a checkpoint that could not be used and trained again from scratch (their
            curves restart; the journal's legs say why).
        time_budget_spent: the executor's time budget ended the run.
        stopped_by: what ended the run, in words: a budget (of evaluations, of running time,
            of the simulated clock), a target reached, or the algorithm's own end.
        running_time: seconds the run has run, its earlier sessions included (wall-clock
            seconds of this process's sessions; the simulated clock is ``wall_time``'s
            business elsewhere).
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
    unusable_checkpoints: Optional[int] = None
    time_budget_spent: bool = False
    resumed_candidates: int = 0
    resumed_epochs: int = 0
    stopped_by: str = ""
    running_time: float = 0.0

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

