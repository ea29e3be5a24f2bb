"""LocalEvaluator: trains and tests a descriptor in this process (the paper's NeuralEvaluator).

    evaluator = LocalEvaluator(curator=Digits(), epochs=5, seed=0)
    result = evaluator.descriptor_evaluate(descriptor)     # -> EvaluationResult

A network that does not build, diverges (NaN or infinite loss) or runs out of memory
comes back as ``status='failed'`` with the reason, and the evaluator stays usable.
Seeded runs on the CPU are reproducible: the same seed gives the same initial weights,
the same batches and so the same accuracy.

The distributed evaluator subclasses this one and overrides the small hooks
(``_rank``, ``_size``, ``_prepare``, ``_reduce_counts``), so training is written once.
"""
from __future__ import annotations

import gc
import logging
import time
from typing import Any, Dict, Optional

import torch

from nord.descriptors import NeuralDescriptor
from nord.errors import ConfigurationError
from nord.evaluators.base import Evaluator
from nord.evaluators.result import EvaluationResult
from nord.networks import NeuralNet
from nord.training import (ProgressBar, make_optimizer, optimizer_class, resolve_device,
                           test_counts, train_epoch)

logger = logging.getLogger(__name__)


class LocalEvaluator(Evaluator):
    """Train a descriptor on a curator's training split and test it on its test split.

    Args:
        curator: the DataCurator; ``Digits()`` (built in, no download) when None.
        epochs: training epochs; 0 tests the initial weights (e.g. to compare evaluators).
        batch_size: samples per training step (per rank, for distributed subclasses).
        optimizer: 'sgd', 'adam', 'adamw', 'rmsprop' or a torch.optim class.
        lr: learning rate.
        optimizer_kwargs: further optimizer arguments, e.g. ``{'momentum': 0.9}``.
        data_fraction: fraction of the training split to use (a seeded subset), in (0, 1].
        test_batch_size: samples per test step.
        device: 'auto' (a GPU when there is one), 'cpu', 'cuda' or 'cuda:N'.
        seed: seeds weights and batch order; same seed, same result on the CPU.
        threads: torch CPU threads (None leaves torch's setting alone).
        progress: show a progress bar on stderr.
        check_every: steps between NaN/inf checks of the loss (a check syncs a GPU);
            default 1 on the CPU and 25 on a GPU.
        keep_model: keep the last trained network in ``self.model`` (to inspect or export
            it); off by default so that memory is freed after each evaluation.
    """

    def __init__(self, curator=None, epochs: int = 1, batch_size: int = 128,
                 optimizer="adam", lr: float = 1e-3, optimizer_kwargs: Optional[Dict] = None,
                 data_fraction: float = 1.0, test_batch_size: int = 1024, device="auto",
                 seed: int = 0, threads: Optional[int] = None, progress: bool = False,
                 check_every: Optional[int] = None, keep_model: bool = False):
        if epochs < 0:
            raise ConfigurationError(f"epochs must be 0 or more; got {epochs}")
        if batch_size < 1 or test_batch_size < 1:
            raise ConfigurationError(
                f"batch sizes must be at least 1; got {batch_size} and {test_batch_size}")
        if not 0 < data_fraction <= 1:
            raise ConfigurationError(f"data_fraction must be in (0, 1]; got {data_fraction}")
        if threads is not None and threads < 1:
            raise ConfigurationError(f"threads must be at least 1; got {threads}")
        # settings that would fail every candidate are refused now, not spent as failures
        optimizer_class(optimizer, lr)
        resolve_device(device)
        self.curator = curator
        self.epochs = int(epochs)
        self.batch_size = int(batch_size)
        self.optimizer = optimizer
        self.lr = float(lr)
        self.optimizer_kwargs = dict(optimizer_kwargs or {})
        self.data_fraction = float(data_fraction)
        self.test_batch_size = int(test_batch_size)
        self.device = device
        self.seed = int(seed)
        self.threads = threads
        self.progress = progress
        self.check_every = check_every
        self.keep_model = keep_model
        self.model: Optional[torch.nn.Module] = None

    # --- hooks for distributed subclasses -----------------------------------------------
    def _rank(self) -> int:
        return 0

    def _size(self) -> int:
        return 1

    def _local_rank(self) -> int:
        return 0

    def _learning_rate(self) -> float:
        return self.lr

    def _prepare(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer):
        """Returns the optimizer to train with (Horovod wraps it and broadcasts state)."""
        return optimizer

    def _agree(self, error: Optional[BaseException]) -> None:
        """An agreement point: raise when this rank (or, when distributed, any rank) failed."""
        if error is not None:
            raise error

    def _reduce_counts(self, correct: int, seen: int, loss_sum: float,
                       error: Optional[BaseException] = None):
        """Sums of the test counts over the ranks sharing the test set (raises on failure)."""
        self._agree(error)
        return correct, seen, loss_sum

    # --- the work ---------------------------------------------------------------------
    def get_curator(self):
        if self.curator is None:
            from nord.data import Digits
            self.curator = Digits()
        return self.curator

    def describe(self) -> Dict[str, Any]:
        """Settings stored in a run's journal."""
        curator = self.get_curator()
        return {"evaluator": type(self).__name__, "dataset": getattr(curator, "name", type(curator).__name__),
                "epochs": self.epochs, "batch_size": self.batch_size,
                "optimizer": self.optimizer if isinstance(self.optimizer, str) else self.optimizer.__name__,
                "lr": self.lr, "optimizer_kwargs": self.optimizer_kwargs,
                "data_fraction": self.data_fraction, "seed": self.seed, "ranks": self._size()}

    def _evaluate(self, descriptor: NeuralDescriptor) -> EvaluationResult:
        curator = self.get_curator()
        device = resolve_device(self.device, self._local_rank())
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        check_every = self.check_every or (1 if device.type == "cpu" else 25)
        torch.manual_seed(self.seed)  # equal initial weights for equal seeds, on every rank
        model = optimizer = None
        distributed = self._size() > 1
        try:
            error = None
            try:
                model = NeuralNet(descriptor, curator.input_shape, curator.num_classes).to(device)
                optimizer = make_optimizer(self.optimizer, model.parameters(),
                                           self._learning_rate(), **self.optimizer_kwargs)
            except Exception as failure:  # noqa: BLE001 - every rank must learn of it
                error = failure
            self._agree(error)
            n_params = model.count_parameters()
            optimizer = self._prepare(model, optimizer)
            loader = curator.train_loader(batch_size=self.batch_size, rank=self._rank(),
                                          size=self._size(), shuffle=True, seed=self.seed,
                                          fraction=self.data_fraction, device=device)
            started = time.perf_counter()
            train_loss = float("nan")
            for epoch in range(self.epochs):
                if hasattr(loader, "set_epoch"):
                    loader.set_epoch(epoch)
                bar = (ProgressBar(len(loader), f"epoch {epoch + 1}/{self.epochs}")
                       if self.progress and self._rank() == 0 else None)
                train_loss = train_epoch(model, loader, optimizer, device,
                                         check_every=check_every, progress=bar,
                                         agree=self._agree if distributed else None)
            train_time = time.perf_counter() - started
            started = time.perf_counter()
            counts, error = (0, 0, 0.0), None
            try:
                test_loader = curator.test_loader(batch_size=self.test_batch_size,
                                                  rank=self._rank(), size=self._size(),
                                                  device=device)
                counts = test_counts(model, test_loader, device)
            except Exception as failure:  # noqa: BLE001 - every rank must learn of it
                error = failure
            correct, seen, loss_sum = self._reduce_counts(*counts, error=error)
            eval_time = time.perf_counter() - started
            if self.keep_model:
                self.model = model
        finally:
            # the traceback of a failure keeps this frame alive: drop the big objects now
            del model, optimizer
            if device.type == "cuda":
                gc.collect()
                torch.cuda.empty_cache()
        return EvaluationResult(
            accuracy=correct / seen if seen else float("nan"),
            loss=loss_sum / seen if seen else float("nan"),
            train_time=train_time, eval_time=eval_time, n_params=n_params, epochs=self.epochs,
            metrics={"train_loss": train_loss, "test_samples": seen})


NeuralEvaluator = LocalEvaluator
"""The name used in the NORD paper."""
