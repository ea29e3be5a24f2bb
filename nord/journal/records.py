"""What travels into the journal: a run, its proposals, its results and its legs of training.

    from nord.journal import EvaluationRecord, evaluation_result
    journal.record(evaluations=[EvaluationRecord(0, 0, 0, genome, key, None, 1, result)])
    result = evaluation_result(journal.evaluations()[0])   # and back again

The row functions turn a record into the values of its table's row (``nord.journal.schema``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from nord.evaluators.result import EvaluationResult
from nord.journal.schema import EVALUATION_COLUMNS, LEG_COLUMNS, RESULT_COLUMNS
from nord.jsonable import dumps, plain

__all__ = ["RunRecord", "CandidateRecord", "EvaluationRecord", "LegRecord",
           "SearchEpochRecord", "evaluation_row", "leg_row", "search_epoch_row",
           "evaluation_result"]


@dataclass
class RunRecord:
    """What a run is, as the journal stores it.

    The fields in :attr:`MUST_MATCH` decide what a run measures: a resumed run must have the
    same ones (``batch_size`` only when given: None takes the journal's). ``budget`` and
    ``execution`` (where and how the run executes: ranks, workers, device, threads ...) may
    change when it is resumed.

    Attributes:
        algorithm: the algorithm's name.
        parameters: its settings (``SearchAlgorithm.parameters()``).
        seed: its seed.
        space: the search space (``SearchSpace.describe()``).
        evaluator: how candidates are evaluated (``Evaluator.describe()``).
        dataset: the data set, when there is one.
        mode: 'sync' or 'async'.
        batch_size: candidates per synchronous batch (None in async mode).
        budget: evaluations in the run.
        execution: ranks, groups, workers, worker ranks and other settings of where it runs.
        config: the settings a runner needs to start the run again (e.g. ``RunConfig``
            without its execution settings), or empty.
        extra: anything else to keep (free-form).
        scheduler: the scheduler's settings (empty without one).
    """

    algorithm: str
    parameters: Dict[str, Any]
    seed: Any
    space: Dict[str, Any]
    evaluator: Dict[str, Any] = field(default_factory=dict)
    dataset: Optional[Dict[str, Any]] = None
    mode: str = "sync"
    batch_size: Optional[int] = None
    budget: int = 0
    execution: Dict[str, Any] = field(default_factory=dict)
    config: Dict[str, Any] = field(default_factory=dict)
    extra: Dict[str, Any] = field(default_factory=dict)
    scheduler: Dict[str, Any] = field(default_factory=dict)

    MUST_MATCH = ("algorithm", "seed", "parameters", "space", "evaluator", "dataset", "mode",
                  "batch_size", "config", "scheduler")

    def differences(self, stored: "RunRecord", compare: Sequence[str] = MUST_MATCH
                    ) -> List[Tuple[str, Any, Any]]:
        """``(field, stored value, this value)`` for every field of ``compare`` (default: all
        that must match) that differs."""
        found = []
        for name in compare:
            mine = plain(getattr(self, name))
            theirs = plain(getattr(stored, name))
            if name == "batch_size" and mine is None:
                continue
            if (name == "dataset" and isinstance(theirs, dict) and isinstance(mine, dict)
                    and "files" not in theirs):   # recorded before runs noted their files
                mine = {key: value for key, value in mine.items() if key != "files"}
            if (name == "evaluator" and isinstance(theirs, dict) and isinstance(mine, dict)
                    and "ranks_per_network" not in theirs
                    and mine.get("ranks_per_network") == 1):
                # a weight-sharing search recorded before searches ran on several ranks ran
                # on one: resuming it on one changes nothing it measured
                mine = {key: value for key, value in mine.items() if key != "ranks_per_network"}
            if mine != theirs:
                found.append(_first_difference(name, theirs, mine))
        return found


def _first_difference(name: str, theirs: Any, mine: Any) -> Tuple[str, Any, Any]:
    """The innermost differing entry of two settings, named ``field.key.key``."""
    while isinstance(theirs, dict) and isinstance(mine, dict):
        key = next((key for key in sorted(set(theirs) | set(mine), key=str)
                    if theirs.get(key) != mine.get(key)), None)
        if key is None:
            break
        name, theirs, mine = f"{name}.{key}", theirs.get(key), mine.get(key)
    return name, theirs, mine


@dataclass
class CandidateRecord:
    """A proposal: candidate ``number`` of ``generation``, proposed after ``told_before``
    results."""

    number: int
    generation: int
    genome: Sequence[Any]
    told_before: int


@dataclass
class EvaluationRecord:
    """A told result, in the order told (``sequence``).

    Attributes:
        sequence: its place in the order results were told, from 0.
        candidate: the candidate's number; generation, genome: the candidate's.
        key: the space's identity of the architecture.
        descriptor: the descriptor's JSON, or None when none was built.
        worker_rank: world rank of the group root that evaluated it (None: no worker did).
        result: the EvaluationResult.
        cached_from: the candidate whose result was reused, or None.
        started, ended: wall-clock times (seconds since the epoch).
    """

    sequence: int
    candidate: int
    generation: int
    genome: Sequence[Any]
    key: Any
    descriptor: Optional[str]
    worker_rank: Optional[int]
    result: Any
    cached_from: Optional[int] = None
    started: Optional[float] = None
    ended: Optional[float] = None

    @property
    def cached(self) -> bool:
        return self.cached_from is not None


@dataclass
class LegRecord:
    """One leg of a candidate's training under a scheduler (see the ``legs`` table): written
    when it is handed out, and again (with its result and decision) when it ends."""

    leg: int
    candidate: int
    start_epochs: int
    target_epochs: int
    started_event: int
    started: Optional[float] = None
    ended_event: Optional[int] = None
    ended: Optional[float] = None
    result: Any = None
    decision: Optional[str] = None
    worker_rank: Optional[int] = None
    detail: str = ""


@dataclass
class SearchEpochRecord:
    """One epoch of a weight-sharing search (see the ``search_epochs`` table).

    Attributes:
        epoch: counted from 1.
        cell: the cell derived at the epoch's end, as the benchmark writes it.
        genome: the same cell as operation indices.
        weights: ``edge -> operation -> probability``, the method's distribution.
        metrics: the epoch's mean losses, the learning rate, what the method measured.
        lookup_accuracy: the derived cell's accuracy in the benchmark's table (its 200-epoch
            test accuracy, a fraction; NaN when the data set is not the table's), never seen
            by the search.
        seconds: the epoch's wall time.
    """

    epoch: int
    cell: str
    genome: Tuple[int, ...]
    weights: Dict[str, Dict[str, float]]
    metrics: Dict[str, float] = field(default_factory=dict)
    lookup_accuracy: float = float("nan")
    seconds: float = 0.0


def search_epoch_row(record: SearchEpochRecord, now: float) -> Tuple[Any, ...]:
    """The values of a ``search_epochs`` row, in the order of ``SEARCH_EPOCH_COLUMNS``."""
    accuracy = record.lookup_accuracy
    return (int(record.epoch), record.cell, dumps(list(record.genome)), dumps(record.weights),
            dumps(record.metrics), None if accuracy != accuracy else float(accuracy),
            float(record.seconds), now)


def evaluation_row(evaluation: EvaluationRecord) -> List[Any]:
    """The values of an ``evaluations`` row, in the order of ``EVALUATION_COLUMNS``."""
    result = evaluation.result
    row = {
        "sequence": evaluation.sequence, "candidate": evaluation.candidate,
        "generation": evaluation.generation, "genome": dumps(list(evaluation.genome)),
        "key": evaluation.key, "descriptor": evaluation.descriptor,
        "worker_rank": evaluation.worker_rank,
        "accuracy": result.accuracy, "loss": result.loss,
        "train_time": result.train_time, "eval_time": result.eval_time,
        "n_params": int(result.n_params), "epochs": int(result.epochs),
        "status": result.status, "error": result.error or "",
        "reported_accuracy": result.reported_accuracy,
        "metrics": dumps(result.metrics or {}),
        "cached_from": evaluation.cached_from,
        "started": evaluation.started, "ended": evaluation.ended,
    }
    return [row[column] for column in EVALUATION_COLUMNS]


def leg_row(leg: LegRecord) -> List[Any]:
    """The values of a ``legs`` row, in the order of ``LEG_COLUMNS`` (result columns NULL
    while the leg runs)."""
    result = leg.result
    row = {"leg": leg.leg, "candidate": leg.candidate, "start_epochs": leg.start_epochs,
           "target_epochs": leg.target_epochs, "started_event": leg.started_event,
           "ended_event": leg.ended_event, "started": leg.started, "ended": leg.ended,
           "accuracy": None if result is None else result.accuracy,
           "reported_accuracy": None if result is None else result.reported_accuracy,
           "status": None if result is None else result.status,
           "error": None if result is None else result.error,
           "decision": leg.decision, "worker_rank": leg.worker_rank,
           "train_time": None if result is None else result.train_time,
           "result": None if result is None else dumps(result.to_dict()), "detail": leg.detail}
    return [row[column] for column in LEG_COLUMNS]


def evaluation_result(row: Mapping[str, Any]) -> EvaluationResult:
    """The :class:`EvaluationResult` of one evaluation dict (from :meth:`Journal.evaluations`)."""
    return EvaluationResult.from_dict({column: row[column] for column in RESULT_COLUMNS})

