"""A trained supernet as an evaluator: a NAS-Bench-201 cell is scored with the weights it
inherits, for any search algorithm nord has (imports torch).

    evaluator = SupernetEvaluator.from_checkpoint("runs/rsps.supernet.pt", Digits())
    result = evaluator.descriptor_evaluate(cell_to_descriptor((3, 3, 4, 1, 3, 1)))

The single-path idea: the cell's path through the supernet is the cell's stand-alone network
holding inherited weights (``Supernet.inherited_state``; a test shows both compute the same
logits). Its batch norms' running statistics were gathered over many cells, so they are
recalibrated for the cell first: reset, then averaged over ``recalibration_batches`` training
batches in training mode. The result's accuracy is the validation split's (the search signal);
nothing is trained, so a look-up costs a few forward passes.
"""
from __future__ import annotations

import math
import time
from typing import Any, Dict, Optional, Tuple

import torch
from torch import nn

from nord.architecture.descriptor import NeuralDescriptor
from nord.benchmarks.nasbench201.cells import descriptor_to_genome
from nord.benchmarks.nasbench201.supernet import Path, Supernet, check_image_shape
from nord.checks import check_int
from nord.data.curator import DataCurator, TensorLoader
from nord.errors import ConfigurationError
from nord.evaluators.base import Evaluator
from nord.evaluators.result import EvaluationResult
from nord.nn.training import resolve_device

SUPERNET_FORMAT = "nord-supernet/1"


def save_supernet(supernet: Supernet, path: str, **described: Any) -> None:
    """Write ``supernet`` (its settings and weights, and what else ``described`` says of the
    search that trained it) where :meth:`SupernetEvaluator.from_checkpoint` reads it."""
    torch.save({"format": SUPERNET_FORMAT, "settings": dict(supernet.settings),
                "state": supernet.state_dict(), "described": described}, path)


class SupernetEvaluator(Evaluator):
    """Scores NAS-Bench-201 cells with a trained supernet's weights.

    Args:
        supernet: the trained supernet (its weights are not changed: each cell is scored on
            a copy of its batch norms' statistics).
        curator: the data set the supernet was trained on.
        recalibration_batches: training batches the batch norms' statistics are averaged
            over for each cell.
        batch_size: of the recalibration and validation batches.
        device: where cells are scored.
    """

    def __init__(self, supernet: Supernet, curator: DataCurator, recalibration_batches: int = 10,
                 batch_size: int = 256, device: str = "cpu", described: Optional[Dict] = None):
        if not isinstance(supernet, Supernet):
            raise ConfigurationError(f"SupernetEvaluator takes a trained Supernet; got "
                                     f"{type(supernet).__name__}")
        self.device = resolve_device(device)
        self.supernet = supernet.to(self.device).eval()
        self.curator = curator.load() if hasattr(curator, "load") else curator
        check_image_shape(self.curator.input_shape, "a supernet evaluator")
        if tuple(self.curator.input_shape)[:1] != (supernet.settings["input_channels"],) or \
                self.curator.num_classes != supernet.settings["num_classes"]:
            raise ConfigurationError(
                f"the supernet was trained on images of {supernet.settings['input_channels']} "
                f"channel(s) and {supernet.settings['num_classes']} classes; this data set has "
                f"samples of shape {tuple(self.curator.input_shape)} and "
                f"{self.curator.num_classes} classes: evaluate with the data set it was "
                "trained on")
        self.recalibration_batches = check_int(recalibration_batches, "recalibration_batches", 0)
        self.batch_size = check_int(batch_size, "batch_size", 1)
        self.described = dict(described or {})
        self._norms = [m for m in supernet.modules() if isinstance(m, nn.BatchNorm2d)
                       and m.track_running_stats]
        self._statistics = [(m.running_mean.clone(), m.running_var.clone(),
                             m.num_batches_tracked.clone(), m.momentum) for m in self._norms]
        x, y = self.curator.tensors("train", self.device)
        self._calibration = TensorLoader(x, y, self.batch_size, shuffle=True, seed=0)
        self._validation = self.curator.test_loader(self.batch_size, device=self.device,
                                                    split="valid")

    @classmethod
    def from_checkpoint(cls, path: str, curator: DataCurator, **settings: Any
                        ) -> "SupernetEvaluator":
        """The evaluator of the supernet :func:`save_supernet` wrote to ``path``."""
        state = torch.load(path, map_location="cpu", weights_only=False)
        if not isinstance(state, dict) or state.get("format") != SUPERNET_FORMAT:
            raise ConfigurationError(
                f"'{path}' holds no trained supernet (a file written when a weight-sharing "
                "search ends); give the supernet of a finished search")
        supernet = Supernet(**state["settings"])
        supernet.load_state_dict(state["state"])
        return cls(supernet, curator, described=state["described"], **settings)

    def describe(self) -> Dict[str, Any]:
        return {**super().describe(), "supernet": dict(self.supernet.settings),
                "recalibration_batches": self.recalibration_batches,
                "signal": "validation accuracy with inherited weights", **self.described}

    def _evaluate(self, descriptor: NeuralDescriptor) -> EvaluationResult:
        started = time.perf_counter()
        genome = descriptor_to_genome(descriptor)
        rule = Path(genome)
        try:
            self._recalibrate(rule)
            correct, total, loss = self._validate(rule)
        finally:
            self._restore()
        return EvaluationResult(accuracy=correct / total if total else math.nan,
                                loss=loss / total if total else math.nan,
                                eval_time=time.perf_counter() - started, epochs=0,
                                metrics={"inherited": 1.0})

    def _recalibrate(self, rule: Path) -> None:
        """The cell's own batch statistics, averaged over the recalibration batches."""
        if not self.recalibration_batches:
            return
        for norm in self._norms:
            norm.reset_running_stats()
            norm.momentum = None               # a cumulative average
        self.supernet.train()
        self._calibration.set_epoch(0)          # the same batches for every cell
        with torch.no_grad():
            for number, (x, _) in enumerate(self._calibration):
                if number == self.recalibration_batches:
                    break
                self.supernet(x, rule)
        self.supernet.eval()

    def _validate(self, rule: Path) -> Tuple[int, int, float]:
        correct = total = 0
        loss = 0.0
        with torch.no_grad():
            for x, y in self._validation:
                logits = self.supernet(x, rule)
                correct += int((logits.argmax(dim=-1) == y).sum())
                loss += float(nn.functional.cross_entropy(logits, y, reduction="sum"))
                total += len(y)
        return correct, total, loss

    def _restore(self) -> None:
        for norm, (mean, var, count, momentum) in zip(self._norms, self._statistics):
            norm.running_mean.copy_(mean)
            norm.running_var.copy_(var)
            norm.num_batches_tracked.copy_(count)
            norm.momentum = momentum
