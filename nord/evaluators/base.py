"""Evaluator: the base every evaluator shares (template method).

``descriptor_evaluate`` does the bookkeeping that must never differ between evaluators:
it hashes the descriptor, times the work, and turns any exception into a failed
``EvaluationResult`` so that a search goes on. Subclasses implement ``_evaluate``::

    class MyEvaluator(Evaluator):
        def _evaluate(self, descriptor, leg):
            return EvaluationResult(accuracy=..., n_params=...)

``leg`` (a :class:`Leg`) says how far to train; an evaluator that does not train in legs
ignores it. The search engine calls ``evaluate_task(task)``, which a look-up table overrides.

Details (legs, ``evaluate_task``): docs/evaluators.md.
"""
from __future__ import annotations

import inspect
import logging
import time
import traceback
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import ConfigurationError, DiskFullError, NordError
from nord.evaluators.result import EpochRecord, EvaluationResult

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Leg:
    """How far one evaluation trains, and where its finished epochs go: a search engine's
    task asks for a leg so that a scheduler can stop training and resume it later. The
    default, ``Leg()``, trains as the evaluator's own settings say.

    Attributes:
        epochs: train up to this many epochs in all (None: the evaluator's own setting).
        resume_from: a checkpoint to go on from (its epochs are not trained again).
        checkpoint: the candidate's checkpoint file (None: none): left there when the leg
            ends (``keep_at_end``) and every ``checkpoint_every`` epochs within the leg, and
            gone on from, when one is there and ``resume_from`` is None (a run killed in the
            middle of a leg does not train its epochs again).
        report: called with each finished epoch's :class:`EpochRecord` (the journal's
            learning curve); None: nobody keeps them.
        checkpoint_every: epochs between the checkpoints written within the leg (0: none).
        keep_at_end: leave a checkpoint when the leg ends (a scheduler may promote it).
        max_epochs: the most epochs the candidate may train over all its legs, which a
            learning-rate schedule spans (None: the evaluator's own setting).
    """

    epochs: Optional[int] = None
    resume_from: Optional[str] = None
    checkpoint: Optional[str] = None
    report: Optional[Callable[[EpochRecord], None]] = None
    checkpoint_every: int = 0
    keep_at_end: bool = True
    max_epochs: Optional[int] = None

    @classmethod
    def of(cls, task) -> "Leg":
        """The leg a search engine's task (``nord.search.executors.Task``) asks for."""
        return cls(getattr(task, "epochs", None), getattr(task, "resume_from", None),
                   getattr(task, "checkpoint", None), getattr(task, "report", None),
                   getattr(task, "checkpoint_every", 0), getattr(task, "keep_at_end", True),
                   getattr(task, "max_epochs", None))

    def settings(self) -> Tuple[Any, ...]:
        """What another rank of a group needs to train the same leg (all but ``report``)."""
        return (self.epochs, self.resume_from, self.checkpoint, self.checkpoint_every,
                self.keep_at_end, self.max_epochs)

    @classmethod
    def from_settings(cls, settings: Tuple[Any, ...]) -> "Leg":
        epochs, resume_from, checkpoint, every, keep_at_end, max_epochs = settings
        return cls(epochs, resume_from, checkpoint, None, every, keep_at_end, max_epochs)


def _takes_leg(evaluate: Callable) -> bool:
    """Whether an ``_evaluate`` takes a leg after the descriptor (``(self, descriptor)``
    alone is the form written before legs existed)."""
    kinds = [parameter.kind for parameter in inspect.signature(evaluate).parameters.values()]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return True
    return sum(kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
               for kind in kinds) >= 3   # self, descriptor, leg


class Evaluator(ABC):
    """Turns a NeuralDescriptor into an EvaluationResult. A new one implements ``_evaluate``
    and is handed to :func:`~nord.search.engine.run_search` (or to the executor); evaluators
    are objects a run is given, not names, so there is nothing to register::

        class Width(Evaluator):
            # scores a network by its channels alone, without training it
            def _evaluate(self, descriptor, leg):
                channels = sum(layer.params.get("out_channels", 0)
                               for layer in descriptor.layers.values())
                return EvaluationResult(accuracy=channels / 1000)

        summary = run_search(algorithm, Width(), budget=10)
    """

    trains_in_legs = False
    """Whether the evaluator honours a :class:`Leg` (``epochs``, ``resume_from``,
    ``checkpoint``), which a scheduler needs to stop and resume training; ``evaluate_task``
    hands the task's leg on only to those that do."""

    _evaluate_takes_leg = True
    """Whether this class's ``_evaluate`` takes the leg: read once, when the class is made."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._evaluate_takes_leg = _takes_leg(cls._evaluate)
        if (cls.trains_in_legs and not cls._evaluate_takes_leg
                and cls.evaluate_task is Evaluator.evaluate_task):
            # the leg cannot reach the _evaluate this one overrides: refusing a scheduler
            # beats training every leg from scratch without a word
            warnings.warn(
                f"{cls.__name__}._evaluate(self, descriptor) takes no leg, so it cannot pass "
                f"one on: {cls.__name__} is treated as not training in legs (no early "
                "stopping, no learning curve). Write _evaluate(self, descriptor, leg) and "
                "pass leg on to super()._evaluate", stacklevel=2)
            cls.trains_in_legs = False

    def descriptor_evaluate(self, descriptor: NeuralDescriptor,
                            leg: Leg = Leg()) -> EvaluationResult:
        """Evaluate one descriptor; failures come back as ``status='failed'``, never raised.

        Only ``KeyboardInterrupt`` and ``SystemExit`` pass through, so a user can stop a run,
        and :class:`~nord.errors.DiskFullError`: a full disk is never the candidate's fault.

        Args:
            descriptor: the network to evaluate.
            leg: how far to train it (default: as the evaluator's settings say).

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
            if self._evaluate_takes_leg:
                result = self._evaluate(descriptor, leg)
            else:
                result = self._evaluate(descriptor)
        except DiskFullError:
            raise   # the run's to handle (it stops, and resumes once there is room)
        except Exception as error:  # noqa: BLE001 - a failing candidate must not end the search
            logger.debug("evaluation of %s failed:\n%s", descriptor_hash, traceback.format_exc())
            result = self._failure(error, descriptor_hash)
            result.train_time = time.perf_counter() - started
        result.descriptor_hash = descriptor_hash
        return result

    def evaluate_task(self, task) -> EvaluationResult:
        """Evaluate a search engine's task (``nord.search.executors.Task``): its descriptor,
        trained as far as the task's :class:`Leg` says when the evaluator trains in legs.

        A genome that does not decode is a failed result, like any other failure.
        """
        try:
            descriptor = task.descriptor
        except Exception as error:  # noqa: BLE001 - a candidate that does not decode is a result
            return EvaluationResult.failure(f"{type(error).__name__}: {error}")
        if self.trains_in_legs:
            return self.descriptor_evaluate(descriptor, Leg.of(task))
        return self.descriptor_evaluate(descriptor)

    def describe(self) -> Dict[str, Any]:
        """What the journal records about how this evaluator measures (its class and
        settings); subclasses add theirs."""
        return {"evaluator": type(self).__name__}

    def _failure(self, error: BaseException, descriptor_hash: str) -> EvaluationResult:
        """The failed result for an exception; subclasses may add cleanup (e.g. GPU cache)."""
        return EvaluationResult.failure(f"{type(error).__name__}: {error}", descriptor_hash)

    @abstractmethod
    def _evaluate(self, descriptor: NeuralDescriptor, leg: Leg) -> EvaluationResult:
        """Evaluate a validated descriptor, trained as far as ``leg`` says (an evaluator that
        does not train in legs ignores it). May raise: the caller records the failure."""
