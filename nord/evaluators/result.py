"""EvaluationResult: the one record every evaluator returns.

A failed candidate is a result too (``status='failed'`` with the reason), so a search
records it and goes on::

    result = evaluator.descriptor_evaluate(descriptor)
    if result.ok:
        print(f"{result.accuracy:.3f} with {result.n_params} parameters")
    else:
        print("failed:", result.error)
    optimiser.tell(genome, result.fitness)      # minimisers: lower is better
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Dict, List, Optional

STATUSES = ("ok", "failed")

FAILED_FITNESS = 2.0
"""Fitness of a failed candidate: worse than any real one (``1 - accuracy`` lies in [0, 1]),
and finite, because pygmo's algorithms misbehave on inf and NaN."""


@dataclass
class EvaluationResult:
    """The outcome of evaluating one descriptor.

    Attributes:
        accuracy: the search signal, a fraction in [0, 1]: the validation accuracy (for
            evaluators that train, on a held-out part of the training data; for tabular
            benchmarks, the cheap validation accuracy). Only where no validation split exists
            is it the test accuracy (``metrics['selection'] == 'test'`` then says so). NaN
            when the evaluation failed.
        loss: mean loss on the split ``accuracy`` comes from (NaN when unknown or failed).
        train_time: seconds spent training.
        eval_time: seconds spent testing.
        n_params: trainable parameters of the network (0 when it did not build).
        epochs: training epochs.
        status: 'ok' or 'failed'.
        error: why it failed ('' when ok).
        descriptor_hash: ``NeuralDescriptor.hash`` of what was evaluated.
        reported_accuracy: the figure reported for an architecture: its test accuracy (for
            tabular benchmarks the 200-epoch test accuracy). Search algorithms must not read
            it; None when the search signal is the reported figure.
        metrics: further named measurements, stored in the journal.
    """

    accuracy: float = math.nan
    loss: float = math.nan
    train_time: float = 0.0
    eval_time: float = 0.0
    n_params: int = 0
    epochs: int = 0
    status: str = "ok"
    error: str = ""
    descriptor_hash: str = ""
    reported_accuracy: Optional[float] = None
    metrics: Dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def fitness(self) -> float:
        """Value to minimise: ``1 - accuracy``, or ``FAILED_FITNESS`` (2.0) when failed."""
        accuracy = self.accuracy
        if self.status != "ok" or not math.isfinite(accuracy):
            return FAILED_FITNESS
        return 1.0 - accuracy

    @property
    def final_accuracy(self) -> float:
        """The accuracy to report: ``reported_accuracy`` when set, else ``accuracy``."""
        return self.accuracy if self.reported_accuracy is None else self.reported_accuracy

    @classmethod
    def failure(cls, error: str, descriptor_hash: str = "", **values) -> "EvaluationResult":
        """A failed result carrying the reason."""
        return cls(status="failed", error=str(error), descriptor_hash=descriptor_hash, **values)

    def copy(self) -> "EvaluationResult":
        """An independent copy (its metrics dict too), e.g. for a cached repeat."""
        clone = object.__new__(EvaluationResult)
        values = self.__dict__.copy()
        values["metrics"] = dict(values["metrics"])
        clone.__dict__ = values   # one dict built, not two (a repeat's every result is a copy)
        return clone

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "EvaluationResult":
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})


@dataclass
class EpochRecord:
    """One epoch of a candidate's training, as the journal keeps it (its learning curve).

    Attributes:
        epoch: epochs completed (1 after the first).
        train_loss: mean training loss of the epoch.
        valid_accuracy: validation accuracy after the epoch (NaN without a validation split).
        valid_loss: mean validation loss.
        seconds: the epoch's wall time, training and validation.
        metrics: the training callbacks' scalars.
        series: the callbacks' per-step scalars kept for this epoch, ``[step, name, value]``
            (thinned: ``nord.evaluators.watch``).
    """

    epoch: int
    train_loss: float
    valid_accuracy: float
    valid_loss: float
    seconds: float
    metrics: Dict[str, float] = field(default_factory=dict)
    series: List[List[Any]] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "EpochRecord":
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})
