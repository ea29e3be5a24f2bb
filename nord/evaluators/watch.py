"""Watch: the training callbacks of one candidate, kept from changing what it trains to.

An evaluator makes one Watch per evaluation: fresh callback instances, called at the steps
they are due (and at an epoch's last step where the epoch is shorter than their sampling) and
at each epoch's end. A callback that raises (``SystemExit`` and any other exception but a
``KeyboardInterrupt``, which is a stop signal) is left out for the rest of the evaluation and
named in ``diagnostics`` (with ``strict=True`` the error is raised at the epoch's end instead,
on every rank alike). Callbacks run with the random generators' states and the network's
train/eval mode put back afterwards, so watching never changes a result by accident; a
callback that changes the optimizer's settings or the weights is named in ``diagnostics``
(``changes`` says what), and a scalar it returns by the name of one of nord's own figures,
another callback's, or no ``str`` name, or beyond ``MAX_SCALARS``, is left out and named::

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
from nord.evaluators.stop_rules import BUILT_IN_SCALARS

__all__ = ["Watch", "MAX_POINTS", "MAX_SCALARS"]

MAX_POINTS = 1000
"""Per-step points kept per candidate and metric, epoch ends included."""
MAX_SCALARS = 5000
"""Scalars one callback may record in one call (an epoch's end or a step); the rest are left
out, with a diagnostic. ``histograms`` on the largest NAS-Bench-201 network records 2,904;
20,000 scalars would add about 0.45 MB to the journal every epoch."""


class Watch:
    """The callbacks of one evaluation of a candidate (see the module docstring).

    Args:
        specs: TrainingCallback classes, factories or instances (each made fresh here).
        model: the network being trained.
        optimizer: its optimizer.
        probe: a fixed batch of validation inputs (None without one).
        strict: raise a callback's error (at the epoch's end) instead of recording it.
        epochs: the most epochs the candidate trains (sizes the thinning of series).
        steps: training steps per epoch (likewise; and where a callback samples an epoch
            shorter than its ``every_steps``: at its last step).
    """

    def __init__(self, specs: Sequence[Any], model, optimizer, probe=None, *,
                 strict: bool = False, epochs: int = 1, steps: int = 1):
        self.callbacks: List[TrainingCallback] = [fresh_callback(spec) for spec in specs]
        self.model = model
        self.optimizer = optimizer
        self.probe = probe
        self.strict = strict
        self.steps = max(1, int(steps))
        self.diagnostics: List[str] = []
        self.changes: List[str] = []               # what callbacks changed: 'lr', 'weights', ...
        self._failed: Dict[int, str] = {}          # id(callback) -> its error
        self._error: Optional[CallbackError] = None
        self._series: List[List] = []              # [step, name, value] of this epoch
        self._unkept: Dict[int, List[List]] = {}   # id(callback) -> its last points not kept
        self._owners: Dict[str, int] = {}          # scalar name -> id(the callback recording it)
        self._said: set = set()                    # (id(callback), what...) already said
        self._bus = Bus(model)
        self._tensors = [t for t in (*model.parameters(), *model.buffers())
                         if t.is_floating_point()]
        self.latest: Dict[str, float] = {}        # each per-step scalar's last value
        self._strides = {}
        for callback in self.callbacks:
            if callback.every_steps:
                published = max(1, epochs) * self._per_epoch(callback)
                room = max(1, MAX_POINTS - max(1, epochs))
                self._strides[id(callback)] = max(1, math.ceil(published / room))

    # --- lifecycle ------------------------------------------------------------------------
    def start(self, epochs_done: int) -> None:
        """Before the first step: ``on_candidate_start``."""
        self._call_all("on_candidate_start", epochs_done, 0)

    def begin_epoch(self, epoch: int) -> None:
        """Before the epoch's first step: the bus prepares what step 1 publishes."""
        self._series = []
        self._unkept = {}
        self._bus.prepare(self._topics_due(1))

    def step(self, epoch: int, step: int, loss: float) -> Dict[str, float]:
        """After step ``step`` of ``epoch``: the due callbacks' ``on_step``; returns the scalars
        they published (all of them, kept in the series or not)."""
        due = [c for c in self.callbacks if self._is_due(c, step) and id(c) not in self._failed]
        published: Dict[str, float] = {}
        if due:
            topics = self._bus.publish()
            metrics = {"loss": loss, "lr": self.lr()}
            for callback, values in self._call_each(due, "on_step", epoch, step, metrics, topics):
                if values:
                    points = [[step, name, value] for name, value in values.items()]
                    published.update(values)
                    index = ((epoch - 1) * self._per_epoch(callback)
                             + max(1, step // callback.every_steps) - 1)
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
        return any(self._is_due(c, step) for c in self.callbacks)

    def lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    def epoch_end(self, epoch: int, steps: int, metrics: Dict[str, float]
                  ) -> Tuple[Dict[str, float], List[List]]:
        """The callbacks' scalars at the end of ``epoch`` and the epoch's kept series.

        Raises:
            CallbackError: with ``strict``, a callback that failed during the epoch.
        """
        self._bus.prepare(())
        scalars = self._call_all("on_epoch_end", epoch, steps, metrics)
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
        self._call_all("on_candidate_end", epoch, 0)
        self._error = None

    # --- the schedule -----------------------------------------------------------------------
    def _is_due(self, callback: TrainingCallback, step: int) -> bool:
        """Every ``every_steps`` steps; in an epoch shorter than that, at its last step (so
        that each epoch has a sample)."""
        every = callback.every_steps
        return bool(every) and (step % every == 0 or (step == self.steps < every))

    def _per_epoch(self, callback: TrainingCallback) -> int:
        return max(1, self.steps // callback.every_steps)

    def _topics_due(self, step: int) -> List[str]:
        topics: List[str] = []
        for callback in self.callbacks:
            if (callback.topics and self._is_due(callback, step)
                    and id(callback) not in self._failed):
                topics.extend(topic for topic in callback.topics if topic not in topics)
        return topics

    # --- calling ------------------------------------------------------------------------------
    def _call_all(self, hook: str, epoch: int, step: int,
                  metrics: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        live = [c for c in self.callbacks if id(c) not in self._failed]
        merged: Dict[str, float] = {}
        for _, values in self._call_each(live, hook, epoch, step, metrics or {}):
            merged.update(values)
        return merged

    def _call_each(self, callbacks: List[TrainingCallback], hook: str, epoch: int, step: int,
                   metrics: Dict[str, float], topics=None
                   ) -> List[Tuple[TrainingCallback, Dict[str, float]]]:
        """``hook`` of each callback in turn, each with its own state; what each returned that
        it may record. The optimizer's settings and a checksum of the weights are taken before
        the first and after each, so that a change is put down to the callback that made it
        (not around ``on_candidate_end``: the result is measured by then)."""
        answers = []
        watched = hook != "on_candidate_end"
        seen = self._fingerprint() if watched else None
        for callback in callbacks:
            state = TrainingState(epoch, step, self.model, self.optimizer, dict(metrics),
                                  self.probe, topics or {})
            values = self._call(callback, hook, state)
            if watched:
                now = self._fingerprint()
                if now[0] != seen[0] or not _same(now[1], seen[1]):
                    self._changed(callback, hook, state, seen, now)
                seen = now
            answers.append((callback, self._accepted(callback, hook, state, values)))
        return answers

    def _call(self, callback: TrainingCallback, hook: str,
              state: TrainingState) -> Dict[Any, float]:
        """One hook of one callback, with the random generators and the network's mode put
        back; a failure is recorded (or kept to raise) and the callback left out."""
        rng = torch.get_rng_state()
        device = state.probe.device if state.probe is not None else None
        cuda_rng = (torch.cuda.get_rng_state(device)
                    if device is not None and device.type == "cuda" else None)
        training = self.model.training
        try:
            values = getattr(callback, hook)(state)
            return {key: float(value) for key, value in (values or {}).items()}
        except KeyboardInterrupt:
            raise   # a stop signal (RunInterrupted, Ctrl-C): the run stops, as it would anywhere
        except BaseException as error:  # noqa: B036 - SystemExit too: a diagnostic never decides
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
            return {}
        finally:
            torch.set_rng_state(rng)
            if cuda_rng is not None:
                torch.cuda.set_rng_state(cuda_rng, device)
            if self.model.training != training:
                self.model.train(training)

    # --- what a callback may record ---------------------------------------------------------
    def _accepted(self, callback: TrainingCallback, hook: str, state: TrainingState,
                  values: Dict[Any, float]) -> Dict[str, float]:
        """``values`` less the names a callback may not record (not a ``str``, one of nord's own
        figures, another callback's) and beyond ``MAX_SCALARS``; each kind said once."""
        kept: Dict[str, float] = {}
        refused: Dict[str, List[str]] = {}
        for name, value in values.items():
            if not isinstance(name, str):
                refused.setdefault("unnamed", []).append(f"{name!r} ({type(name).__name__})")
            elif name in BUILT_IN_SCALARS:
                refused.setdefault("built-in", []).append(repr(name))
            elif self._owners.setdefault(name, id(callback)) != id(callback):
                refused.setdefault("taken", []).append(repr(name))
            elif len(kept) >= MAX_SCALARS:
                refused.setdefault("too many", []).append(repr(name))
            else:
                kept[name] = value
        for kind, names in refused.items():
            if (id(callback), kind) in self._said:
                continue
            self._said.add((id(callback), kind))
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3
                                            else "")
            why = {"unnamed": "not names: a scalar's name is a str",
                   "built-in": (f"nord's own figures ({', '.join(BUILT_IN_SCALARS)}), which a "
                                "callback may not shadow"),
                   "taken": "names another callback records",
                   "too many": f"beyond the {MAX_SCALARS} scalars a callback may record at once"
                   }[kind]
            fix = ("record fewer, or several callbacks" if kind == "too many" else
                   f"name them in the callback's own namespace, e.g. '{callback.name}/<name>'")
            self.diagnostics.append(
                f"training callback {callback.name!r} ({type(callback).__name__}) returned "
                f"{shown} in {hook} at epoch {state.epoch}: {why}; they were left out (here "
                f"and whenever it returns them again): {fix}")
        return kept

    # --- what a callback changed ------------------------------------------------------------
    def _fingerprint(self) -> Tuple[Any, List[float]]:
        """The optimizer's settings (every param group's, but its parameters) and each weight
        and buffer's sum: what a callback must not change unseen. One reduction per tensor and
        one copy to the host, taken only around callbacks."""
        settings = [[(key, _plain(value)) for key, value in group.items() if key != "params"]
                    for group in self.optimizer.param_groups]
        if not self._tensors:
            return settings, []
        with torch.no_grad():
            sums = torch.stack([t.detach().sum().float() for t in self._tensors])
        return settings, sums.tolist()

    def _changed(self, callback, hook: str, state: TrainingState, before, after) -> None:
        """Say in ``diagnostics`` what ``callback`` changed (once per callback and setting)."""
        where = f"in {hook} at epoch {state.epoch}" + (f", step {state.step}"
                                                       if hook == "on_step" else "")
        said = []
        for group, (old, new) in enumerate(zip(before[0], after[0])):
            old, new = dict(old), dict(new)
            for key in sorted(set(old) | set(new), key=str):
                if (old.get(key) != new.get(key)
                        and (id(callback), "setting", key) not in self._said):
                    self._said.add((id(callback), "setting", key))
                    said.append(f"the optimizer's {key} from {old.get(key)!r} to "
                                f"{new.get(key)!r}" + (f" (param group {group})" if group else ""))
                    if key not in self.changes:
                        self.changes.append(str(key))
        if not _same(before[1], after[1]) and (id(callback), "weights") not in self._said:
            self._said.add((id(callback), "weights"))
            said.append("the network's weights")
            if "weights" not in self.changes:
                self.changes.append("weights")
        if said:
            self.diagnostics.append(
                f"training callback {callback.name!r} ({type(callback).__name__}) changed "
                f"{' and '.join(said)} {where}: the candidate's result is not what its recorded "
                "settings give (it is kept as trained)")


def _same(before: List[float], after: List[float]) -> bool:
    """Whether two checksums are equal, NaN to NaN too (a diverged weight stays NaN)."""
    return all(a == b or (a != a and b != b) for a, b in zip(before, after))


def _plain(value):
    """An optimizer setting as a value to compare later (a tensor copied as numbers)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().tolist()
    if isinstance(value, list):
        return tuple(value)
    return value
