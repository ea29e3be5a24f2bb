"""Evaluator: the base every evaluator shares (template method).

``descriptor_evaluate`` does the bookkeeping that must never differ between evaluators:
it hashes the descriptor, times the work, and turns any exception into a failed
``EvaluationResult`` so that a search goes on. Subclasses implement ``_evaluate``::

    class MyEvaluator(Evaluator):
        def _evaluate(self, descriptor):
            return EvaluationResult(accuracy=..., n_params=...)
"""
from __future__ import annotations

import logging
import time
import traceback
from abc import ABC, abstractmethod
from typing import Iterable, List

from nord.descriptors import NeuralDescriptor
from nord.errors import NordError
from nord.evaluators.result import EvaluationResult

logger = logging.getLogger(__name__)


class Evaluator(ABC):
    """Turns a NeuralDescriptor into an EvaluationResult."""

    def descriptor_evaluate(self, descriptor: NeuralDescriptor) -> EvaluationResult:
        """Evaluate one descriptor; failures come back as ``status='failed'``, never raised.

        Only ``KeyboardInterrupt`` and ``SystemExit`` pass through, so a user can stop a run.
        """
        started = time.perf_counter()
        try:
            descriptor_hash = descriptor.hash
        except NordError as error:
            return EvaluationResult.failure(f"{type(error).__name__}: {error}")
        try:
            result = self._evaluate(descriptor)
        except Exception as error:  # noqa: BLE001 - a failing candidate must not end the search
            logger.debug("evaluation of %s failed:\n%s", descriptor_hash, traceback.format_exc())
            result = self._failure(error, descriptor_hash)
            result.train_time = time.perf_counter() - started
        result.descriptor_hash = descriptor_hash
        return result

    def evaluate_many(self, descriptors: Iterable[NeuralDescriptor]) -> List[EvaluationResult]:
        """Evaluate several descriptors; serial here, parallel in MPI-aware subclasses."""
        return [self.descriptor_evaluate(d) for d in descriptors]

    def _failure(self, error: BaseException, descriptor_hash: str) -> EvaluationResult:
        """The failed result for an exception; subclasses may add cleanup (e.g. GPU cache)."""
        return EvaluationResult.failure(f"{type(error).__name__}: {error}", descriptor_hash)

    @abstractmethod
    def _evaluate(self, descriptor: NeuralDescriptor) -> EvaluationResult:
        """Evaluate a validated descriptor. May raise: the caller records the failure."""
