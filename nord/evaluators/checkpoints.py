"""Training checkpoints: how a candidate's training stops and goes on without redoing an epoch.

A checkpoint holds what the next epoch depends on: the weights, the optimizer's state, the
state of the recipe's other stateful parts (where the learning-rate schedule stands, an fp16
loss scaler), the random generators (the data order and the augmentation's draws follow from
the seed and the epoch's number), and where the leg that wrote it stands: the epochs it trained so far, their learning-curve records and
training time, and the last epoch's figures (so that a leg resumed after its last epoch ends
exactly as it would have)::

    progress = LegProgress(leg_start=0)
    save_checkpoint(path, descriptor, model, optimizer, epochs=3, progress=progress,
                    parts={"schedule": schedule})
    epochs, progress = load_checkpoint(path, descriptor, model, optimizer,
                                       parts={"schedule": schedule})

Files are written atomically (a reader sees the old file or the whole new one) and read with
``torch.load(weights_only=True)``, so a checkpoint folder on a shared file system is no way to
run code in the search process. Details: docs/evaluators.md.
"""
from __future__ import annotations

import contextlib
import errno
import os
import pickle
import shutil
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

import torch

from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import DiskFullError, NordError
from nord.evaluators.result import EpochRecord

__all__ = ["CHECKPOINT_FORMAT", "CheckpointError", "LegProgress", "save_checkpoint",
           "load_checkpoint"]

CHECKPOINT_FORMAT = "nord.checkpoint/4"
_READABLE_FORMATS = ("nord.checkpoint/1", "nord.checkpoint/2", "nord.checkpoint/3",
                     CHECKPOINT_FORMAT)


class CheckpointError(NordError):
    """A checkpoint that cannot be used (missing, damaged, or of another network)."""


@dataclass
class LegProgress:
    """Where the leg of training that wrote a checkpoint stood.

    Attributes:
        leg_start: the epochs the leg started from.
        leg_end: whether the checkpoint was left at the leg's end (a pause before the next
            leg) rather than during the leg (so that a killed run does not train it again).
        records: the learning-curve records of the leg's epochs so far (``leg_start + 1``
            onwards), callbacks' scalars included: reported again when training goes on
            from the checkpoint, since a killed run may not have journaled the last ones.
        train_time: seconds the leg has trained so far.
        last: the last epoch's ``train_loss``, ``valid_accuracy`` and ``valid_loss``.
    """

    leg_start: int = 0
    leg_end: bool = False
    records: List[EpochRecord] = field(default_factory=list)
    train_time: float = 0.0
    last: Dict[str, float] = field(default_factory=dict)

    def to_state(self) -> Dict[str, Any]:
        """Plain values only (what ``weights_only`` loading accepts)."""
        return {"leg_start": int(self.leg_start), "leg_end": bool(self.leg_end),
                "records": [_plain(record.to_dict()) for record in self.records],
                "train_time": float(self.train_time),
                "last": {key: float(value) for key, value in self.last.items()}}

    @classmethod
    def from_state(cls, state: Optional[Dict[str, Any]], epochs: int) -> "LegProgress":
        """A checkpoint's progress; one written before checkpoints kept it was left at the
        end of a leg that started where it ends."""
        if not state:
            return cls(leg_start=epochs, leg_end=True)
        return cls(int(state["leg_start"]), bool(state["leg_end"]),
                   [EpochRecord.from_dict(record) for record in state["records"]],
                   float(state["train_time"]), dict(state["last"]))


def save_checkpoint(path: str, descriptor: NeuralDescriptor, model, optimizer,
                    epochs: int, device: Optional[torch.device] = None,
                    progress: Optional[LegProgress] = None,
                    parts: Optional[Mapping[str, Any]] = None) -> None:
    """Write a checkpoint atomically: a reader sees the old file or the whole new one.

    It holds only what ``torch.load(weights_only=True)`` accepts (tensors, numbers, strings
    and containers of them): the random generators' states as CPU byte tensors, the CPU's
    and, when training on a GPU, that one GPU's (``device``; other GPUs are not touched).
    ``parts``: further stateful objects by name (``state_dict()``; a learning-rate schedule,
    a loss scaler), loaded back into their namesakes by :func:`load_checkpoint`.

    Raises:
        DiskFullError: the disk has no room for it (a full disk is the run's to handle,
            never the candidate's failure).
    """
    device = _device_of(model) if device is None else torch.device(device)
    progress = progress if progress is not None else LegProgress(epochs, True)
    state = {"format": CHECKPOINT_FORMAT, "architecture": descriptor.hash, "epochs": int(epochs),
             "model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "torch_rng": torch.get_rng_state(),
             "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
             "progress": progress.to_state(),
             "parts": {name: part.state_dict() for name, part in (parts or {}).items()}}
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    partial = f"{path}.{os.getpid()}.partial"
    try:
        torch.save(state, partial)
        os.replace(partial, path)
    except BaseException as error:   # a full disk, a signal: no half-written file stays behind
        with contextlib.suppress(OSError):
            os.remove(partial)
        if isinstance(error, Exception) and _disk_full(error, folder, _tensor_bytes(state)):
            raise DiskFullError(
                f"the checkpoint {path} could not be written: the disk is full "
                f"({type(error).__name__}: {_first_line(error)}). The candidate is not to "
                "blame: free some space, then resume the run") from error
        raise


def _tensor_bytes(value) -> int:
    """The bytes of the tensors in a (nested) state: about what its file needs."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, dict):
        return sum(_tensor_bytes(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_tensor_bytes(item) for item in value)
    return 0


def _disk_full(error: Exception, folder: str, needed: int) -> bool:
    """Whether a failed write failed for want of room: ENOSPC or EDQUOT, or (torch reports
    a short write as a RuntimeError) less room left than the file needs."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return False
    return free < needed + 4096


def load_checkpoint(path: str, descriptor: NeuralDescriptor, model, optimizer,
                    device=None, parts: Optional[Mapping[str, Any]] = None
                    ) -> Tuple[int, LegProgress]:
    """Load a checkpoint into ``model``, ``optimizer`` and the stateful ``parts`` saved with
    it (a part the checkpoint lacks keeps its state); returns the epochs it holds and the
    progress of the leg that wrote it.

    Tensors are read onto the CPU and copied to the model's device; the random generators'
    states are restored as CPU tensors, the GPU's only for ``device`` (the model's by
    default).

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
        epochs = int(state["epochs"])
        progress = LegProgress.from_state(state.get("progress"), epochs)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        saved_parts = state.get("parts") or {}
        for name, part in (parts or {}).items():
            if name in saved_parts:
                part.load_state_dict(saved_parts[name])
        torch.set_rng_state(_byte_tensor(state["torch_rng"]))
        cuda_rng = state.get("cuda_rng")
        if isinstance(cuda_rng, (list, tuple)):   # the first format kept every GPU's state
            cuda_rng = cuda_rng[device.index or 0] if device.type == "cuda" and cuda_rng else None
        if cuda_rng is not None and device.type == "cuda":
            torch.cuda.set_rng_state(_byte_tensor(cuda_rng), device)
        return epochs, progress
    except Exception as error:  # noqa: BLE001 - a damaged checkpoint is retrained
        raise CheckpointError(f"its contents do not fit: {type(error).__name__}: {error}") from error


def _plain(value):
    """A record's values as plain Python numbers (a callback may return numpy scalars)."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


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

