"""TrainingRun: one candidate's training, from building the network to its test accuracy.

A :class:`~nord.evaluators.local.LocalEvaluator` keeps the settings; each candidate gets a
TrainingRun that builds the network, its optimizer and the recipe's parts, goes on from a
checkpoint where one is left, trains epoch by epoch, validates, and tests::

    result = TrainingRun(evaluator, leg).result(descriptor)

Everything around an epoch or a step is said by its listeners
(``nord.evaluators.listeners``): diagnostics, the learning-rate schedule, the checkpoint writer,
the reporter, the progress bar. The ranks that train the candidate together are one collaborator
(``evaluator.group``: ``nord.evaluators.group``), asked to agree, reduce and broadcast.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from nord.architecture.descriptor import NeuralDescriptor
from nord.evaluators.base import Leg
from nord.evaluators.checkpoints import CheckpointError, LegProgress, load_checkpoint
from nord.evaluators.diagnostics import Diagnostics, RuleFired
from nord.evaluators.listeners import (CheckpointWriter, EpochEnd, EpochReporter, LearningRate,
                                       ProgressBars, TrainingListener)
from nord.evaluators.result import EvaluationResult
from nord.evaluators.stop_rules import STOPPED_METRIC
from nord.nn.augment import Augmentation, black_pixel
from nord.nn.memory import check_fits, measure_on_meta
from nord.nn.network import NeuralNet
from nord.nn.precision import Precision
from nord.nn.schedules import make_schedule
from nord.nn.training import (TrainingStep, make_optimizer, resolve_device, seed_generators,
                              test_counts, train_epoch)
from nord.parallel.signals import uninterrupted

__all__ = ["TrainingRun"]

logger = logging.getLogger(__name__)

_NAN = float("nan")


class TrainingRun:
    """One candidate trained as far as its ``leg`` says, with ``evaluator``'s settings.

    Args:
        evaluator: a LocalEvaluator (or subclass): the curator, recipe and settings.
        leg: how far to train the candidate, and where its epochs and checkpoints go.
    """

    def __init__(self, evaluator, leg: Leg = Leg()):
        self.evaluator = evaluator
        self.leg = leg
        self.group = evaluator.group
        self.recipe = evaluator.recipe
        self.curator = evaluator.get_curator()
        self.device = resolve_device(evaluator.device, self.group.local_rank)
        self.target = evaluator.epochs if leg.epochs is None else int(leg.epochs)
        self.has_valid = self.curator.n_valid > 0
        self.progress = LegProgress()
        self.note = ""
        self.steps_per_epoch = 0

    def result(self, descriptor: NeuralDescriptor) -> EvaluationResult:
        """Train, validate and test ``descriptor`` (raises on failure: the evaluator records
        it)."""
        if self.evaluator.threads is not None:
            torch.set_num_threads(self.evaluator.threads)
        diagnostics = Diagnostics(self.evaluator.callbacks, self.evaluator.stop_rules,
                                  self.evaluator.strict_callbacks,
                                  max(self.evaluator.epochs, self.target))
        self.listeners: List[TrainingListener] = []
        stopped, start = None, 0
        try:
            self._build(descriptor)
            start = self._resume(descriptor)
            n_params = self.model.count_parameters()
            self.optimizer = self.group.prepare(self.model, self.optimizer)
            loader = self._loader()
            self.listeners = self._listeners(descriptor, diagnostics)
            for listener in self.listeners:
                listener.started(self, start)
            for epoch in range(start, self.target):
                stopped = self._train(epoch, loader, diagnostics)
                if stopped is not None:
                    break
            started = time.perf_counter()
            test, test_loss = self._measure("test")
            if self.has_valid and not self.progress.last:   # nothing trained, nothing known
                self.progress.last = dict(zip(("valid_accuracy", "valid_loss"),
                                              self._measure("valid")))
            eval_time = time.perf_counter() - started
            if self.evaluator.keep_model:
                self.evaluator.model = self.model
        finally:
            for listener in self.listeners:
                listener.ended(self, self.target if stopped is None else stopped["trained"])
            self._release()
        return self._result(test, test_loss, eval_time, n_params, start, stopped, diagnostics)

    # --- the epochs ------------------------------------------------------------------------
    def _train(self, epoch: int, loader,
               diagnostics: Diagnostics) -> Optional[Dict[str, Any]]:
        """Epoch ``epoch`` (from 0), validated and handed to the listeners; where a stopping
        rule ended training, the stop."""
        started = time.perf_counter()
        loader.set_epoch(epoch)
        self.step.augment.start_epoch(self.evaluator.seed, epoch, self.group.rank)
        for listener in self.listeners:
            listener.epoch_started(self, epoch + 1)
        try:
            train_loss = train_epoch(
                self.model, loader, self.optimizer, self.device, check_every=self.check_every,
                progress=self._step_hook(epoch + 1), step=self.step,
                agree=self.group.agree if self.group.data_parallel else None)
        except RuleFired as fired:
            return fired.stopped
        except Exception as error:  # noqa: BLE001 - a rule may take a divergence as its stop
            stopped = diagnostics.divergence(self, error, epoch + 1)
            if stopped is None:
                raise
            return stopped
        finally:
            self.progress.train_time += time.perf_counter() - started
        self.group.share_root_buffers(self.model)
        valid, valid_loss = self._measure("valid") if self.has_valid else (
            self.progress.last.get("valid_accuracy", _NAN),
            self.progress.last.get("valid_loss", _NAN))
        self.progress.last = {"train_loss": train_loss, "valid_accuracy": valid,
                              "valid_loss": valid_loss}
        end = EpochEnd(epoch + 1, train_loss, valid, valid_loss, started, len(loader))
        with uninterrupted():   # a stop signal among these waits for the checkpoint
            for listener in self.listeners:
                listener.epoch_ended(self, end)
        return end.stopped

    def _step_hook(self, epoch: int) -> Optional[Callable[[int, float], None]]:
        """What ``train_epoch`` calls after each step of ``epoch``, or None where no listener
        wants steps (the loop then calls nothing)."""
        stepping = [listener for listener in self.listeners if listener.wants_steps]
        if not stepping:
            return None

        def hook(step: int, loss: float) -> None:
            for listener in stepping:
                listener.step_ended(self, epoch, step, loss)
        return hook

    def _listeners(self, descriptor: NeuralDescriptor,
                   diagnostics: Diagnostics) -> List[TrainingListener]:
        """This run's listeners, in the order they act (those with nothing to do left out)."""
        listeners: List[TrainingListener] = []
        if self.evaluator.progress and self.group.is_root:
            listeners.append(ProgressBars(self.target))
        if diagnostics:
            listeners.append(diagnostics)
        if self.recipe.varies_lr:
            listeners.append(LearningRate(self.schedule))
        if self.leg.checkpoint:
            listeners.append(CheckpointWriter(self.leg.checkpoint, descriptor,
                                              self.leg.checkpoint_every, self.leg.keep_at_end,
                                              self.target))
        if self.leg.report and self.group.is_root:
            listeners.append(EpochReporter(self.leg.report))
        return listeners

    # --- building and resuming -------------------------------------------------------------
    def _build(self, descriptor: NeuralDescriptor) -> None:
        """The network and the recipe's parts on the device (never on the host first), once
        the meta-device estimate says that they fit; every rank agrees."""
        error = None
        try:
            meta = self._refuse_if_too_large(descriptor)
            seed_generators(self.evaluator.seed, self.device)   # equal weights for equal seeds
            self.model = NeuralNet.on_device(descriptor, self.curator.input_shape,
                                             self.curator.num_classes, self.device, meta)
            if self.recipe.memory_format == "channels-last":
                self.model = self.model.to(memory_format=torch.channels_last)
            lr = self.recipe.lr * self.group.lr_factor
            self.optimizer = make_optimizer(self.evaluator.optimizer, self.model.parameters(),
                                            lr, **self.evaluator.optimizer_arguments())
            self.schedule = make_schedule(self.recipe, self.optimizer, self._span(),
                                          self.group.lr_factor)
            self.precision = Precision(self.recipe.precision, self.device)
            self.step = TrainingStep(self._augmentation(), self.recipe.label_smoothing,
                                     self.recipe.clip_grad, self.precision,
                                     self.recipe.memory_format == "channels-last")
        except Exception as failure:  # noqa: BLE001 - every rank must learn of it
            error = failure
        self.group.agree(error)
        self.check_every = self.evaluator.check_every or (1 if self.device.type == "cpu" else 25)

    def _span(self) -> int:
        """The epochs the learning-rate schedule spans: this leg's, or the most the candidate
        may train (a scheduler's ``max_epochs``, else the evaluator's; ``schedule_span``)."""
        if self.recipe.schedule_span == "leg":
            return self.target
        most = self.leg.max_epochs if self.leg.max_epochs is not None else self.evaluator.epochs
        return max(most, self.target)

    def _augmentation(self) -> Augmentation:
        shape = self.curator.input_shape
        side = min(shape[1:]) if len(shape) == 3 else 1
        return Augmentation(self.recipe.augment, shape, self.recipe.crop_padding_for(side),
                            self.recipe.cutout_length_for(side),
                            black_pixel(self.curator.mean, self.curator.std, shape[0]))

    def _refuse_if_too_large(self, descriptor: NeuralDescriptor) -> Optional[NeuralNet]:
        """Raise CandidateTooLargeError above ``max_params`` or the device's free memory;
        else the meta network measured (the real one is made of it, or built like it)."""
        evaluator = self.evaluator
        try:
            need, meta = measure_on_meta(descriptor, self.curator.input_shape,
                                         self.curator.num_classes,
                                         evaluator.largest_batch(self.curator),
                                         evaluator.optimizer,
                                         **evaluator.optimizer_arguments())
        except Exception as error:  # noqa: BLE001 - building it for real says what is wrong
            logger.debug("no memory estimate for %s: %s", descriptor.hash, error)
            return None
        check_fits(need, self.device, evaluator.max_params)
        return meta

    def stateful_parts(self) -> Dict[str, Any]:
        """The recipe's parts whose state a checkpoint keeps besides weights and optimizer."""
        return {"schedule": self.schedule, "precision": self.precision}

    def _resume(self, descriptor: NeuralDescriptor) -> int:
        """Go on from the candidate's checkpoint, where there is one: the epochs it holds. A
        damaged checkpoint is trained again from scratch (the result's note says so); a
        missing one is an error. A leg that follows its own schedule starts afresh."""
        path = self._checkpoint_to_resume()
        if path is None:
            return 0
        error, start = None, 0
        try:
            start, self.progress = load_checkpoint(path, descriptor, self.model,
                                                   self.optimizer, self.device,
                                                   self.stateful_parts())
        except FileNotFoundError:
            error = CheckpointError(
                f"the checkpoint {path} does not exist on this host ({os.uname().nodename}); "
                "workers on several hosts need the journal's checkpoint folder on a file "
                "system they all see")
        except CheckpointError as damaged:
            self.note = (f"checkpoint {path} could not be used ({damaged}); trained again "
                         "from scratch")
            logger.warning("%s", self.note)
        self.group.agree(error)
        new_leg = start > 0 and self.progress.leg_end and start < self.target
        if self.note or (new_leg and self.recipe.schedule_span == "leg"):
            start, self.progress = 0, LegProgress()
            self._build(descriptor)
        elif new_leg:
            self.progress = LegProgress(leg_start=start)   # the next leg of a paused candidate
        return start

    def _checkpoint_to_resume(self) -> Optional[str]:
        """The leg's ``resume_from``, else the candidate's checkpoint where an interrupted
        evaluation left one (the group root's view, so that every rank starts alike)."""
        if self.leg.resume_from is not None:
            return self.leg.resume_from
        if not self.leg.checkpoint:
            return None
        return self.group.root_decides(
            self.leg.checkpoint if os.path.exists(self.leg.checkpoint) else None)

    # --- data and measurements ---------------------------------------------------------------
    def _loader(self):
        evaluator = self.evaluator
        loader = self.curator.train_loader(
            batch_size=evaluator.batch_size, rank=self.group.rank, size=self.group.size,
            shuffle=True, seed=evaluator.seed, fraction=evaluator.data_fraction,
            device=self.device)
        self.steps_per_epoch = len(loader)
        return loader

    def probe(self) -> Optional[torch.Tensor]:
        """A fixed batch of validation inputs for the callbacks (None without validation)."""
        if not self.has_valid:
            return None
        x, _ = self.curator.tensors("valid", self.device)
        return x[:min(len(x), self.evaluator.test_batch_size, 256)]

    def _measure(self, split: str) -> Tuple[float, float]:
        """Exact accuracy and mean loss of the network on a split, summed over the ranks."""
        counts, error = (0, 0, 0.0), None
        try:
            loader = self.curator.test_loader(batch_size=self.evaluator.test_batch_size,
                                              rank=self.group.rank, size=self.group.size,
                                              device=self.device, split=split)
            counts = test_counts(self.model, loader, self.device)
        except Exception as failure:  # noqa: BLE001 - every rank must learn of it
            error = failure
        correct, seen, loss_sum = self.group.reduce_counts(*counts, error=error)
        if not seen:
            return _NAN, _NAN
        return correct / seen, loss_sum / seen

    # --- the end ---------------------------------------------------------------------------
    def _release(self) -> None:
        """Drop the network and its optimizer now: a failure's traceback keeps this run alive
        (no reference cycle holds them, so no ``gc.collect()`` is needed); on a GPU the cached
        blocks go back to the workers sharing it."""
        for name in ("model", "optimizer", "schedule", "precision", "step"):
            self.__dict__.pop(name, None)
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def _result(self, test: float, test_loss: float, eval_time: float, n_params: int,
                start: int, stopped: Optional[Dict[str, Any]],
                diagnostics: Diagnostics) -> EvaluationResult:
        last = self.progress.last
        valid, valid_loss = last.get("valid_accuracy", _NAN), last.get("valid_loss", _NAN)
        metrics: Dict[str, Any] = {
            "train_loss": last.get("train_loss", _NAN),
            "selection": "validation" if self.has_valid else "test",
            "valid_samples": self.curator.n_valid, "test_samples": self.curator.n_test,
            "test_loss": test_loss, "epochs_resumed": start}
        if self.recipe.schedule_span == "leg":   # a leg restarts: its training began here
            metrics["trained_from"] = self.progress.leg_start
        if self.note:
            metrics["checkpoint"] = self.note
        if diagnostics.notes:
            metrics["diagnostics"] = diagnostics.notes
        if diagnostics.changes:   # what a callback changed: the result is not the settings'
            metrics["callback_changes"] = diagnostics.changes
        if stopped is not None:
            metrics[STOPPED_METRIC] = stopped
        return EvaluationResult(
            accuracy=valid if self.has_valid else test,
            loss=valid_loss if self.has_valid else test_loss,
            train_time=self.progress.train_time, eval_time=eval_time, n_params=n_params,
            epochs=self.target if stopped is None else stopped["trained"],
            reported_accuracy=test, metrics=metrics)
