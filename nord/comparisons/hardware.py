"""Hardware-aware search on NAS-Bench-201: the second objective, and a latency limit.

The cost a multi-objective comparison trades against accuracy (parameters, or the latency
on a device), and a latency limit that any algorithm can search under::

    from nord.comparisons.hardware import LatencyEvaluator, LatencyLimit, parse_objectives

    cost = parse_objectives("accuracy,latency:pixel3")   # the objective traded for accuracy
    cost.values("cifar10")          # milliseconds of every cell, in table order
    cost.reference                  # the hypervolume's reference on that axis: 39 ms
    limit = LatencyLimit("pixel3", 10.0)
    evaluator = LatencyEvaluator(BenchmarkEvaluator("cifar10"), "pixel3", limit)
    evaluator.evaluate_genome((3, 3, 4, 1, 3, 1))   # failed: 17.2 ms is over the limit

Details (objectives, devices, reference points, latencies, the limit): docs/comparisons.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Optional

import numpy as np

from nord.benchmarks.nasbench201 import (DEVICES, BenchmarkEvaluator, get_dataset, load_costs,
                                         load_table)
from nord.comparisons.dataset_table import DatasetTable
from nord.errors import BenchmarkError, ConfigurationError
from nord.evaluators.base import Evaluator
from nord.evaluators.result import EvaluationResult

__all__ = ["Objective", "LatencyLimit", "LatencyEvaluator", "parse_objectives", "latency_limit",
           "check_latency_dataset", "objective_names", "PARAMETERS_REFERENCE", "LATENCY_METRIC"]

PARAMETERS_REFERENCE = 1.6e6
"""Reference of the parameter axis: 1.6 M, above every NAS-Bench-201 network (1.53 M)."""

LATENCY_METRIC = "latency_ms"
"""Where ``LatencyEvaluator`` puts a cell's latency in ``result.metrics``."""

_LATENCY_DATASETS = ("cifar10", "cifar100")


def objective_names() -> str:
    """The valid ``--objectives`` values, for messages."""
    return ("'accuracy,parameters' or 'accuracy,latency:DEVICE' with DEVICE one of "
            + ", ".join(DEVICES))


def _round_up(value: float, digits: int = 2) -> float:
    """``value`` rounded up to ``digits`` significant digits."""
    scale = 10.0 ** (math.floor(math.log10(value)) - digits + 1)
    return round(math.ceil(value / scale - 1e-9) * scale, 10)


@dataclass(frozen=True)
class Objective:
    """The cost traded for accuracy: the parameter count, or the latency on a device.

    Attributes:
        name: 'parameters' or 'latency:DEVICE'.
        device: the device of a latency, else None.
    """

    name: str
    device: Optional[str] = None

    @property
    def metric(self) -> str:
        """What nsga2 minimises second (``PygmoAlgorithm``'s ``second_objective``)."""
        return "n_params" if self.device is None else LATENCY_METRIC

    @property
    def label(self) -> str:
        """The axis label: 'trainable parameters' or 'latency on pixel3 (ms)'."""
        return ("trainable parameters" if self.device is None
                else f"latency on {self.device} (ms)")

    @property
    def unit(self) -> str:
        return "" if self.device is None else " ms"

    @property
    def reference(self) -> float:
        """The hypervolume's reference value on this axis (see the module docstring)."""
        if self.device is None:
            return PARAMETERS_REFERENCE
        return _round_up(1.05 * float(load_costs().latency(self.device).max()))

    def values(self, dataset: str) -> np.ndarray:
        """The cost of every cell, in table index order (read-only)."""
        dataset = self.check_dataset(dataset)
        if self.device is None:
            return load_table().arrays(dataset).n_params
        return load_costs().latency(self.device)

    def check_dataset(self, dataset: str) -> str:
        """``dataset``'s name if this objective has values for it.

        Raises:
            BenchmarkError: an unknown data set, or a latency on ImageNet16-120.
        """
        name = get_dataset(dataset).name
        if self.device is not None:
            check_latency_dataset(name)
        return name

    def format(self, value: float) -> str:
        """A value of this objective for tables: '1.2 M' or '3.61 ms'."""
        return f"{value / 1e6:.3g} M" if self.device is None else f"{value:.3g} ms"


def check_latency_dataset(dataset: str) -> None:
    """Refuse a data set whose networks have no latencies in the table (ImageNet16-120)."""
    if dataset not in _LATENCY_DATASETS:
        raise BenchmarkError(
            f"NAS-Bench-201's latencies are those of the CIFAR-10 network (also used for "
            f"CIFAR-100, whose network differs only in its classifier); data set {dataset!r} "
            f"has none. Use --dataset {' or '.join(_LATENCY_DATASETS)} (dataset=) with a "
            "latency objective or limit")


def _check_device(device: Any, what: str) -> str:
    if device not in DEVICES:
        raise BenchmarkError(
            f"unknown device {device!r} in {what}; NAS-Bench-201 has latencies for "
            f"{', '.join(DEVICES)}")
    return device


def parse_objectives(text: Any) -> Objective:
    """The cost objective of ``'accuracy,parameters'`` or ``'accuracy,latency:DEVICE'``.

    Raises:
        ConfigurationError: not two objectives, accuracy not first, or an unknown one (the
            message lists the valid values).
        BenchmarkError: an unknown device (the message lists the devices).
    """
    if isinstance(text, Objective):
        return text
    parts = [part.strip() for part in str(text).split(",")] if isinstance(text, str) else []
    if len(parts) != 2 or parts[0] != "accuracy":
        raise ConfigurationError(
            f"objectives must be two, accuracy first: {objective_names()}; got {text!r}")
    cost = parts[1]
    if cost == "parameters":
        return Objective("parameters")
    if cost.startswith("latency:"):
        device = _check_device(cost.split(":", 1)[1], f"objectives {text!r}")
        return Objective(cost, device)
    raise ConfigurationError(
        f"unknown objective {cost!r} in {text!r}; objectives are {objective_names()}")


@dataclass(frozen=True)
class LatencyLimit:
    """Cells slower than ``max_ms`` milliseconds on ``device`` are failed evaluations.

    Raises:
        BenchmarkError: an unknown device. ConfigurationError: a limit that is not > 0.
    """

    device: str
    max_ms: float

    def __post_init__(self):
        _check_device(self.device, "the latency limit")
        if (isinstance(self.max_ms, bool) or not isinstance(self.max_ms, (int, float))
                or not self.max_ms > 0 or not math.isfinite(self.max_ms)):
            raise ConfigurationError(
                f"the latency limit (--max-latency-ms, max_latency_ms=) must be a number of "
                f"milliseconds > 0; got {self.max_ms!r}")

    def allowed(self) -> np.ndarray:
        """Which cells are within the limit, in table index order."""
        return load_costs().latency(self.device) <= self.max_ms

    def check_reachable(self) -> None:
        """Refuse a limit no cell meets, naming the fastest cell's latency."""
        fastest = float(load_costs().latency(self.device).min())
        if fastest > self.max_ms:
            raise ConfigurationError(
                f"no NAS-Bench-201 cell runs within {self.max_ms:g} ms on {self.device}: the "
                f"fastest takes {fastest:g} ms; raise --max-latency-ms (max_latency_ms=)")

    def to_dict(self) -> Dict[str, Any]:
        return {"device": self.device, "max_latency_ms": self.max_ms}


def latency_limit(max_latency_ms: Optional[float], device: Optional[str], table: DatasetTable,
                  objective_device: Optional[str] = None) -> Optional[LatencyLimit]:
    """The :class:`LatencyLimit` of ``max_latency_ms`` on ``device`` (None without a limit).

    Args:
        max_latency_ms: the limit (``--max-latency-ms``), or None.
        device: the limit's device (``--latency-device``); only with a limit.
        table: the data set searched.
        objective_device: the device of a latency objective, the limit's when ``device``
            is None.

    Raises:
        ConfigurationError: a device without a limit, a limit without a device, or one no
            cell meets.
        BenchmarkError: an unknown device, or a data set without latencies.
    """
    if max_latency_ms is None:
        if device is not None:
            raise ConfigurationError(
                f"--latency-device {device} (latency_device=) is the device of a latency "
                "limit; add --max-latency-ms MS (max_latency_ms=), or leave --latency-device "
                "out (a latency objective names its device in --objectives "
                "accuracy,latency:DEVICE)")
        return None
    device = device or objective_device
    if device is None:
        raise ConfigurationError(
            f"a latency limit ({max_latency_ms!r} ms) needs a device: give one with "
            "--latency-device (latency_device=), or a latency objective (--objectives "
            f"accuracy,latency:DEVICE); devices: {', '.join(DEVICES)}")
    limit = LatencyLimit(device, max_latency_ms)
    check_latency_dataset(table.name)
    limit.check_reachable()
    return limit


class LatencyEvaluator(Evaluator):
    """A NAS-Bench-201 evaluator whose results carry a device's latency, under a limit.

    Each result's ``metrics['latency_ms']`` is the cell's latency on ``device`` (what nsga2
    minimises with ``second_objective='latency_ms'``). With a ``limit``, a cell slower than
    it comes back failed, its error naming the latency and the limit, its metrics kept.

    Args:
        inner: the ``BenchmarkEvaluator`` that answers the look-ups.
        device: the device whose latency is reported (default: the limit's).
        limit: a :class:`LatencyLimit`, or None.

    Raises:
        BenchmarkError: an unknown device, or a data set without latencies.
    """

    def __init__(self, inner: BenchmarkEvaluator, device: Optional[str] = None,
                 limit: Optional[LatencyLimit] = None):
        if device is None and limit is None:
            raise ConfigurationError("LatencyEvaluator needs a device, a limit, or both")
        self.inner = inner
        self.device = _check_device(device if device is not None else limit.device,
                                    "LatencyEvaluator")
        self.limit = limit
        check_latency_dataset(inner.dataset)
        self._latency: Optional[list] = None
        self._limit_latency: Optional[list] = None

    def __getstate__(self) -> Dict[str, Any]:
        return {**self.__dict__, "_latency": None, "_limit_latency": None}

    def _with_latency(self, result: EvaluationResult) -> EvaluationResult:
        index = result.metrics.get("index")
        if index is None:
            return result   # not a cell (a descriptor the table does not know): already failed
        if self._latency is None:
            self._latency = load_costs().latency(self.device).tolist()
            if self.limit is not None:
                self._limit_latency = load_costs().latency(self.limit.device).tolist()
        result.metrics[LATENCY_METRIC] = self._latency[index]
        result.metrics["device"] = self.device
        if self.limit is not None and result.ok:
            latency = self._limit_latency[index]
            if latency > self.limit.max_ms:
                return EvaluationResult.failure(
                    f"latency {latency:g} ms on {self.limit.device} exceeds the limit of "
                    f"{self.limit.max_ms:g} ms (--max-latency-ms)",
                    result.descriptor_hash, n_params=result.n_params, metrics=result.metrics)
        return result

    def evaluate_task(self, task) -> EvaluationResult:
        return self._with_latency(self.inner.evaluate_task(task))

    def evaluate_genome(self, genome) -> EvaluationResult:
        """As ``BenchmarkEvaluator.evaluate_genome``, with the latency (and the limit)."""
        return self._with_latency(self.inner.evaluate_genome(genome))

    def _evaluate(self, descriptor) -> EvaluationResult:
        return self._with_latency(self.inner.descriptor_evaluate(descriptor))

    def describe(self) -> Dict[str, Any]:
        description = {**self.inner.describe(), "latency_device": self.device}
        if self.limit is not None:
            description["latency_limit"] = self.limit.to_dict()
        return description
