"""Watch: the training callbacks of one candidate, kept from changing what it trains to.

An evaluator makes one Watch per evaluation: fresh callback instances, called at the steps
they are due and at each epoch's end. A callback that raises is left out for the rest of the
evaluation and named in ``diagnostics`` (with ``strict=True`` the error is raised at the
epoch's end instead, on every rank alike). Callbacks run with the random generators' states
and the network's train/eval mode put back afterwards, so watching never changes a result::

    watch = Watch([GradientNorms, DeadReLUs], model, optimizer, probe, epochs=5, steps=100)
    watch.start(epochs_done=0)
    for epoch in range(1, 6):
        watch.begin_epoch(epoch)
        ...                                   # each step: watch.step(epoch, step, loss)
        scalars, series = watch.epoch_end(epoch, steps, metrics)
    watch.end(epoch)

Per-step values are thinned evenly to at most ``MAX_POINTS`` per candidate and metric; the
last value of each epoch is always kept. Details: docs/evaluators.md, "Training callbacks".
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from nord.evaluators.bus import Bus
from nord.evaluators.callbacks import (CallbackError, TrainingCallback, TrainingState,
                                       fresh_callback)

__all__ = ["Watch", "MAX_POINTS"]

MAX_POINTS = 1000
"""Per-step points kept per candidate and metric, epoch ends included."""


class Watch:
    """The callbacks of one evaluation of a candidate (see the module docstring).

    Args:
        specs: TrainingCallback classes, factories or instances (each made fresh here).
        model: the network being trained.
        optimizer: its optimizer.
        probe: a fixed batch of validation inputs (None without one).
        strict: raise a callback's error (at the epoch's end) instead of recording it.
        epochs: the most epochs the candidate trains (sizes the thinning of series).
        steps: training steps per epoch (likewise).
    """

    def __init__(self, specs: Sequence[Any], model, optimizer, probe=None, *,
                 strict: bool = False, epochs: int = 1, steps: int = 1):
        self.callbacks: List[TrainingCallback] = [fresh_callback(spec) for spec in specs]
        self.model = model
        self.optimizer = optimizer
        self.probe = probe
        self.strict = strict
        self.diagnostics: List[str] = []
        self._failed: Dict[int, str] = {}          # id(callback) -> its error
        self._error: Optional[CallbackError] = None
        self._series: List[List] = []              # [step, name, value] of this epoch
        self._unkept: Dict[int, List[List]] = {}   # id(callback) -> its last points not kept
        self._bus = Bus(model)
        self.latest: Dict[str, float] = {}        # each per-step scalar's last value
        self._strides = {}
        for callback in self.callbacks:
            if callback.every_steps:
                published = max(1, epochs) * max(1, steps // callback.every_steps)
                room = max(1, MAX_POINTS - max(1, epochs))
                self._strides[id(callback)] = max(1, math.ceil(published / room))
        self._per_epoch = {id(c): max(1, steps // c.every_steps)
                           for c in self.callbacks if c.every_steps}

    # --- lifecycle ------------------------------------------------------------------------
    def start(self, epochs_done: int) -> None:
        """Before the first step: ``on_candidate_start``."""
        self._call_all("on_candidate_start", self._state(epochs_done, 0))

    def begin_epoch(self, epoch: int) -> None:
        """Before the epoch's first step: the bus prepares what step 1 publishes."""
        self._series = []
        self._unkept = {}
        self._bus.prepare(self._topics_due(1))

    def step(self, epoch: int, step: int, loss: float) -> Dict[str, float]:
        """After step ``step`` of ``epoch``: the due callbacks' ``on_step``; returns the scalars
        they published (all of them, kept in the series or not)."""
        due = [c for c in self.callbacks
               if c.every_steps and step % c.every_steps == 0 and id(c) not in self._failed]
        published: Dict[str, float] = {}
        if due:
            topics = self._bus.publish()
            metrics = {"loss": loss, "lr": self.lr()}
            for callback in due:
                state = self._state(epoch, step, metrics, topics)
                values = self._call(callback, "on_step", state)
                if values:
                    points = [[step, name, value] for name, value in values.items()]
                    published.update(values)
                    index = (epoch - 1) * self._per_epoch[id(callback)] + step // callback.every_steps - 1
                    if index % self._strides[id(callback)] == 0:
                        self._series.extend(points)
                        self._unkept.pop(id(callback), None)
                    else:
                        self._unkept[id(callback)] = points
        self._bus.prepare(self._topics_due(step + 1))
        self.latest.update(published)
        return published

    def due(self, step: int) -> bool:
        """Whether some callback is due at ``step`` by its schedule (failed or not: the same on
        every rank)."""
        return any(c.every_steps and step % c.every_steps == 0 for c in self.callbacks)

    def lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    def epoch_end(self, epoch: int, steps: int, metrics: Dict[str, float]
                  ) -> Tuple[Dict[str, float], List[List]]:
        """The callbacks' scalars at the end of ``epoch`` and the epoch's kept series.

        Raises:
            CallbackError: with ``strict``, a callback that failed during the epoch.
        """
        self._bus.prepare(())
        scalars = self._call_all("on_epoch_end", self._state(epoch, steps, dict(metrics)))
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        for points in self._unkept.values():   # the epoch's last value is always kept
            self._series.extend(points)
        series = sorted(self._series, key=lambda point: (point[0], point[1]))
        self._series, self._unkept = [], {}
        return scalars, series

    def end(self, epoch: int) -> None:
        """After the last epoch (or a failure): ``on_candidate_end``; hooks removed."""
        self._bus.prepare(())
        self._call_all("on_candidate_end", self._state(epoch, 0))
        self._error = None

    # --- parts ------------------------------------------------------------------------------
    def _topics_due(self, step: int) -> List[str]:
        topics: List[str] = []
        for callback in self.callbacks:
            if (callback.every_steps and callback.topics and step % callback.every_steps == 0
                    and id(callback) not in self._failed):
                topics.extend(topic for topic in callback.topics if topic not in topics)
        return topics

    def _state(self, epoch, step, metrics=None, topics=None) -> TrainingState:
        return TrainingState(epoch, step, self.model, self.optimizer, metrics or {}, self.probe,
                             topics or {})

    def _call_all(self, hook: str, state: TrainingState) -> Dict[str, float]:
        merged: Dict[str, float] = {}
        for callback in self.callbacks:
            if id(callback) not in self._failed:
                merged.update(self._call(callback, hook, state) or {})
        return merged

    def _call(self, callback: TrainingCallback, hook: str,
              state: TrainingState) -> Optional[Dict[str, float]]:
        """One hook of one callback, with the random generators and the network's mode put
        back; a failure is recorded (or kept to raise) and the callback left out."""
        rng = torch.get_rng_state()
        device = state.probe.device if state.probe is not None else None
        cuda_rng = (torch.cuda.get_rng_state(device)
                    if device is not None and device.type == "cuda" else None)
        training = self.model.training
        try:
            values = getattr(callback, hook)(state)
            return {str(key): float(value) for key, value in (values or {}).items()}
        except Exception as error:  # noqa: BLE001 - a diagnostic never decides the candidate
            where = f"at epoch {state.epoch}" + (f", step {state.step}" if hook == "on_step"
                                                 else "")
            reason = (f"training callback {callback.name!r} ({type(callback).__name__}) failed "
                      f"in {hook} {where}: {type(error).__name__}: {error}")
            self._failed[id(callback)] = reason
            if self.strict:
                if self._error is None:
                    self._error = CallbackError(reason)
                    self._error.__cause__ = error
            else:
                self.diagnostics.append(reason + "; it was left out for the rest of the "
                                                 "evaluation")
            return None
        finally:
            torch.set_rng_state(rng)
            if cuda_rng is not None:
                torch.cuda.set_rng_state(cuda_rng, device)
            if self.model.training != training:
                self.model.train(training)
