"""LocalEvaluator: trains and tests a descriptor in this process (the paper's NeuralEvaluator).

    evaluator = LocalEvaluator(curator=Digits(), epochs=5, seed=0)
    result = evaluator.descriptor_evaluate(descriptor)     # -> EvaluationResult
    result.accuracy            # validation accuracy: the search signal
    result.reported_accuracy   # test accuracy: what is reported, never shown to the search

A network is trained on the training split, selected on the validation split and reported by
its test accuracy; every epoch goes to the journal's learning curve, training can stop and
resume from checkpoints (legs), and a network that fails comes back as ``status='failed'``.

Details (the protocol, epochs, legs and checkpoints, failures, the hooks): docs/evaluators.md.
"""
from __future__ import annotations

import gc
import logging
import os
import time
import traceback
from typing import Any, Dict, List, Optional, Sequence

import torch

from nord.architecture.descriptor import NeuralDescriptor
from nord.checks import check_int
from nord.data import Digits
from nord.errors import ConfigurationError, DiskFullError
from nord.evaluators.base import Evaluator, Leg
from nord.evaluators.bus import check_topics
from nord.evaluators.callbacks import fresh_callback
from nord.evaluators.checkpoints import (CheckpointError, LegProgress, load_checkpoint,
                                        save_checkpoint)
from nord.evaluators.result import EpochRecord, EvaluationResult
from nord.evaluators.stop_rules import (STOPPED_METRIC, check_rule_names, first_firing,
                                        parse_rules)
from nord.evaluators.watch import Watch
from nord.nn.memory import check_fits, estimate_memory, measure_on_meta
from nord.nn.network import NeuralNet
from nord.nn.training import (NonFiniteLossError, ProgressBar, make_optimizer,
                              optimizer_class, resolve_device, seed_generators, test_counts,
                              train_epoch)
from nord.parallel.signals import uninterrupted

logger = logging.getLogger(__name__)


class RuleFired(Exception):
    """A stopping rule held at a step: training ends there (``stopped`` says where)."""

    def __init__(self, stopped: Dict[str, Any]):
        super().__init__(f"stopping rule {stopped['rule']!r} held")
        self.stopped = stopped


class LocalEvaluator(Evaluator):
    """Train a descriptor on a curator's training split, select by its validation split,
    report its test split.

    Args:
        curator: the DataCurator; ``Digits()`` (built in, no download) when None.
        epochs: training epochs; 0 tests the initial weights (e.g. to compare evaluators).
        batch_size: samples per training step (per rank, for distributed subclasses).
        optimizer: 'sgd', 'adam', 'adamw', 'rmsprop' or a torch.optim class.
        lr: learning rate.
        optimizer_kwargs: further optimizer arguments, e.g. ``{'momentum': 0.9}``.
        data_fraction: fraction of the training split to use (a seeded subset), in (0, 1].
        test_batch_size: samples per validation and test step.
        device: 'auto' (a GPU when there is one), 'cpu', 'cuda' or 'cuda:N'.
        seed: seeds weights and batch order; same seed, same result on the CPU.
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
            publish: the first that holds
            ends training, the result being the last validation figure, and
            ``result.metrics['stopped_by']`` names the rule and the epoch (and step).
        max_params: refuse (as a failed evaluation) a network with more trainable parameters;
            None: no limit. A network that would not fit the free memory of its device (or
            host) is refused either way, before anything is allocated (``nord.nn.memory``).
    """

    trains_in_legs = True

    def __init__(self, curator=None, epochs: int = 1, batch_size: int = 128,
                 optimizer="adam", lr: float = 1e-3, optimizer_kwargs: Optional[Dict] = None,
                 data_fraction: float = 1.0, test_batch_size: int = 1024, device="auto",
                 seed: int = 0, threads: Optional[int] = None, progress: bool = False,
                 check_every: Optional[int] = None, keep_model: bool = False,
                 callbacks: Sequence[Any] = (), max_params: Optional[int] = None,
                 strict_callbacks: bool = False, stop_rules: Sequence[Any] = ()):
        check_int(epochs, "epochs", 0)
        if max_params is not None:
            check_int(max_params, "max_params", 1)
        for name, size in (("batch_size", batch_size), ("test_batch_size", test_batch_size)):
            check_int(size, name, 1, rule="an integer >= 1: batch sizes count samples")
        if not 0 < data_fraction <= 1:
            raise ConfigurationError(f"data_fraction must be in (0, 1]; got {data_fraction}")
        if threads is not None:
            check_int(threads, "threads", 1)
        outputs = []
        for spec in callbacks:   # one made now: a bad class or factory is refused here
            made = fresh_callback(spec)
            check_topics(made.topics, f"the training callback {made.name!r}")
            outputs.extend(made.outputs())
        rules = parse_rules(stop_rules)
        check_rule_names(rules, outputs)
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
        self.callbacks: List[Any] = list(callbacks)
        self.strict_callbacks = bool(strict_callbacks)
        self.stop_rules = rules
        self.max_params = max_params
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
        """Sums of the evaluation counts over the ranks sharing the set (raises on failure)."""
        self._agree(error)
        return correct, seen, loss_sum

    # --- the work ---------------------------------------------------------------------
    def get_curator(self):
        if self.curator is None:
            self.curator = Digits()
        return self.curator

    def describe(self) -> Dict[str, Any]:
        """Settings stored in a run's journal."""
        curator = self.get_curator()
        return {"evaluator": type(self).__name__, "dataset": getattr(curator, "name", type(curator).__name__),
                "epochs": self.epochs, "batch_size": self.batch_size,
                "optimizer": self.optimizer if isinstance(self.optimizer, str) else self.optimizer.__name__,
                "lr": self.lr, "optimizer_kwargs": self.optimizer_kwargs,
                "data_fraction": self.data_fraction, "seed": self.seed, "ranks": self._size(),
                "callbacks": [fresh_callback(spec).describe() for spec in self.callbacks],
                **({"stop_rules": [rule.text for rule in self.stop_rules]}
                   if self.stop_rules else {}),
                **({"max_params": self.max_params} if self.max_params is not None else {})}

    def _evaluate(self, descriptor: NeuralDescriptor, leg: Leg = Leg()) -> EvaluationResult:
        target = self.epochs if leg.epochs is None else int(leg.epochs)
        curator = self.get_curator()
        device = resolve_device(self.device, self._local_rank())
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        check_every = self.check_every or (1 if device.type == "cpu" else 25)
        model = optimizer = watch = stopped = None
        diagnostics: List[str] = []
        distributed = self._size() > 1
        root = self._rank() == 0
        report = leg.report if root else None
        try:
            model, optimizer = self._build(descriptor, curator, device)
            start, note, progress = 0, "", LegProgress()
            source = self._checkpoint_to_resume(leg)
            if source is not None:
                start, note, progress, model, optimizer = self._resume(
                    source, descriptor, model, optimizer, curator, device)
            n_params = model.count_parameters()
            optimizer = self._prepare(model, optimizer)
            loader = curator.train_loader(batch_size=self.batch_size, rank=self._rank(),
                                          size=self._size(), shuffle=True, seed=self.seed,
                                          fraction=self.data_fraction, device=device)
            has_valid = curator.n_valid > 0
            if self.callbacks:
                probe = self._probe(curator, device) if has_valid else None
                watch = Watch(self.callbacks, model, optimizer, probe,
                              strict=self.strict_callbacks, epochs=max(self.epochs, target),
                              steps=len(loader))
                watch.start(start)
            if start > 0 and progress.leg_end and start < target:
                progress = LegProgress(leg_start=start)   # the next leg of a paused candidate
            elif start > 0 and report is not None:
                # the leg was cut short after epoch ``start``: its epochs so far are reported
                # again, since the journal may have missed the last ones (one row an epoch)
                for record in progress.records:
                    report(record)
            last = progress.last
            train_loss = last.get("train_loss", float("nan"))
            valid = last.get("valid_accuracy", float("nan"))
            valid_loss = last.get("valid_loss", float("nan"))
            for epoch in range(start, target):
                started = time.perf_counter()
                loader.set_epoch(epoch)
                bar = (ProgressBar(len(loader), f"epoch {epoch + 1}/{target}")
                       if self.progress and root else None)
                if watch is not None:
                    watch.begin_epoch(epoch + 1)
                step_hook = self._step_hook(watch, epoch, bar)
                try:
                    train_loss = train_epoch(model, loader, optimizer, device,
                                             check_every=check_every, progress=step_hook,
                                             agree=self._agree if distributed else None)
                except RuleFired as fired:
                    stopped = fired.stopped
                    break
                except Exception as error:  # noqa: BLE001 - a rule may take a divergence
                    stopped = self._divergence_rule(error, epoch + 1)
                    if stopped is None:
                        raise
                    break
                finally:
                    progress.train_time += time.perf_counter() - started
                if has_valid:
                    valid, valid_loss = self._accuracy(model, curator, "valid", device)
                progress.last = {"train_loss": train_loss, "valid_accuracy": valid,
                                 "valid_loss": valid_loss}
                with uninterrupted():   # a stop signal after the callbacks and before the
                    extra, series = self._epoch_callbacks(    # checkpoint: trained again
                        watch, epoch + 1, len(loader), progress.last)
                    record = EpochRecord(epoch + 1, train_loss, valid, valid_loss,
                                         time.perf_counter() - started, extra, series)
                    progress.records.append(record)
                    stopped = self._epoch_rule(epoch + 1, progress.last, extra, watch)
                    if stopped is None and leg.checkpoint is not None:
                        self._save_progress(leg, descriptor, model, optimizer, epoch + 1,
                                            target, device, progress)
                if stopped is not None:   # no checkpoint: a resume trains the epoch again
                    if report is not None:
                        report(record)
                    break
                if report is not None:
                    report(record)
            started = time.perf_counter()
            test, test_loss = self._accuracy(model, curator, "test", device)
            if has_valid and not progress.last and not last:   # nothing trained, nothing known
                valid, valid_loss = self._accuracy(model, curator, "valid", device)
            eval_time = time.perf_counter() - started
            if self.keep_model:
                self.model = model
        finally:
            if watch is not None:
                watch.end(target if stopped is None else stopped["trained"])
                diagnostics = watch.diagnostics
            # the traceback of a failure keeps this frame alive: drop the big objects now.
            # They hold no reference cycle, so no gc.collect() is needed (it took 0.1 to 0.5 s
            # per candidate with torch loaded); a failure's frames are cleared in _failure.
            del model, optimizer, watch
            if device.type == "cuda":   # give the cached blocks back to workers sharing the GPU
                torch.cuda.empty_cache()
        selection = "validation" if has_valid else "test"
        metrics = {"train_loss": train_loss, "selection": selection,
                   "valid_samples": curator.n_valid, "test_samples": curator.n_test,
                   "test_loss": test_loss, "epochs_resumed": start}
        if note:
            metrics["checkpoint"] = note
        if self.callbacks and diagnostics:
            metrics["diagnostics"] = diagnostics
        if stopped is not None:
            metrics[STOPPED_METRIC] = stopped
        return EvaluationResult(
            accuracy=valid if has_valid else test, loss=valid_loss if has_valid else test_loss,
            train_time=progress.train_time, eval_time=eval_time, n_params=n_params,
            epochs=target if stopped is None else stopped["trained"],
            reported_accuracy=test, metrics=metrics)

    # --- checkpoints ---------------------------------------------------------------------
    def _checkpoint_to_resume(self, leg: Leg) -> Optional[str]:
        """The checkpoint to go on from: the leg's ``resume_from``, else the candidate's
        checkpoint where an interrupted evaluation left one (the group root's view, so
        that every rank of a group starts from the same epoch)."""
        if leg.resume_from is not None:
            return leg.resume_from
        if leg.checkpoint is None:
            return None
        return self._root_decides(leg.checkpoint if os.path.exists(leg.checkpoint) else None)

    def _root_decides(self, value):
        """The group root's ``value`` on every rank of the group (alone: ``value``)."""
        return value

    def _save_progress(self, leg: Leg, descriptor, model, optimizer, epochs: int, target: int,
                       device, progress: LegProgress) -> None:
        """Leave the candidate's checkpoint after an epoch and its callbacks, before the epoch
        is reported: at the end of a leg that pauses (the scheduler may promote it), and
        every ``checkpoint_every`` epochs within a leg (a killed run goes on from there)."""
        at_end = epochs == target
        if at_end and leg.keep_at_end:
            progress.leg_end = True
            error = None
            try:
                if self._rank() == 0:
                    save_checkpoint(leg.checkpoint, descriptor, model, optimizer, epochs, device,
                                    progress)
            except Exception as failure:  # noqa: BLE001 - every rank must learn of it
                error = failure
            self._agree(error)
        elif leg.checkpoint_every and epochs % leg.checkpoint_every == 0:
            # the last epoch's too: a stop before the result is back would train it again
            if self._rank() == 0:
                try:
                    save_checkpoint(leg.checkpoint, descriptor, model, optimizer, epochs,
                                    device, progress)
                except DiskFullError:
                    raise   # the run stops, and goes on from the last checkpoint once freed
                except Exception as failure:  # noqa: BLE001 - only a kill needs it
                    logger.warning("could not write the checkpoint %s after epoch %d (%s: %s); "
                                   "training goes on, and a killed run would go on from the "
                                   "previous one", leg.checkpoint, epochs,
                                   type(failure).__name__, failure)

    def _epoch_callbacks(self, watch: Optional[Watch], epoch: int, steps: int,
                         metrics: Dict[str, float]):
        """The callbacks' scalars and kept per-step series at the end of ``epoch`` (every rank
        must learn of a strict callback's failure)."""
        if watch is None:
            return {}, []
        extra, series, error = {}, [], None
        try:
            extra, series = watch.epoch_end(epoch, steps, metrics)
        except Exception as failure:  # noqa: BLE001 - every rank must learn of it
            error = failure
        self._agree(error)
        return extra, series

    # --- parts ---------------------------------------------------------------------------
    def _build(self, descriptor, curator, device):
        """The network and its optimizer, built on ``device`` (never on the host first), once
        the meta-device estimate says that it fits."""
        model = optimizer = error = None
        try:
            meta = self._refuse_if_too_large(descriptor, curator, device)
            seed_generators(self.seed, device)   # equal initial weights for equal seeds, every rank
            model = NeuralNet.on_device(descriptor, curator.input_shape, curator.num_classes,
                                        device, meta)
            optimizer = make_optimizer(self.optimizer, model.parameters(),
                                       self._learning_rate(), **self.optimizer_kwargs)
        except Exception as failure:  # noqa: BLE001 - every rank must learn of it
            error = failure
        self._agree(error)
        return model, optimizer

    def memory_need(self, descriptor: NeuralDescriptor) -> Optional[int]:
        """Bytes that training ``descriptor`` would take on its device (the meta-device
        estimate of ``nord.nn.memory``), or None where it cannot be estimated: what
        ``ProcessExecutor`` admits candidates to a shared GPU by."""
        curator = self.get_curator()
        try:
            return estimate_memory(descriptor, curator.input_shape, curator.num_classes,
                                   self._largest_batch(curator), self.optimizer,
                                   **self.optimizer_kwargs).total
        except Exception as error:  # noqa: BLE001 - no estimate: nothing held back for it
            logger.debug("no memory estimate for %s: %s", descriptor.hash, error)
            return None

    def _largest_batch(self, curator) -> int:
        """The most samples one training step of this rank holds: ``batch_size``, or the
        rank's share of the training split when that is smaller (a batch larger than the data
        set is the data set)."""
        share = -(-max(1, curator.n_train) // self._size())
        return max(1, min(self.batch_size, share))

    def _refuse_if_too_large(self, descriptor, curator, device) -> Optional[NeuralNet]:
        """Raise CandidateTooLargeError above ``max_params`` or the device's free memory;
        else the meta network measured (the real one is made of it, or built like it)."""
        try:
            need, meta = measure_on_meta(descriptor, curator.input_shape, curator.num_classes,
                                         self._largest_batch(curator), self.optimizer,
                                         **self.optimizer_kwargs)
        except Exception as error:  # noqa: BLE001 - building it for real says what is wrong
            logger.debug("no memory estimate for %s: %s", descriptor.hash, error)
            return None
        check_fits(need, device, self.max_params)
        return meta

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

    def _resume(self, path, descriptor, model, optimizer, curator, device):
        """Load a checkpoint into a fresh model and optimizer: the epochs it holds, a note
        for the result, the progress of the leg that wrote it, and the model and optimizer
        to train. A damaged checkpoint is trained again from scratch (the note says so); a
        missing one is an error."""
        error, start, note, progress = None, 0, "", LegProgress()
        try:
            start, progress = load_checkpoint(path, descriptor, model, optimizer, device)
        except FileNotFoundError:
            error = CheckpointError(
                f"the checkpoint {path} does not exist on this host ({os.uname().nodename}); "
                "workers on several hosts need the journal's checkpoint folder on a file "
                "system they all see")
        except CheckpointError as damaged:
            note = f"checkpoint {path} could not be used ({damaged}); trained again from scratch"
            logger.warning("%s", note)
        self._agree(error)
        if note:
            start, progress = 0, LegProgress()
            model, optimizer = self._build(descriptor, curator, device)
        return start, note, progress, model, optimizer

    def _accuracy(self, model, curator, split: str, device):
        """Exact accuracy and mean loss of ``model`` on a split, summed over the ranks."""
        counts, error = (0, 0, 0.0), None
        try:
            loader = curator.test_loader(batch_size=self.test_batch_size, rank=self._rank(),
                                         size=self._size(), device=device, split=split)
            counts = test_counts(model, loader, device)
        except Exception as failure:  # noqa: BLE001 - every rank must learn of it
            error = failure
        correct, seen, loss_sum = self._reduce_counts(*counts, error=error)
        if not seen:
            return float("nan"), float("nan")
        return correct / seen, loss_sum / seen

    def _probe(self, curator, device):
        x, _ = curator.tensors("valid", device)
        return x[:min(len(x), self.test_batch_size, 256)]

    def _step_hook(self, watch: Optional[Watch], epoch: int, bar):
        stepping = watch is not None and any(c.every_steps for c in watch.callbacks)
        if not stepping and bar is None:
            return None
        checks = [rule for rule in self.stop_rules if rule.checks_finite] if stepping else []

        def hook(step: int, loss: float) -> None:
            if bar is not None:
                bar(step, loss)
            if stepping:
                published = watch.step(epoch + 1, step, loss)
                if checks and watch.due(step):
                    values = {"loss": loss, "lr": watch.lr(), **published}
                    fired = first_firing(checks, values, finite_only=True)
                    text = self._root_decides(None if fired is None else fired.text)
                    if text is not None:
                        raise RuleFired({"rule": text, "epoch": epoch + 1, "step": step,
                                         "trained": epoch})
        return hook

    def _epoch_rule(self, epoch: int, last: Dict[str, float], extra: Dict[str, float],
                    watch: Optional[Watch]) -> Optional[Dict[str, Any]]:
        """Where a stopping rule holds at the end of ``epoch`` (the group root decides)."""
        if not self.stop_rules:
            return None
        values = {**(watch.latest if watch is not None else {}), **last, **extra,
                  "epoch": float(epoch)}
        fired = first_firing(self.stop_rules, values)
        text = self._root_decides(None if fired is None else fired.text)
        return None if text is None else {"rule": text, "epoch": epoch, "step": None,
                                          "trained": epoch}

    def _divergence_rule(self, error: BaseException, epoch: int) -> Optional[Dict[str, Any]]:
        """Where training diverged (``error``) and a rule testing ``finite`` takes that as
        its stop, the stop; else None (the candidate fails)."""
        checks = [rule for rule in self.stop_rules if rule.checks_finite]
        if not checks or not self._diverged(error):
            return None
        nan = float("nan")
        fired = first_firing(checks, {"loss": nan, "train_loss": nan, "nonfinite": 1.0},
                             finite_only=True)
        return None if fired is None else {"rule": fired.text, "epoch": epoch, "step": None,
                                           "trained": epoch - 1}

    def _diverged(self, error: BaseException) -> bool:
        """Whether ``error`` says the training loss became NaN or infinite (on any rank)."""
        return isinstance(error, NonFiniteLossError)


NeuralEvaluator = LocalEvaluator
"""The name used in the NORD paper."""
