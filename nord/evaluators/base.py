"""Evaluator: the base every evaluator shares (template method).

``descriptor_evaluate`` does the bookkeeping that must never differ between evaluators:
it hashes the descriptor, times the work, and turns any exception into a failed
``EvaluationResult`` so that a search goes on. Subclasses implement ``_evaluate``::

    class MyEvaluator(Evaluator):
        def _evaluate(self, descriptor):
            return EvaluationResult(accuracy=..., n_params=...)

The search engine calls ``evaluate_task(task)``: a candidate's genome with its descriptor
decoded on demand. By default that evaluates the descriptor; an evaluator that can answer
from the genome alone (a look-up table) overrides it and never decodes.
"""
from __future__ import annotations

import logging
import time
import traceback
from abc import ABC, abstractmethod
from typing import Any, Dict

from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import ConfigurationError, NordError
from nord.evaluators.result import EvaluationResult

logger = logging.getLogger(__name__)


class Evaluator(ABC):
    """Turns a NeuralDescriptor into an EvaluationResult."""

    trains_in_legs = False
    """Whether ``evaluate_task`` honours a task's leg (``epochs``, ``resume_from``,
    ``checkpoint``), which a scheduler needs to stop and resume training."""

    def descriptor_evaluate(self, descriptor: NeuralDescriptor) -> EvaluationResult:
        """Evaluate one descriptor; failures come back as ``status='failed'``, never raised.

        Only ``KeyboardInterrupt`` and ``SystemExit`` pass through, so a user can stop a run.

        Raises:
            ConfigurationError: ``descriptor`` is not a NeuralDescriptor (a caller's mistake,
                not a failing candidate).
        """
        if not isinstance(descriptor, NeuralDescriptor):
            raise ConfigurationError(
                f"{type(self).__name__}.descriptor_evaluate takes a NeuralDescriptor; got "
                f"{type(descriptor).__name__}: {descriptor!r:.80}. Build one with "
                "NeuralDescriptor() or NeuralDescriptor.from_json(text)")
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

    def evaluate_task(self, task) -> EvaluationResult:
        """Evaluate a search engine's task (``nord.search.executors.Task``): its descriptor.

        A genome that does not decode is a failed result, like any other failure.
        """
        try:
            descriptor = task.descriptor
        except Exception as error:  # noqa: BLE001 - a candidate that does not decode is a result
            return EvaluationResult.failure(f"{type(error).__name__}: {error}")
        return self.descriptor_evaluate(descriptor)

    def describe(self) -> Dict[str, Any]:
        """What the journal records about how this evaluator measures (its class and
        settings); subclasses add theirs."""
        return {"evaluator": type(self).__name__}

    def _failure(self, error: BaseException, descriptor_hash: str) -> EvaluationResult:
        """The failed result for an exception; subclasses may add cleanup (e.g. GPU cache)."""
        return EvaluationResult.failure(f"{type(error).__name__}: {error}", descriptor_hash)

    @abstractmethod
    def _evaluate(self, descriptor: NeuralDescriptor) -> EvaluationResult:
        """Evaluate a validated descriptor. May raise: the caller records the failure."""
