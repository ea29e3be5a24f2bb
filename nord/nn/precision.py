"""The arithmetic of a training step: fp32, bf16 autocast, or fp16 autocast with a loss scaler.

    precision = Precision("bf16", device)        # refused where the device cannot
    with precision.autocast():
        loss = loss_fn(model(x), y)
    precision.backward(loss, optimizer)          # scaled for fp16
    precision.unscale(optimizer)                 # before clipping
    precision.step(optimizer)                    # skipped by the scaler after an overflow

Reduced precision is a GPU's setting: on the CPU it is refused, except bf16 where the CPU has
AMX tiles (matrix units built for it), so that CPU figures stay fp32 figures.
"""
from __future__ import annotations

import contextlib
from typing import Any, Dict, Optional

import torch

from nord.errors import ConfigurationError
from nord.nn.recipe import PRECISIONS

__all__ = ["Precision", "check_precision", "precision_refusal"]

_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def precision_refusal(precision: str, device: torch.device) -> Optional[str]:
    """Why training on ``device`` cannot take ``precision`` (None: it can)."""
    choices = f"(choices: {', '.join(PRECISIONS)})"
    if precision == "fp32":
        return None
    if device.type == "cuda":
        # native bf16 from Ampere (compute capability 8.0) on; torch.cuda.is_bf16_supported()
        # also counts emulation, and asks of the current device rather than this one
        if precision == "bf16" and torch.cuda.get_device_capability(device) < (8, 0):
            return (f"--precision bf16: {torch.cuda.get_device_name(device)} has no native bf16 "
                    f"arithmetic (compute capability below 8.0); use --precision fp16 or fp32 "
                    f"{choices}")
        return None
    if device.type == "cpu":
        if precision == "bf16" and _cpu_has_amx():
            return None
        return (f"--precision {precision} trains in reduced precision on a GPU; this run trains "
                f"on the CPU, which has no {'AMX bf16 tiles' if precision == 'bf16' else 'fp16 units'}"
                f" to gain from it: use --precision fp32 {choices}")
    return f"--precision {precision}: training on {device} supports only fp32 {choices}"


def check_precision(precision: str, device: torch.device) -> None:
    """Raise :class:`ConfigurationError` where ``precision`` cannot train on ``device``."""
    refusal = precision_refusal(precision, device)
    if refusal is not None:
        raise ConfigurationError(refusal)


def _cpu_has_amx() -> bool:
    checks = getattr(torch.cpu, "_is_amx_tile_supported", None)
    return bool(checks()) if checks is not None else False


class _Unscaled:
    """The loss scaler of fp32 and bf16 training: none (the gradients are their true size)."""

    def scale(self, loss: torch.Tensor) -> torch.Tensor:
        return loss

    def unscale_(self, optimizer: Any) -> None:
        pass

    def step(self, optimizer: Any) -> None:
        optimizer.step()

    def update(self) -> None:
        pass

    def state_dict(self) -> Dict[str, Any]:
        return {}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        pass


class Precision:
    """One training's precision (see the module docstring). The fp16 scaler's state is part
    of a checkpoint (:meth:`state_dict`), so that a resumed candidate scales as it would have.
    """

    def __init__(self, name: str = "fp32", device: torch.device = torch.device("cpu")):
        check_precision(name, device)
        self.name = name
        self.device = device
        self.reduced = name != "fp32"
        self._scaler = (torch.amp.GradScaler(device.type) if name == "fp16" else _Unscaled())

    def autocast(self):
        if not self.reduced:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=_DTYPES[self.name])

    def scale(self, loss: torch.Tensor) -> torch.Tensor:
        """The loss to run the backward pass from (scaled for fp16)."""
        return self._scaler.scale(loss)

    def unscale(self, optimizer: Any) -> None:
        """Bring the gradients back to their true size (before clipping them)."""
        self._scaler.unscale_(optimizer)

    def step(self, optimizer: Any) -> None:
        """Apply the gradients (the scaler skips a step whose gradients overflowed)."""
        self._scaler.step(optimizer)
        self._scaler.update()

    def state_dict(self) -> Dict[str, Any]:
        return self._scaler.state_dict()

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        if state:
            self._scaler.load_state_dict(state)
