"""Evaluators for the worker-process tests, built in each worker from picklable settings.

* ``make_toy(device, ...)``: a :class:`~tests.helpers.toy.ToyEvaluator` (or ``ToyCurves``).
* ``SelfKilling``: a worker that meets genome ``(2, 2)`` is killed by a real SIGKILL, as the
  out-of-memory killer would kill it.
* ``Crowded``: raises ``torch.cuda.OutOfMemoryError`` (the real exception type) whenever another
  evaluation is running at the same time (marker files in a shared folder), and for
  ``(3, 3)`` always: the executor's retry-alone path, on the CPU.

``log`` files get one line per evaluation started: ``"<pid> <width> <kernel>"``.
"""
from __future__ import annotations

import os
import signal
import time
from typing import Optional

from tests.helpers.toy import ToyCurves, ToyEvaluator


def _widths(descriptor):
    conv = next(layer for layer in descriptor.layers.values() if layer.type == "conv2d")
    return conv.params["out_channels"], conv.params["kernel_size"]


def _note(log: Optional[str], descriptor) -> None:
    if log:
        width, kernel = _widths(descriptor)
        with open(log, "a") as handle:
            handle.write(f"{os.getpid()} {width} {kernel}\n")


def make_toy(device: str, sleep: float = 0.0, log: Optional[str] = None, curves: int = 0):
    """A ToyEvaluator, or with ``curves`` a ToyCurves training up to that many epochs."""
    evaluator = ToyCurves(max_epochs=curves, sleep=sleep) if curves else ToyEvaluator(sleep=sleep)
    evaluator.device = device
    evaluator.worker_log = log
    return evaluator


class SelfKilling(ToyEvaluator):
    def __init__(self, device: str, sleep: float = 0.0, log: Optional[str] = None):
        super().__init__(sleep)
        self.worker_log = log

    def _evaluate(self, descriptor):
        _note(self.worker_log, descriptor)
        if _widths(descriptor) == (2, 2):
            os.kill(os.getpid(), signal.SIGKILL)
        return super()._evaluate(descriptor)


class Crowded(ToyEvaluator):
    def __init__(self, device: str, folder: str, sleep: float = 0.2,
                 log: Optional[str] = None):
        super().__init__(0.0)
        self.folder = folder
        self.pause = sleep
        self.worker_log = log

    def _evaluate(self, descriptor):
        import torch
        _note(self.worker_log, descriptor)
        marker = os.path.join(self.folder, str(os.getpid()))
        open(marker, "w").close()
        try:
            time.sleep(self.pause)
            if _widths(descriptor) == (3, 3) or len(os.listdir(self.folder)) > 1:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory (toy: not alone)")
        finally:
            os.remove(marker)
        return super()._evaluate(descriptor)
