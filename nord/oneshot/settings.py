"""The settings of the weight-sharing methods besides their weights' recipe, without torch: a
run's configuration checks them before anything is loaded (``--params``)."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Dict, Tuple

from nord.errors import ConfigurationError


@dataclass(frozen=True)
class MethodSettings:
    """What the methods learn with besides the weights' recipe; defaults are the benchmark's
    (the NAS-Bench-201 search scripts and configurations: docs/oneshot.md).

    Args:
        clip_grad: the supernet's gradient norm is clipped to this in every weight step.
        arch_lr, arch_betas, arch_weight_decay: Adam for the architecture parameters.
        tau_max, tau_min: GDAS's Gumbel-softmax temperature, annealed linearly over the epochs.
        candidates: cells a method scores when it derives one (SETN, ENAS, RSPS); 0: the
            method's own number (SETN and RSPS 100, ENAS 10).
        controller_steps, controller_aggregate: ENAS trains its controller at each epoch's end
            for ``controller_steps`` updates of ``controller_aggregate`` samples each.
        controller_lr, controller_betas, controller_eps: Adam for the controller.
        entropy_weight: the controller's reward adds this times its entropy.
        baseline_decay: of the reward's moving average, REINFORCE's baseline.
    """

    clip_grad: float = 5.0
    arch_lr: float = 3e-4
    arch_betas: Tuple[float, float] = (0.5, 0.999)
    arch_weight_decay: float = 1e-3
    tau_max: float = 10.0
    tau_min: float = 0.1
    candidates: int = 0
    controller_steps: int = 50
    controller_aggregate: int = 20
    controller_lr: float = 1e-3
    controller_betas: Tuple[float, float] = (0.0, 0.999)
    controller_eps: float = 1e-3
    entropy_weight: float = 1e-4
    baseline_decay: float = 0.99


def method_settings(params: Dict[str, Any]) -> MethodSettings:
    """``MethodSettings`` from a run's ``algorithm_params`` (``--params``).

    Raises:
        ConfigurationError: a key that is not a setting (the message lists them).
    """
    names = [f.name for f in fields(MethodSettings)]
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise ConfigurationError(
            f"--params {', '.join(unknown)}: a weight-sharing method takes {', '.join(names)}")
    values = {key: tuple(value) if isinstance(value, list) else value
              for key, value in params.items()}
    return MethodSettings(**values)
