"""LocalEvaluator: trains and tests a descriptor in this process (the paper's NeuralEvaluator).

    evaluator = LocalEvaluator(curator=Digits(), epochs=5, seed=0)
    result = evaluator.descriptor_evaluate(descriptor)     # -> EvaluationResult
    result.accuracy            # validation accuracy: the search signal
    result.reported_accuracy   # test accuracy: what is reported, never shown to the search

A network is trained on the training split, selected on the validation split and reported by
its test accuracy; every epoch goes to the journal's learning curve, training can stop and
resume from checkpoints (legs), and a network that fails comes back as ``status='failed'``.
How it is trained is a recipe (``nord.nn.recipe``: optimizer, schedule, augmentation, ...);
each candidate is one :class:`~nord.evaluators.training_run.TrainingRun`.

Details (the protocol, epochs, legs and checkpoints, failures): docs/evaluators.md; recipes:
docs/recipes.md.
"""
from __future__ import annotations

import gc
import logging
import traceback
from typing import Any, Dict, List, Optional, Sequence

import torch

from nord.architecture.descriptor import NeuralDescriptor
from nord.checks import check_bool, check_instance, check_int, check_number, check_seed, given
from nord.data import Digits
from nord.data.curator import DataCurator
from nord.errors import ConfigurationError
from nord.evaluators.base import Evaluator, Leg
from nord.evaluators.bus import check_topics
from nord.evaluators.callbacks import fresh_callback
from nord.evaluators.group import Alone
from nord.evaluators.result import EvaluationResult
from nord.evaluators.stop_rules import check_rule_names, parse_rules
from nord.evaluators.training_run import TrainingRun
from nord.nn.augment import Augmentation
from nord.nn.memory import estimate_memory
from nord.nn.precision import check_precision
from nord.nn.recipe import Recipe, get_recipe
from nord.nn.training import optimizer_class, resolve_device

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 128
"""Samples per training step where neither the caller nor the recipe says."""


class LocalEvaluator(Evaluator):
    """Train a descriptor on a curator's training split, select by its validation split,
    report its test split.

    Args:
        curator: the DataCurator; ``Digits()`` (built in, no download) when None.
        epochs: training epochs; 0 tests the initial weights (e.g. to compare evaluators).
        recipe: how candidates are trained: a :class:`~nord.nn.recipe.Recipe` or the name of
            one ('default', 'nasbench201', 'darts-search'; ``nord.nn.recipe``). None: 'default'.
        batch_size: samples per training step (per rank, for distributed subclasses); None:
            the recipe's, else 128.
        optimizer: 'sgd', 'adam', 'adamw', 'rmsprop' or a torch.optim class; None: the
            recipe's.
        lr: learning rate; None: the recipe's.
        optimizer_kwargs: further optimizer arguments, e.g. ``{'betas': (0.5, 0.999)}``
            (after the recipe's momentum, Nesterov and weight decay).
        data_fraction: fraction of the training split to use (a seeded subset), in (0, 1].
        test_batch_size: samples per validation and test step.
        device: 'auto' (a GPU when there is one), 'cpu', 'cuda' or 'cuda:N'.
        seed: seeds weights, batch order and augmentation; same seed, same result on the CPU.
        threads: torch CPU threads (None leaves torch's setting alone).
        progress: show a progress bar on stderr.
        check_every: steps between NaN/inf checks of the loss (a check syncs a GPU);
            default 1 on the CPU and 25 on a GPU.
        keep_model: keep the last trained network in ``self.model`` (to inspect or export
            it); off by default so that memory is freed after each evaluation.
        callbacks: :class:`~nord.evaluators.callbacks.TrainingCallback` classes, factories
            or instances, called every epoch (and every ``every_steps`` steps); each
            evaluation gets fresh instances. One that raises is a diagnostic of the
            candidate (``result.metrics['diagnostics']``), never its failure.
        strict_callbacks: fail the candidate when a callback raises instead.
        stop_rules: stopping rules (text such as ``'dead_relu > 0.9'`` or callables taking
            the scalars; ``nord.evaluators.stop_rules``), checked at each epoch's end and, for
            those testing ``finite(...)`` or reading ``nonfinite``, at the steps callbacks
            publish: the first that holds ends training, the result being the last validation
            figure, and ``result.metrics['stopped_by']`` names the rule and the epoch (and
            step).
        max_params: refuse (as a failed evaluation) a network with more trainable parameters;
            None: no limit. A network that would not fit the free memory of its device (or
            host) is refused either way, before anything is allocated (``nord.nn.memory``).
    """

    trains_in_legs = True

    def __init__(self, curator=None, epochs: int = 1, batch_size: Optional[int] = None,
                 optimizer=None, lr: Optional[float] = None,
                 optimizer_kwargs: Optional[Dict] = None, data_fraction: float = 1.0,
                 test_batch_size: int = 1024, device="auto", seed: int = 0,
                 threads: Optional[int] = None, progress: bool = False,
                 check_every: Optional[int] = None, keep_model: bool = False,
                 callbacks: Sequence[Any] = (), max_params: Optional[int] = None,
                 strict_callbacks: bool = False, stop_rules: Sequence[Any] = (),
                 recipe: Any = None):
        check_int(epochs, "epochs", 0)
        if max_params is not None:
            check_int(max_params, "max_params", 1)
        check_int(test_batch_size, "test_batch_size", 1,
                  rule="an integer >= 1: batch sizes count samples")
        check_number(data_fraction, "data_fraction", "a number in (0, 1], e.g. 0.5", 0, 1,
                     low_open=True)
        if threads is not None:
            check_int(threads, "threads", 1)
        if check_every is not None:
            check_int(check_every, "check_every (steps between NaN checks of the loss)", 1,
                      rule="an integer >= 1 or None")
        check_seed(seed, none=False)
        check_instance(curator, "curator", DataCurator,
                       "a DataCurator such as Digits() or get_curator('mnist', root='data') "
                       "(nord.data)", none=True)
        if optimizer_kwargs is not None and not isinstance(optimizer_kwargs, dict):
            raise ConfigurationError(
                f"optimizer_kwargs takes a dict of keyword arguments such as {{'betas': "
                f"(0.5, 0.999)}} or None; got {given(optimizer_kwargs)}")
        if not (optimizer is None or isinstance(optimizer, str) or (
                isinstance(optimizer, type) and issubclass(optimizer, torch.optim.Optimizer))):
            raise ConfigurationError(
                f"optimizer takes a name ('sgd', 'adam', 'adamw', 'rmsprop'), a "
                f"torch.optim.Optimizer class or None; got {given(optimizer)}")
        for name, flag in (("progress", progress), ("keep_model", keep_model),
                           ("strict_callbacks", strict_callbacks)):
            check_bool(flag, name)
        if isinstance(callbacks, (str, bytes)) or not isinstance(callbacks, (list, tuple)):
            raise ConfigurationError(
                f"callbacks takes a list of TrainingCallback classes, instances or factories "
                f"(by name: nord.evaluators.callbacks.callback_classes(['grad_norm'])); got "
                f"{given(callbacks)}")
        if not isinstance(stop_rules, (str, list, tuple)) and not callable(stop_rules):
            raise ConfigurationError(
                f"stop_rules takes a list of rules (texts such as 'dead_relu > 0.9', or "
                f"callables taking the scalars), or one rule; got {given(stop_rules)}")
        outputs = []
        for spec in callbacks:   # one made now: a bad class or factory is refused here
            made = fresh_callback(spec)
            check_topics(made.topics, f"the training callback {made.name!r}")
            outputs.extend(made.outputs())
        rules = parse_rules(stop_rules)
        check_rule_names(rules, outputs)
        self.recipe = _effective_recipe(recipe, optimizer, lr, batch_size)
        """How candidates are trained (``optimizer``, ``lr`` and ``batch_size`` are its parts)."""
        self._optimizer_class = optimizer if isinstance(optimizer, type) else None
        # settings that would fail every candidate are refused now, not spent as failures
        optimizer_class(self.optimizer, self.lr)
        check_precision(self.recipe.precision, resolve_device(device))
        self.curator = curator if curator is not None else Digits()
        self.epochs = int(epochs)
        self.optimizer_kwargs = dict(optimizer_kwargs or {})
        self.data_fraction = float(data_fraction)
        self.test_batch_size = int(test_batch_size)
        self.device = device
        self.seed = int(seed)
        self.threads = threads
        self.progress = progress
        self.check_every = check_every
        self.keep_model = keep_model
        self.callbacks: List[Any] = list(callbacks)
        self.strict_callbacks = bool(strict_callbacks)
        self.stop_rules = rules
        self.max_params = max_params
        self.model: Optional[torch.nn.Module] = None
        self.group = Alone()
        """The ranks that train each candidate together (``nord.evaluators.group``)."""
        if self.curator.loaded:
            self.check_data(self.curator)

    # --- the settings ---------------------------------------------------------------------
    @property
    def lr(self) -> float:
        return self.recipe.lr

    @lr.setter
    def lr(self, value: float) -> None:
        self.recipe = self.recipe.replace(lr=value)

    @property
    def batch_size(self) -> int:
        return self.recipe.batch_size or DEFAULT_BATCH_SIZE

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        self.recipe = self.recipe.replace(batch_size=value)

    @property
    def optimizer(self):
        """The optimizer's name (the recipe's), or the torch.optim class given."""
        return self._optimizer_class or self.recipe.optimizer

    @optimizer.setter
    def optimizer(self, value) -> None:
        self._optimizer_class = value if isinstance(value, type) else None
        if isinstance(value, str):
            self.recipe = self.recipe.replace(optimizer=value)

    def get_curator(self):
        """The data set, normalised as the recipe says."""
        # set either way: a curator shared with an evaluator of another recipe is put back
        self.curator.normalise_with(*(self.recipe.statistics_for(self.curator.name)
                                      or (None, None)))
        return self.curator

    def check_data(self, curator) -> None:
        """Refuse a recipe that cannot train on ``curator``'s samples (augmenting data that is
        not images), before any candidate is spent on it.

        Raises:
            ConfigurationError: naming the flag and its choices.
        """
        Augmentation(self.recipe.augment, curator.input_shape)

    def optimizer_arguments(self) -> Dict[str, Any]:
        """The optimizer's keyword arguments besides the learning rate: the recipe's, then
        ``optimizer_kwargs``."""
        return {**self.recipe.optimizer_kwargs(), **self.optimizer_kwargs}

    def describe(self) -> Dict[str, Any]:
        """Settings stored in a run's journal (the recipe where it is not the default)."""
        curator = self.get_curator()
        described = {
            "evaluator": type(self).__name__,
            "dataset": getattr(curator, "name", type(curator).__name__),
            "epochs": self.epochs, "batch_size": self.batch_size,
            "optimizer": self.optimizer if isinstance(self.optimizer, str) else self.optimizer.__name__,
            "lr": self.lr, "optimizer_kwargs": self.optimizer_kwargs,
            "data_fraction": self.data_fraction, "seed": self.seed, "ranks": self.group.size,
            "callbacks": [fresh_callback(spec).describe() for spec in self.callbacks]}
        if self.stop_rules:
            described["stop_rules"] = [rule.text for rule in self.stop_rules]
        if self.max_params is not None:
            described["max_params"] = self.max_params
        if not self.recipe.trains_as_default:
            described["recipe"] = self.recipe.describe(curator.name)
        return described

    # --- the work -------------------------------------------------------------------------
    def _evaluate(self, descriptor: NeuralDescriptor, leg: Leg = Leg()) -> EvaluationResult:
        return TrainingRun(self, leg).result(descriptor)

    def memory_need(self, descriptor: NeuralDescriptor) -> Optional[int]:
        """Bytes that training ``descriptor`` would take on its device (the meta-device
        estimate of ``nord.nn.memory``), or None where it cannot be estimated: what
        ``ProcessExecutor`` admits candidates to a shared GPU by."""
        curator = self.get_curator()
        try:
            return estimate_memory(descriptor, curator.input_shape, curator.num_classes,
                                   self.largest_batch(curator), self.optimizer,
                                   **self.optimizer_arguments()).total
        except Exception as error:  # noqa: BLE001 - no estimate: nothing held back for it
            logger.debug("no memory estimate for %s: %s", descriptor.hash, error)
            return None

    def largest_batch(self, curator) -> int:
        """The most samples one training step of this rank holds: ``batch_size``, or the
        rank's share of the training split when that is smaller (a batch larger than the data
        set is the data set)."""
        share = -(-max(1, curator.n_train) // self.group.size)
        return max(1, min(self.batch_size, share))

    def _failure(self, error: BaseException, descriptor_hash: str) -> EvaluationResult:
        """The failed result, once the tensors the failure's traceback holds are freed (a
        CUDA out-of-memory must leave room for the next candidate). Clearing the frames frees
        them by reference counting; on a GPU the collector runs as well before the cache is
        emptied, so that no cycle can keep a block from the next candidate (on the CPU it
        would cost 0.1 s a failure for nothing)."""
        result = super()._failure(error, descriptor_hash)
        traceback.clear_frames(error.__traceback__)
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            gc.collect()
            torch.cuda.empty_cache()
        return result


def _effective_recipe(recipe: Any, optimizer: Any, lr: Optional[float],
                      batch_size: Optional[int]) -> Recipe:
    """The recipe named or given, with the parts the caller gave besides replaced."""
    return get_recipe(recipe).replace(
        optimizer=optimizer if isinstance(optimizer, str) else None, lr=lr,
        batch_size=batch_size)


NeuralEvaluator = LocalEvaluator
"""The name used in the NORD paper."""
