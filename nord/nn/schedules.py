"""Learning-rate schedules made from a recipe: torch's own schedulers, stepped once an epoch.

    schedule = make_schedule(recipe, optimizer, epochs=200)   # the epochs it spans
    for epoch in range(epochs):
        train_epoch(...)
        schedule.step()                     # the rate of the next epoch
    state = schedule.state_dict()           # a checkpoint's: where the schedule stands

The parts are torch's ``LinearLR`` (warm-up and linear decay), ``CosineAnnealingLR`` and
``StepLR``, chained by ``SequentialLR`` after a warm-up, so that a loop written with them by
hand takes the very same rates. A constant rate without warm-up is no scheduler at all: the
optimizer is left exactly as nord always built it.
"""
from __future__ import annotations

from typing import Any, Dict, List

import torch
from torch.optim import lr_scheduler

from nord.nn.recipe import Recipe

__all__ = ["Schedule", "ConstantRate", "make_schedule"]


class Schedule:
    """An optimizer's learning rate over epochs, set by a torch scheduler: :meth:`step` after
    each epoch, its state in checkpoints."""

    def __init__(self, scheduler: Any):
        self._scheduler = scheduler

    def step(self) -> None:
        """The epoch has ended: set the next epoch's rate."""
        self._scheduler.step()

    def state_dict(self) -> Dict[str, Any]:
        return self._scheduler.state_dict()

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Where a checkpoint's schedule stood."""
        if state:
            self._scheduler.load_state_dict(state)


class ConstantRate(Schedule):
    """The rate the optimizer was made with, for every epoch: no scheduler, nothing to keep."""

    def __init__(self):
        super().__init__(None)

    def step(self) -> None:
        pass

    def state_dict(self) -> Dict[str, Any]:
        return {}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        pass


def make_schedule(recipe: Recipe, optimizer: torch.optim.Optimizer, epochs: int,
                  scale: float = 1.0) -> Schedule:
    """The schedule ``recipe`` prescribes over ``epochs`` epochs (warm-up included), set to
    its first epoch's rate; ``optimizer`` was made with the recipe's ``lr`` times ``scale``
    (a data-parallel group's ``scale_lr``), and every rate of the schedule is scaled alike."""
    warmup = recipe.warmup_epochs
    decay = max(1, int(epochs) - warmup)
    phases: List[Any] = []
    if warmup:
        phases.append(lr_scheduler.LinearLR(optimizer, start_factor=recipe.warmup_lr / recipe.lr,
                                            end_factor=1.0, total_iters=warmup))
    if recipe.lr_schedule == "cosine":
        phases.append(lr_scheduler.CosineAnnealingLR(optimizer, T_max=decay,
                                                     eta_min=recipe.min_lr * scale))
    elif recipe.lr_schedule == "linear":
        phases.append(lr_scheduler.LinearLR(optimizer, start_factor=1.0,
                                            end_factor=recipe.min_lr / recipe.lr,
                                            total_iters=decay))
    elif recipe.lr_schedule == "step":
        phases.append(lr_scheduler.StepLR(optimizer, step_size=recipe.decay_epochs,
                                          gamma=recipe.decay_rate))
    if not phases:
        return ConstantRate()
    if len(phases) == 1:
        return Schedule(phases[0])
    return Schedule(lr_scheduler.SequentialLR(optimizer, phases, milestones=[warmup]))
