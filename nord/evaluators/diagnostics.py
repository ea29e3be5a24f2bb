"""Diagnostics: a candidate's training callbacks and stopping rules, as one training listener.

The callbacks (``nord.evaluators.callbacks``, run by a :class:`~nord.evaluators.watch.Watch`)
add scalars to each epoch's record and may publish per-step values; the stopping rules
(``nord.evaluators.stop_rules``) read those and the epoch's figures, and end training where one
holds: at an epoch's end, or at a step for rules that test ``finite(...)`` or read
``nonfinite``. The group root decides, so that every rank of a data-parallel group stops alike::

    diagnostics = Diagnostics(callbacks, stop_rules, strict=False)
    ...                                     # a listener of the training run
    stopped = diagnostics.divergence(error, epoch)     # a NaN loss a rule takes as its stop
    result.metrics['diagnostics'] = diagnostics.notes     # and 'callback_changes': .changes
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from nord.evaluators.listeners import EpochEnd, TrainingListener
from nord.evaluators.stop_rules import first_firing
from nord.evaluators.watch import Watch

__all__ = ["Diagnostics", "RuleFired"]


class RuleFired(Exception):
    """A stopping rule held at a step: training ends there (``stopped`` says where)."""

    def __init__(self, stopped: Dict[str, Any]):
        super().__init__(f"stopping rule {stopped['rule']!r} held")
        self.stopped = stopped


class _Unwatched:
    """The watch of a training without callbacks: nothing published, nothing recorded."""

    latest: Dict[str, float] = {}
    diagnostics: List[str] = []
    changes: List[str] = []

    def begin_epoch(self, epoch: int) -> None:
        pass

    def epoch_end(self, epoch, steps, metrics):
        return {}, []

    def end(self, epoch: int) -> None:
        pass


class Diagnostics(TrainingListener):
    """The callbacks and stopping rules of one candidate's training.

    Args:
        callbacks: TrainingCallback classes, factories or instances (each made fresh).
        rules: parsed stopping rules (``parse_rules``).
        strict: a callback that raises fails the candidate (by default it is a note).
        epochs: the most epochs the candidate trains (sizes the thinning of series).
    """

    def __init__(self, callbacks: Sequence[Any], rules: Sequence[Any], strict: bool = False,
                 epochs: int = 1):
        self.callbacks = list(callbacks)
        self.rules = list(rules)
        self.strict = strict
        self.epochs = int(epochs)
        self.notes: List[str] = []
        self.changes: List[str] = []   # what a callback changed of the training ('lr', 'weights')
        self._finite_rules = [rule for rule in self.rules if rule.checks_finite]
        self._watch: Any = _Unwatched()
        self.wants_steps = False

    def __bool__(self) -> bool:
        return bool(self.callbacks or self.rules)

    # --- the listener --------------------------------------------------------------------
    def started(self, run, epochs_done: int) -> None:
        if not self.callbacks:
            return
        self._watch = Watch(self.callbacks, run.model, run.optimizer, run.probe(),
                            strict=self.strict, epochs=self.epochs, steps=run.steps_per_epoch)
        self.wants_steps = any(c.every_steps for c in self._watch.callbacks)
        self._watch.start(epochs_done)

    def epoch_started(self, run, epoch: int) -> None:
        self._watch.begin_epoch(epoch)

    def step_ended(self, run, epoch: int, step: int, loss: float) -> None:
        published = self._watch.step(epoch, step, loss)
        if self._finite_rules and self._watch.due(step):
            values = {**published, "loss": loss, "lr": self._watch.lr()}   # nord's own last
            fired = first_firing(self._finite_rules, values, finite_only=True)
            text = run.group.root_decides(None if fired is None else fired.text)
            if text is not None:
                raise RuleFired({"rule": text, "epoch": epoch, "step": step,
                                 "trained": epoch - 1})

    def epoch_ended(self, run, end: EpochEnd) -> None:
        """Add the callbacks' scalars and series to ``end``; stop where a rule holds."""
        if self.callbacks:
            error = None
            try:
                end.scalars, end.series = self._watch.epoch_end(end.epoch, end.steps,
                                                                end.figures)
            except Exception as failure:  # noqa: BLE001 - every rank must learn of it
                error = failure
            run.group.agree(error)
        if self.rules:
            values = {**self._watch.latest, **end.scalars, **end.figures,   # nord's own last
                      "lr": float(run.optimizer.param_groups[0]["lr"]), "epoch": float(end.epoch)}
            fired = first_firing(self.rules, values)
            text = run.group.root_decides(None if fired is None else fired.text)
            if text is not None:
                end.stopped = {"rule": text, "epoch": end.epoch, "step": None,
                               "trained": end.epoch}

    def ended(self, run, epochs_trained: int) -> None:
        self._watch.end(epochs_trained)
        self.notes = list(self._watch.diagnostics)
        self.changes = list(self._watch.changes)
        self._watch = _Unwatched()

    # --- a diverged epoch -----------------------------------------------------------------
    def divergence(self, run, error: BaseException, epoch: int) -> Optional[Dict[str, Any]]:
        """Where training diverged in ``epoch`` (``error``) and a rule testing ``finite`` takes
        that as its stop, the stop; else None (the candidate fails)."""
        if not self._finite_rules or not run.group.diverged(error):
            return None
        nan = float("nan")
        fired = first_firing(self._finite_rules, {"loss": nan, "train_loss": nan,
                                                  "nonfinite": 1.0}, finite_only=True)
        return None if fired is None else {"rule": fired.text, "epoch": epoch, "step": None,
                                           "trained": epoch - 1}
