"""Training and testing primitives shared by the local and distributed evaluators.

They return sums (correct, seen, loss) rather than ratios, so that a distributed
evaluator can add them up across ranks before dividing: exact accuracy over the whole
test set, not a mean of per-rank fractions::

    device = resolve_device('auto')
    optimizer = make_optimizer('adam', model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        train_epoch(model, loader, optimizer, device)
    correct, seen, loss_sum = test_counts(model, test_loader, device)
"""
from __future__ import annotations

import functools
import math
import sys
import traceback
from typing import Callable, Iterable, Optional, Protocol, Tuple, Union

import torch
from torch import nn

from nord.checks import check_device
from nord.errors import ConfigurationError, DistributedError, NordError
from nord.nn.augment import Augmentation
from nord.nn.precision import Precision
from nord.parallel.placement import gpu_for_rank
from nord.progress import ProgressDisplay

OPTIMIZERS = {
    "sgd": torch.optim.SGD,
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
    "rmsprop": torch.optim.RMSprop,
}


class NonFiniteLossError(NordError, FloatingPointError):
    """The training loss became NaN or infinite: the candidate diverged."""


def resolve_device(device: Union[str, torch.device, None] = "auto",
                   local_rank: int = 0) -> torch.device:
    """'cpu', 'cuda', 'cuda:N', a torch.device, or 'auto' (a GPU when there is one).

    With 'auto' or 'cuda' and several GPUs, rank ``local_rank`` on a host takes GPU
    ``local_rank % count`` of those CUDA_VISIBLE_DEVICES lets it see, so ranks on one machine
    do not share a GPU while there are enough (``nord.parallel.placement``). Nothing here
    opens a CUDA context: a rank that only dispatches can resolve its device freely.
    """
    if isinstance(device, torch.device):
        return device
    name = check_device("auto" if device is None else str(device)).lower()
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cpu":
        return torch.device("cpu")
    # 'cuda' or 'cuda:N' (check_device accepts nothing else)
    if not torch.cuda.is_available():
        raise ConfigurationError(
            f"device {device!r} was asked for but CUDA is not available on this machine; "
            "use the CPU (--device cpu, device='cpu') or 'auto'")
    count = torch.cuda.device_count()
    index = int(name.split(":")[1]) if ":" in name else gpu_for_rank(local_rank, count)
    if not 0 <= index < count:
        raise ConfigurationError(
            f"device {device!r}: this machine has {count} GPU(s), cuda:0 to cuda:{count - 1}")
    return torch.device("cuda", index)


def seed_generators(seed: int, device: torch.device) -> None:
    """Seed the random generators that building and training on ``device`` draw from: the
    CPU's alone for the CPU, every generator torch has (``torch.manual_seed``) otherwise.

    On a host where CUDA is not initialised, ``torch.manual_seed`` also queues a seed for it
    and formats the call stack to do so: a few tenths of a millisecond per candidate, for a
    generator that training on the CPU never reads. The CPU generator ends in the same state.
    """
    if device.type == "cpu":
        torch.default_generator.manual_seed(seed)
    else:
        torch.manual_seed(seed)


def optimizer_class(name: Union[str, type], lr: float) -> type:
    """The torch.optim class for a name ('sgd', 'adam', 'adamw', 'rmsprop') or a class.

    Raises:
        ConfigurationError: an unknown name, not an optimizer, or a learning rate <= 0.
    """
    if isinstance(name, str):
        cls = OPTIMIZERS.get(name.lower())
        if cls is None:
            raise ConfigurationError(
                f"unknown optimizer {name!r}; use one of {sorted(OPTIMIZERS)} or a "
                "torch.optim.Optimizer class")
    elif isinstance(name, type) and issubclass(name, torch.optim.Optimizer):
        cls = name
    else:
        raise ConfigurationError(f"optimizer must be a name or a torch.optim class; got {name!r}")
    if not lr > 0:
        raise ConfigurationError(f"the learning rate must be positive; got {lr}")
    return cls


def make_optimizer(name: Union[str, type], parameters: Iterable, lr: float,
                   **kwargs) -> torch.optim.Optimizer:
    """An optimizer by name ('sgd', 'adam', 'adamw', 'rmsprop') or by torch.optim class."""
    return optimizer_class(name, lr)(parameters, lr=lr, **kwargs)


class TrainingStep:
    """How each training step is taken beyond forward, backward and the optimizer's step: what
    is done to the inputs (memory format, augmentation), the loss (label smoothing), the
    precision, and gradient clipping. ``TrainingStep()`` is a plain step.

    Args:
        augment: applied to each batch of inputs (an :class:`~nord.nn.augment.Augmentation`;
            default an empty one: the inputs as they are).
        label_smoothing: of the training loss.
        clip_grad: the gradients' total norm is clipped to this (0: no clipping).
        precision: a :class:`~nord.nn.precision.Precision` (None: fp32).
        channels_last: give the network its inputs in channels-last memory format.
    """

    def __init__(self, augment: Optional[Augmentation] = None, label_smoothing: float = 0.0,
                 clip_grad: float = 0.0, precision: Optional[Precision] = None,
                 channels_last: bool = False):
        self.augment = augment if augment is not None else Augmentation((), ())
        self.loss_fn = (functools.partial(nn.functional.cross_entropy,
                                          label_smoothing=float(label_smoothing))
                        if label_smoothing else nn.functional.cross_entropy)
        self.clip_grad = float(clip_grad)
        self.precision = precision if precision is not None else Precision()
        self.channels_last = bool(channels_last)

    def prepare(self, inputs: torch.Tensor) -> torch.Tensor:
        """The batch as the network takes it: augmented, in its memory format."""
        if self.augment:
            inputs = self.augment(inputs)
        if self.channels_last and inputs.dim() == 4:
            inputs = inputs.contiguous(memory_format=torch.channels_last)
        return inputs

    def apply(self, model: nn.Module, optimizer) -> None:
        """After the backward pass (and the all-reduce, when data-parallel): clip, then step."""
        if self.clip_grad:
            self.precision.unscale(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), self.clip_grad)
        self.precision.step(optimizer)


PLAIN_STEP = TrainingStep()


def train_epoch(model: nn.Module, loader: Iterable, optimizer, device: torch.device,
                loss_fn: Optional[Callable] = None, check_every: int = 1,
                progress: Optional[Callable[[int, float], None]] = None,
                agree: Optional[Callable[[Optional[BaseException]], None]] = None,
                step: TrainingStep = PLAIN_STEP) -> float:
    """One pass over ``loader``; returns the mean training loss.

    Args:
        loss_fn: the training loss (default: the step's, cross entropy).
        step: how each step is taken (:class:`TrainingStep`: augmentation, label smoothing,
            precision, clipping); default a plain step.
        check_every: steps between reads of the NaN/inf test of the loss (and, when
            data-parallel, of the ranks' failure flag); a read waits for a GPU.
        progress: called as ``progress(step, loss)`` after each step.
        agree: for data-parallel training, with an ``optimizer`` that follows
            ``DataParallelOptimizer``: called on every rank, with this rank's error or
            None, once the all-reduced failure flag says that a rank failed; it exchanges
            the reasons and raises on every rank.

    A one-sample batch (a remainder) is skipped when training alone: batch normalisation
    cannot train on a single value per channel, and a candidate must not fail for the way
    the data happened to divide. Data-parallel training (``agree`` given) keeps every
    batch, since all ranks must take the same steps.

    Raises:
        NonFiniteLossError: the loss became NaN or infinite.
    """
    loss_fn = loss_fn or step.loss_fn
    model.train()
    if agree is not None:
        return _train_data_parallel(model, loader, optimizer, device, loss_fn, check_every,
                                    progress, agree, step)
    # On the CPU reading the loss costs nothing, so every step is checked; on a GPU a read
    # waits for the device, so the loss is summed on it and checked every check_every steps.
    read_every_step = device.type == "cpu"
    total = 0.0 if read_every_step else torch.zeros((), device=device)
    steps = 0
    for inputs, targets in loader:
        if len(targets) < 2:
            continue
        steps += 1
        if inputs.device != device:
            inputs = inputs.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
        inputs = step.prepare(inputs)
        optimizer.zero_grad()
        with step.precision.autocast():
            loss = loss_fn(model(inputs), targets)
        if read_every_step:
            value = loss.item()
            finite = math.isfinite(value)
        else:
            finite = steps % check_every != 0 or bool(torch.isfinite(loss.detach()))
        if not finite:
            raise NonFiniteLossError(
                f"the training loss became {float(loss.detach())} at step {steps}; the "
                "network diverged (try a smaller learning rate)")
        step.precision.scale(loss).backward()
        step.apply(model, optimizer)
        total += value if read_every_step else loss.detach()
        if progress is not None:
            progress(steps, value if read_every_step else float(loss.detach()))
    total = float(total)
    if steps and not math.isfinite(total):
        raise NonFiniteLossError(
            f"the training loss became {total} during the epoch; the network diverged "
            "(try a smaller learning rate)")
    return total / steps if steps else float("nan")


class DataParallelOptimizer(Protocol):
    """What data-parallel ``train_epoch`` needs of its optimizer: one collective per step.

    ``backward`` runs the backward pass and takes the loss's NaN/inf test as this rank's
    failure flag (a 0-d tensor on the device, returned). ``reduce`` completes the step's
    all-reduce of the gradients, which carries the flag too, and returns the flag reduced
    over the ranks, still on the device: positive when any rank failed. Every rank calls
    ``reduce`` at every step; a rank that failed passes ``failed=True`` and contributes
    zero gradients and flag 1, so that no rank waits alone. ``step`` applies the reduced
    gradients without communicating.
    """

    def zero_grad(self) -> None: ...

    def backward(self, loss: torch.Tensor) -> torch.Tensor: ...

    def reduce(self, failed: bool = False) -> torch.Tensor: ...

    def step(self) -> None: ...


def _train_data_parallel(model, loader, optimizer: DataParallelOptimizer, device, loss_fn,
                         check_every, progress, agree, step: TrainingStep) -> float:
    """``train_epoch`` for data-parallel training: the failure flag rides the gradients.

    The flag is read on the host every ``check_every`` steps and after the last one, so
    on a GPU the loop does not wait for the device at every step. Between two reads a
    rank that failed keeps taking part in the collectives (zeros and flag 1) without
    computing; the other ranks' steps are then wasted, never wrong, since the network is
    failed as a whole at the next read.
    """
    if not callable(getattr(optimizer, "reduce", None)):
        raise ConfigurationError(
            "data-parallel training needs an optimizer with backward(loss) and "
            "reduce(failed) that all-reduce the gradients with a failure flag; got "
            f"{type(optimizer).__name__} (DistributedEvaluator prepares one)")
    total = torch.zeros((), dtype=torch.float64, device=device)
    flags = torch.zeros((), device=device)      # the reduced flags since the start
    own = torch.zeros((), device=device)        # this rank's non-finite losses, first
    error: Optional[BaseException] = None      # once set, this rank only communicates
    steps = checked = 0
    for inputs, targets in loader:
        steps += 1
        try:
            optimizer.zero_grad()
            if error is None:
                if inputs.device != device:
                    inputs = inputs.to(device, non_blocking=True)
                    targets = targets.to(device, non_blocking=True)
                inputs = step.prepare(inputs)
                with step.precision.autocast():
                    loss = loss_fn(model(inputs), targets)
                # counted only while the group is clean: once a rank's NaN is averaged into
                # everyone's weights, the NaN that follows elsewhere is not their own
                own += optimizer.backward(step.precision.scale(loss)) * (flags == 0)
        except Exception as failure:  # noqa: BLE001 - the other ranks learn of it by the flag
            error = failure
            # the failed step's activations stay reachable from the traceback: free them
            traceback.clear_frames(failure.__traceback__)
        flags += optimizer.reduce(failed=error is not None)  # this step's one collective
        if steps % check_every == 0:
            if float(flags) > 0:
                _fail_together(agree, error, own, checked, steps)
            checked = steps
        if error is None:
            step.apply(model, optimizer)
            total += loss.detach()
        if progress is not None:   # on every rank: a listener of the step may take part in a
            # collective (a stopping rule the group root decides), failed rank or not
            progress(steps, float(loss.detach()) if error is None else math.nan)
    if steps and float(flags) > 0:
        _fail_together(agree, error, own, checked, steps)
    return float(total) / steps if steps else float("nan")


def _fail_together(agree, error, own, checked, steps) -> None:
    """Every rank, once the flag says a rank failed: exchange the reasons and raise."""
    if error is None and float(own) > 0:
        where = f"at step {steps}" if steps - checked == 1 else f"in steps {checked + 1}-{steps}"
        error = NonFiniteLossError(
            f"the training loss became NaN or infinite {where}; the network diverged "
            "(try a smaller learning rate)")
    agree(error)
    raise DistributedError("the failure flag says a rank failed, but no rank gave a reason")


@torch.no_grad()
def test_counts(model: nn.Module, loader: Iterable, device: torch.device,
                loss_fn: Optional[Callable] = None) -> Tuple[int, int, float]:
    """(correct predictions, samples seen, summed loss) over ``loader``.

    The sums stay on the device until the end (one wait for a GPU) and start from the first
    batch's figures rather than from zeros: a validation split is often one batch.
    """
    loss_fn = loss_fn or nn.functional.cross_entropy
    model.eval()
    correct = loss_sum = None
    seen = 0
    for inputs, targets in loader:
        if inputs.device != device or targets.device != device:
            inputs = inputs.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
        logits = model(inputs)
        loss = loss_fn(logits, targets, reduction="sum").double()
        hits = (logits.argmax(dim=1) == targets).sum()
        if correct is None:
            correct, loss_sum = hits, loss
        else:
            correct += hits
            loss_sum += loss
        seen += int(targets.shape[0])
    if correct is None:
        return 0, 0, 0.0
    # + 0.0: a sum of -0.0 reads 0.0, as a sum started from zero reads it; any other value
    # is unchanged
    return int(correct), seen, float(loss_sum) + 0.0


class ProgressBar:
    """The steps of one epoch, called as ``bar(step, loss)`` by :func:`train_epoch`: a bar on
    a terminal; elsewhere a line at most every 30 s and one when the epoch ends, so a log file
    does not fill with redraws. It closes after the last step."""

    def __init__(self, total: int, label: str = "", stream=None):
        self.total = max(int(total), 1)
        self.label = label
        self.display = ProgressDisplay(stream or sys.stderr, interval=30.0)
        self.display.wait()   # off a terminal, the first line comes after 30 s or at the end

    def __call__(self, step: int, loss: float) -> None:
        if self.display.live:
            bar = self.display.bar(total=self.total, desc=self.label, unit="step",
                                   mininterval=0.1)
            bar.set_postfix_str(f"loss {loss:.4f}", refresh=False)
            bar.update(step - bar.n)
        elif step >= self.total or self.display.due():
            self.display.write(f"{self.label}: step {step}/{self.total}, loss {loss:.4f}"
                               if self.label else f"step {step}/{self.total}, loss {loss:.4f}")
        if step >= self.total:
            self.display.close()
