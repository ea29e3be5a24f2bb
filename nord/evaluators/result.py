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
from typing import Any, Dict, Optional

STATUSES = ("ok", "failed")

FAILED_FITNESS = 2.0
"""Fitness of a failed candidate: worse than any real one (``1 - accuracy`` lies in [0, 1]),
and finite, because pygmo's algorithms misbehave on inf and NaN."""


@dataclass
class EvaluationResult:
    """The outcome of evaluating one descriptor.

    Attributes:
        accuracy: the search signal, a fraction in [0, 1]: accuracy on the test split for
            evaluators that train, the benchmark's cheap validation accuracy for tabular
            ones. NaN when the evaluation failed.
        loss: mean loss on the test split (NaN when unknown or failed).
        train_time: seconds spent training.
        eval_time: seconds spent testing.
        n_params: trainable parameters of the network (0 when it did not build).
        epochs: training epochs.
        status: 'ok' or 'failed'.
        error: why it failed ('' when ok).
        descriptor_hash: ``NeuralDescriptor.hash`` of what was evaluated.
        reported_accuracy: the figure reported for an architecture when it differs from the
            search signal (tabular benchmarks: the 200-epoch test accuracy). Search
            algorithms must not read it; None when the search signal is the reported figure.
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
        if not self.ok or not math.isfinite(self.accuracy):
            return FAILED_FITNESS
        return 1.0 - self.accuracy

    @property
    def final_accuracy(self) -> float:
        """The accuracy to report: ``reported_accuracy`` when set, else ``accuracy``."""
        return self.accuracy if self.reported_accuracy is None else self.reported_accuracy

    @classmethod
    def failure(cls, error: str, descriptor_hash: str = "", **values) -> "EvaluationResult":
        """A failed result carrying the reason."""
        return cls(status="failed", error=str(error), descriptor_hash=descriptor_hash, **values)

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "EvaluationResult":
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})
