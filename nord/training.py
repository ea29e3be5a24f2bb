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

import math
import sys
from typing import Callable, Iterable, Optional, Tuple, Union

import torch
from torch import nn

from nord.errors import ConfigurationError, NordError

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
    ``local_rank % count``, so ranks on one machine do not share a GPU.
    """
    if isinstance(device, torch.device):
        return device
    name = "auto" if device is None else str(device).lower()
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda" or name.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise ConfigurationError(
                f"device {device!r} was asked for but CUDA is not available on this machine; "
                "use device='cpu' or 'auto'")
        count = torch.cuda.device_count()
        index = int(name.split(":")[1]) if ":" in name else local_rank % count
        if not 0 <= index < count:
            raise ConfigurationError(
                f"device {device!r}: this machine has {count} GPU(s), cuda:0 to cuda:{count - 1}")
        return torch.device("cuda", index)
    raise ConfigurationError(
        f"unknown device {device!r}; use 'auto', 'cpu', 'cuda' or 'cuda:N'")


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


def train_epoch(model: nn.Module, loader: Iterable, optimizer: torch.optim.Optimizer,
                device: torch.device, loss_fn: Optional[Callable] = None,
                check_every: int = 1, progress: Optional[Callable[[int, float], None]] = None,
                agree: Optional[Callable[[Optional[BaseException]], None]] = None) -> float:
    """One pass over ``loader``; returns the mean training loss.

    Args:
        check_every: test the loss for NaN/inf every this many steps (a check syncs a GPU).
        progress: called as ``progress(step, loss)`` after each step.
        agree: for data-parallel training: called at every step, after the backward pass and
            before the optimizer step, with this rank's error or None; it raises on every
            rank when any rank failed. A rank that failed first completes the all-reduce
            its peers may have started during the backward pass (Horovod starts it there),
            so no rank is left waiting in a collective.

    A one-sample batch (a remainder) is skipped when training alone: batch normalisation
    cannot train on a single value per channel, and a candidate must not fail for the way
    the data happened to divide. Data-parallel training (``agree`` given) keeps every
    batch, since all ranks must take the same steps.

    Raises:
        NonFiniteLossError: the loss became NaN or infinite.
    """
    loss_fn = loss_fn or nn.functional.cross_entropy
    model.train()
    # On the CPU reading the loss costs nothing, so every step is checked; on a GPU a read
    # waits for the device, so the loss is summed on it and checked every check_every steps.
    read_every_step = device.type == "cpu" or agree is not None
    total = 0.0 if read_every_step else torch.zeros((), device=device)
    steps = 0
    for inputs, targets in loader:
        if agree is None and len(targets) < 2:
            continue
        steps += 1
        error = None
        try:
            if inputs.device != device:
                inputs = inputs.to(device, non_blocking=True)
                targets = targets.to(device, non_blocking=True)
            optimizer.zero_grad()  # Horovod's wrapper takes no arguments
            loss = loss_fn(model(inputs), targets)
            if read_every_step:
                value = float(loss.detach())
                finite = math.isfinite(value)
            else:
                finite = steps % check_every != 0 or bool(torch.isfinite(loss.detach()))
            if not finite:
                error = NonFiniteLossError(
                    f"the training loss became {float(loss.detach())} at step {steps}; the "
                    "network diverged (try a smaller learning rate)")
            else:
                loss.backward()
        except Exception as failure:  # noqa: BLE001 - handed to the other ranks first
            if agree is None:
                raise
            error = failure
        if agree is not None:
            if error is not None:
                _finish_collectives(optimizer)
            agree(error)
        elif error is not None:
            raise error
        optimizer.step()
        total += value if read_every_step else loss.detach()
        if progress is not None:
            progress(steps, float(loss.detach()))
    total = float(total)
    if steps and not math.isfinite(total):
        raise NonFiniteLossError(
            f"the training loss became {total} during the epoch; the network diverged "
            "(try a smaller learning rate)")
    return total / steps if steps else float("nan")


def _finish_collectives(optimizer) -> None:
    """Complete this step's gradient all-reduce on a rank that failed during it.

    Horovod's optimizer starts all-reducing each gradient during the backward pass; its
    ``synchronize`` submits the rest (zeros where this rank has no gradient), so the other
    ranks' all-reduce can finish before the ranks agree to fail. Optimizers that
    all-reduce in ``step`` (the torch backend's) have nothing to complete.
    """
    finish = getattr(optimizer, "synchronize", None)
    if finish is not None:
        finish()


@torch.no_grad()
def test_counts(model: nn.Module, loader: Iterable, device: torch.device,
                loss_fn: Optional[Callable] = None) -> Tuple[int, int, float]:
    """(correct predictions, samples seen, summed loss) over ``loader``."""
    loss_fn = loss_fn or nn.functional.cross_entropy
    model.eval()
    correct = torch.zeros((), dtype=torch.long, device=device)
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)
    seen = 0
    for inputs, targets in loader:
        inputs = inputs.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        logits = model(inputs)
        loss_sum += loss_fn(logits, targets, reduction="sum").double()
        correct += (logits.argmax(dim=1) == targets).sum()
        seen += int(targets.shape[0])
    return int(correct), seen, float(loss_sum)


class ProgressBar:
    """A one-line text progress bar on stderr (no dependency)."""

    def __init__(self, total: int, label: str = "", width: int = 30, stream=None):
        self.total = max(int(total), 1)
        self.label = label
        self.width = width
        self.stream = stream or sys.stderr

    def __call__(self, step: int, loss: float) -> None:
        filled = int(self.width * min(step, self.total) / self.total)
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (self.width - filled)}] "
                          f"{step}/{self.total} loss {loss:.4f}")
        if step >= self.total:
            self.stream.write("\n")
        self.stream.flush()
