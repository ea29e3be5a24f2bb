"""What happens around a candidate's epochs and steps, said by listeners a training run calls.

A :class:`~nord.evaluators.training_run.TrainingRun` trains; its listeners, called in the order
of its list, do everything else: the progress bar, the diagnostics (callbacks and stopping
rules), the learning-rate schedule, the checkpoint writer and the epoch reporter. A listener
that has nothing to do is left out of the list, so the loop never asks whether there is one::

    for listener in [ProgressBars(target), diagnostics, LearningRate(schedule),
                     CheckpointWriter(path, descriptor, ...), EpochReporter(leg.report)]:
        listener.started(run, epochs_done)        # then, for each epoch (counted from 1):
        listener.epoch_started(run, epoch)        # step_ended(run, epoch, step, loss) where
        listener.epoch_ended(run, end)            # wants_steps; epoch_ended with an EpochEnd
        listener.ended(run, epochs_trained)       # filled in turn

Each epoch's end is one :class:`EpochEnd` handed down the list: the diagnostics add their
scalars and may stop training (``end.stopped``), the schedule sets the next rate, the
checkpoint writer keeps the epoch unless training stopped, the reporter sends its record.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from nord.errors import DiskFullError
from nord.evaluators.checkpoints import save_checkpoint
from nord.evaluators.result import EpochRecord
from nord.nn.schedules import Schedule
from nord.nn.training import ProgressBar

__all__ = ["EpochEnd", "TrainingListener", "LearningRate", "CheckpointWriter", "EpochReporter",
           "ProgressBars"]

logger = logging.getLogger(__name__)


@dataclass
class EpochEnd:
    """One finished epoch, as the listeners see it in turn.

    Attributes:
        epoch: epochs completed (1 after the first).
        train_loss, valid_accuracy, valid_loss: the epoch's figures.
        started: ``time.perf_counter()`` when the epoch began.
        steps: training steps in the epoch.
        scalars: the callbacks' scalars; ``series`` their kept per-step values.
        stopped: where a stopping rule ended training (None: it goes on).
    """

    epoch: int
    train_loss: float
    valid_accuracy: float
    valid_loss: float
    started: float
    steps: int
    scalars: Dict[str, float] = field(default_factory=dict)
    series: List[List[Any]] = field(default_factory=list)
    stopped: Optional[Dict[str, Any]] = None
    _record: Optional[EpochRecord] = field(default=None, repr=False)

    @property
    def figures(self) -> Dict[str, float]:
        """The epoch's loss and validation figures by name (what stopping rules read)."""
        return {"train_loss": self.train_loss, "valid_accuracy": self.valid_accuracy,
                "valid_loss": self.valid_loss}

    @property
    def record(self) -> EpochRecord:
        """The journal's record of the epoch, timed when first asked for (after the
        diagnostics, which it holds)."""
        if self._record is None:
            self._record = EpochRecord(self.epoch, self.train_loss, self.valid_accuracy,
                                       self.valid_loss, time.perf_counter() - self.started,
                                       self.scalars, self.series)
        return self._record


class TrainingListener:
    """A part of training that acts around epochs and steps; every hook does nothing unless
    overridden. ``wants_steps``: whether :meth:`step_ended` should be called at all."""

    wants_steps = False

    def started(self, run, epochs_done: int) -> None:
        """Before the first epoch (``epochs_done`` of them come from a checkpoint)."""

    def epoch_started(self, run, epoch: int) -> None:
        """Before the first step of ``epoch`` (counted from 1)."""

    def step_ended(self, run, epoch: int, step: int, loss: float) -> None:
        """After a training step; may raise to end the epoch (a stopping rule)."""

    def epoch_ended(self, run, end: EpochEnd) -> None:
        """After the epoch's validation, in list order."""

    def ended(self, run, epochs_trained: int) -> None:
        """After the last epoch, or a failure."""


class LearningRate(TrainingListener):
    """Steps the recipe's schedule after each epoch (after the diagnostics, which read the
    epoch's own rate; before the checkpoint, which keeps the next)."""

    def __init__(self, schedule: Schedule):
        self.schedule = schedule

    def epoch_ended(self, run, end: EpochEnd) -> None:
        if end.stopped is None:
            self.schedule.step()


class CheckpointWriter(TrainingListener):
    """Keeps the candidate's checkpoint (``leg.checkpoint``): after an epoch and its
    diagnostics, before the epoch is reported, at the end of a leg that pauses (a scheduler
    may promote it) and every ``checkpoint_every`` epochs within a leg (a killed run goes on
    from there). A stopped epoch is not kept: a resume would train it again."""

    def __init__(self, path: str, descriptor, every: int, keep_at_end: bool, target: int):
        self.path = path
        self.descriptor = descriptor
        self.every = int(every)
        self.keep_at_end = bool(keep_at_end)
        self.target = int(target)

    def epoch_ended(self, run, end: EpochEnd) -> None:
        run.progress.records.append(end.record)
        if end.stopped is not None:
            return
        if end.epoch == self.target and self.keep_at_end:
            run.progress.leg_end = True
            error = None
            try:
                if run.group.is_root:
                    self._save(run, end.epoch)
            except Exception as failure:  # noqa: BLE001 - every rank must learn of it
                error = failure
            run.group.agree(error)
        elif self.every and end.epoch % self.every == 0:
            # the last epoch's too: a stop before the result is back would train it again
            if run.group.is_root:
                try:
                    self._save(run, end.epoch)
                except DiskFullError:
                    raise   # the run stops, and goes on from the last checkpoint once freed
                except Exception as failure:  # noqa: BLE001 - only a kill needs it
                    logger.warning("could not write the checkpoint %s after epoch %d (%s: %s); "
                                   "training goes on, and a killed run would go on from the "
                                   "previous one", self.path, end.epoch,
                                   type(failure).__name__, failure)

    def _save(self, run, epochs: int) -> None:
        save_checkpoint(self.path, self.descriptor, run.model, run.optimizer, epochs, run.device,
                        run.progress, run.stateful_parts())


class EpochReporter(TrainingListener):
    """Sends each finished epoch's record to the engine (``leg.report``: the journal's learning
    curve). A leg cut short is reported again from its checkpoint's records, since the journal
    may have missed its last epochs (it keeps one row an epoch)."""

    def __init__(self, report: Callable[[EpochRecord], None]):
        self.report = report

    def started(self, run, epochs_done: int) -> None:
        for record in run.progress.records:
            self.report(record)

    def epoch_ended(self, run, end: EpochEnd) -> None:
        self.report(end.record)


class ProgressBars(TrainingListener):
    """A progress bar of each epoch's steps, on the group root's stderr."""

    wants_steps = True

    def __init__(self, target: int):
        self.target = int(target)
        self._bar: Optional[ProgressBar] = None

    def epoch_started(self, run, epoch: int) -> None:
        self._bar = ProgressBar(run.steps_per_epoch, f"epoch {epoch}/{self.target}")

    def step_ended(self, run, epoch: int, step: int, loss: float) -> None:
        self._bar(step, loss)
