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

import contextlib
import gc
import logging
import os
import pickle
import time
import traceback
from typing import Any, Dict, List, Optional, Sequence

import torch

from nord.architecture.descriptor import NeuralDescriptor
from nord.checks import check_int
from nord.data import Digits
from nord.errors import ConfigurationError, NordError
from nord.evaluators.base import Evaluator, Leg
from nord.evaluators.callbacks import TrainingCallback, TrainingState, run_callbacks
from nord.evaluators.result import EpochRecord, EvaluationResult
from nord.nn.memory import check_fits, estimate_memory
from nord.nn.network import NeuralNet
from nord.nn.training import (ProgressBar, make_optimizer, optimizer_class, resolve_device,
                           test_counts, train_epoch)

logger = logging.getLogger(__name__)

CHECKPOINT_FORMAT = "nord.checkpoint/2"
_READABLE_FORMATS = ("nord.checkpoint/1", CHECKPOINT_FORMAT)


class CheckpointError(NordError):
    """A checkpoint that cannot be used (missing, damaged, or of another network)."""


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
        callbacks: :class:`~nord.evaluators.callbacks.TrainingCallback` s called every epoch
            (and every ``every_steps`` steps).
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
                 callbacks: Sequence[TrainingCallback] = (), max_params: Optional[int] = None):
        check_int(epochs, "epochs", 0)
        if max_params is not None:
            check_int(max_params, "max_params", 1)
        for name, size in (("batch_size", batch_size), ("test_batch_size", test_batch_size)):
            check_int(size, name, 1, rule="an integer >= 1: batch sizes count samples")
        if not 0 < data_fraction <= 1:
            raise ConfigurationError(f"data_fraction must be in (0, 1]; got {data_fraction}")
        if threads is not None:
            check_int(threads, "threads", 1)
        for callback in callbacks:
            if not isinstance(callback, TrainingCallback):
                raise ConfigurationError(
                    f"callbacks must be TrainingCallback instances; got {type(callback).__name__}")
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
        self.callbacks: List[TrainingCallback] = list(callbacks)
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
                "callbacks": [callback.describe() for callback in self.callbacks],
                **({"max_params": self.max_params} if self.max_params is not None else {})}

    def _evaluate(self, descriptor: NeuralDescriptor, leg: Leg = Leg()) -> EvaluationResult:
        target = self.epochs if leg.epochs is None else int(leg.epochs)
        curator = self.get_curator()
        device = resolve_device(self.device, self._local_rank())
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        check_every = self.check_every or (1 if device.type == "cpu" else 25)
        model = optimizer = None
        distributed = self._size() > 1
        root = self._rank() == 0
        try:
            model, optimizer = self._build(descriptor, curator, device)
            start, note = 0, ""
            if leg.resume_from is not None:
                start, note, model, optimizer = self._resume(leg.resume_from, descriptor,
                                                             model, optimizer, curator, device)
            n_params = model.count_parameters()
            optimizer = self._prepare(model, optimizer)
            loader = curator.train_loader(batch_size=self.batch_size, rank=self._rank(),
                                          size=self._size(), shuffle=True, seed=self.seed,
                                          fraction=self.data_fraction, device=device)
            has_valid = curator.n_valid > 0
            probe = self._probe(curator, device) if self.callbacks and has_valid else None
            train_time = 0.0
            train_loss = valid = float("nan")
            valid_loss = float("nan")
            for epoch in range(start, target):
                started = time.perf_counter()
                loader.set_epoch(epoch)
                bar = (ProgressBar(len(loader), f"epoch {epoch + 1}/{target}")
                       if self.progress and root else None)
                step_hook = self._step_hook(model, optimizer, epoch, bar)
                train_loss = train_epoch(model, loader, optimizer, device,
                                         check_every=check_every, progress=step_hook,
                                         agree=self._agree if distributed else None)
                train_time += time.perf_counter() - started
                if has_valid:
                    valid, valid_loss = self._accuracy(model, curator, "valid", device)
                metrics = {"train_loss": train_loss, "valid_accuracy": valid,
                           "valid_loss": valid_loss}
                extra, error = {}, None
                if self.callbacks:
                    try:
                        extra = run_callbacks(self.callbacks, "on_epoch_end", TrainingState(
                            epoch + 1, len(loader), model, optimizer, dict(metrics), probe))
                    except Exception as failure:  # noqa: BLE001 - every rank must learn of it
                        error = failure
                    self._agree(error)
                if leg.report is not None and root:
                    leg.report(EpochRecord(epoch + 1, train_loss, valid, valid_loss,
                                           time.perf_counter() - started, extra))
            if leg.checkpoint is not None:
                error = None
                try:
                    if root:
                        save_checkpoint(leg.checkpoint, descriptor, model, optimizer, target,
                                        device)
                except Exception as failure:  # noqa: BLE001 - every rank must learn of it
                    error = failure
                self._agree(error)
            started = time.perf_counter()
            test, test_loss = self._accuracy(model, curator, "test", device)
            if has_valid and target == start:      # nothing trained in this call
                valid, valid_loss = self._accuracy(model, curator, "valid", device)
            eval_time = time.perf_counter() - started
            if self.keep_model:
                self.model = model
        finally:
            # the traceback of a failure keeps this frame alive: drop the big objects now.
            # They hold no reference cycle, so no gc.collect() is needed (it took 0.1 to 0.5 s
            # per candidate with torch loaded); a failure's frames are cleared in _failure.
            del model, optimizer
            if device.type == "cuda":   # give the cached blocks back to workers sharing the GPU
                torch.cuda.empty_cache()
        selection = "validation" if has_valid else "test"
        metrics = {"train_loss": train_loss, "selection": selection,
                   "valid_samples": curator.n_valid, "test_samples": curator.n_test,
                   "test_loss": test_loss, "epochs_resumed": start}
        if note:
            metrics["checkpoint"] = note
        return EvaluationResult(
            accuracy=valid if has_valid else test, loss=valid_loss if has_valid else test_loss,
            train_time=train_time, eval_time=eval_time, n_params=n_params, epochs=target,
            reported_accuracy=test, metrics=metrics)

    # --- parts ---------------------------------------------------------------------------
    def _build(self, descriptor, curator, device):
        """The network and its optimizer, built on ``device`` (never on the host first), once
        the meta-device estimate says that it fits."""
        model = optimizer = error = None
        try:
            self._refuse_if_too_large(descriptor, curator, device)
            torch.manual_seed(self.seed)  # equal initial weights for equal seeds, on every rank
            with device:
                model = NeuralNet(descriptor, curator.input_shape, curator.num_classes)
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
                                   self.batch_size, self.optimizer,
                                   **self.optimizer_kwargs).total
        except Exception as error:  # noqa: BLE001 - no estimate: nothing held back for it
            logger.debug("no memory estimate for %s: %s", descriptor.hash, error)
            return None

    def _refuse_if_too_large(self, descriptor, curator, device) -> None:
        """Raise CandidateTooLargeError above ``max_params`` or the device's free memory."""
        try:
            need = estimate_memory(descriptor, curator.input_shape, curator.num_classes,
                                   self.batch_size, self.optimizer, **self.optimizer_kwargs)
        except Exception as error:  # noqa: BLE001 - building it for real says what is wrong
            logger.debug("no memory estimate for %s: %s", descriptor.hash, error)
            return
        check_fits(need, device, self.max_params)

    def _failure(self, error: BaseException, descriptor_hash: str) -> EvaluationResult:
        """The failed result, once the tensors the failure's traceback holds are freed (a
        CUDA out-of-memory must leave room for the next candidate)."""
        result = super()._failure(error, descriptor_hash)
        traceback.clear_frames(error.__traceback__)
        gc.collect()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()
        return result

    def _resume(self, path, descriptor, model, optimizer, curator, device):
        """Load a checkpoint into a fresh model and optimizer: the epochs it holds, a note
        for the result, and the model and optimizer to train. A damaged checkpoint is
        trained again from scratch (the note says so); a missing one is an error."""
        error, start, note = None, 0, ""
        try:
            start = load_checkpoint(path, descriptor, model, optimizer, device)
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
            model, optimizer = self._build(descriptor, curator, device)
        return start, note, model, optimizer

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

    def _step_hook(self, model, optimizer, epoch, bar):
        callbacks = [c for c in self.callbacks if c.every_steps]
        if not callbacks and bar is None:
            return None

        def hook(step: int, loss: float) -> None:
            if bar is not None:
                bar(step, loss)
            due = [c for c in callbacks if step % c.every_steps == 0]
            if due:
                run_callbacks(due, "on_step",
                              TrainingState(epoch + 1, step, model, optimizer, {"loss": loss}))
        return hook


def save_checkpoint(path: str, descriptor: NeuralDescriptor, model, optimizer,
                    epochs: int, device: Optional[torch.device] = None) -> None:
    """Write a checkpoint atomically: a reader sees the old file or the whole new one.

    It holds only what ``torch.load(weights_only=True)`` accepts (tensors, numbers, strings
    and containers of them): the random generators' states as CPU byte tensors, the CPU's
    and, when training on a GPU, that one GPU's (``device``; other GPUs are not touched).
    """
    device = _device_of(model) if device is None else torch.device(device)
    state = {"format": CHECKPOINT_FORMAT, "architecture": descriptor.hash, "epochs": int(epochs),
             "model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "torch_rng": torch.get_rng_state(),
             "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None}
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    partial = f"{path}.{os.getpid()}.partial"
    try:
        torch.save(state, partial)
        os.replace(partial, path)
    except BaseException:   # a full disk, a signal: no half-written file stays behind
        with contextlib.suppress(OSError):
            os.remove(partial)
        raise


def load_checkpoint(path: str, descriptor: NeuralDescriptor, model, optimizer,
                    device=None) -> int:
    """Load a checkpoint into ``model`` and ``optimizer``; returns the epochs it holds.

    The file is read with ``weights_only=True``, so a checkpoint that carries any other
    pickled object is refused, never run: a checkpoint folder on a shared file system is
    not a way to run code in the search process. Tensors are read onto the CPU and copied to
    the model's device; the random generators' states are restored as CPU tensors, the
    GPU's only for ``device`` (the model's by default).

    Raises:
        FileNotFoundError: there is no such file.
        CheckpointError: it is damaged, of another format, of another architecture, or
            holds objects other than tensors and plain values.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    device = _device_of(model) if device is None else torch.device(device)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        raise CheckpointError(
            "it holds objects other than tensors and plain values, which are refused unrun "
            f"(torch.load(weights_only=True)): {_unsupported(error)}") from error
    except Exception as error:  # noqa: BLE001 - any unreadable file is a damaged checkpoint
        raise CheckpointError(f"it does not load: {type(error).__name__}: "
                              f"{_first_line(error)}") from error
    if not isinstance(state, dict) or state.get("format") not in _READABLE_FORMATS:
        raise CheckpointError(f"it is not a {CHECKPOINT_FORMAT} file")
    if state.get("architecture") != descriptor.hash:
        raise CheckpointError("it holds another architecture")
    try:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(_byte_tensor(state["torch_rng"]))
        cuda_rng = state.get("cuda_rng")
        if isinstance(cuda_rng, (list, tuple)):   # the first format kept every GPU's state
            cuda_rng = cuda_rng[device.index or 0] if device.type == "cuda" and cuda_rng else None
        if cuda_rng is not None and device.type == "cuda":
            torch.cuda.set_rng_state(_byte_tensor(cuda_rng), device)
        return int(state["epochs"])
    except Exception as error:  # noqa: BLE001 - a damaged checkpoint is retrained
        raise CheckpointError(f"its contents do not fit: {type(error).__name__}: {error}") from error


def _byte_tensor(state) -> torch.Tensor:
    """A generator state as the CPU ByteTensor that ``set_rng_state`` takes."""
    if not isinstance(state, torch.Tensor):
        raise TypeError(f"a random generator's state must be a tensor; got {type(state).__name__}")
    return state.detach().to("cpu", torch.uint8)


def _device_of(model) -> torch.device:
    parameter = next(iter(model.parameters()), None)
    return parameter.device if parameter is not None else torch.device("cpu")


def _unsupported(error: BaseException) -> str:
    """The line of torch's refusal that names what was refused, else its first line."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    named = [line for line in lines if "Unsupported" in line or "GLOBAL" in line]
    return (named or lines or [type(error).__name__])[0]


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


NeuralEvaluator = LocalEvaluator
"""The name used in the NORD paper."""
