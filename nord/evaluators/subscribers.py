"""Built-in subscribers of the bus: per-step measurements of every layer of a candidate.

Each reads the bus topics it names on the steps it is due (``every_steps``), returns its
scalars as per-step series, and at the epoch's end the mean of what it measured in the epoch
(the epoch's row, and what stopping rules see)::

    evaluator = LocalEvaluator(callbacks=[UpdateRatio, GradientNormSteps, NonFiniteWatch])
    nord run --callbacks update_ratio,grad_norm_step,nonfinite --stop-when 'nonfinite > 0'

What each measures and costs: docs/evaluators.md, "Built-in callbacks".
"""
from __future__ import annotations

import math
from typing import Dict, Iterable, Optional

import torch

from nord.evaluators.bus import layers, probe_outputs
from nord.evaluators.callbacks import TrainingCallback, TrainingState

__all__ = ["StepMetric", "UpdateRatio", "GradientNormSteps", "SpectralNorms", "Saturation",
           "Histograms", "NonFiniteWatch", "HISTOGRAM_EDGES"]

HISTOGRAM_EDGES = (-3.0, -1.0, -0.3, -0.1, -0.01, 0.01, 0.1, 0.3, 1.0, 3.0)
"""The fixed bin edges of ``Histograms``: bin 0 holds values below -3, bin 10 those from 3 up
(the same bins for every layer, candidate and run, so histograms compare)."""


def norm(tensors: Iterable[torch.Tensor]) -> float:
    """The L2 norm of several tensors taken as one vector (in double precision)."""
    total = 0.0
    for tensor in tensors:
        total += float(tensor.detach().double().pow(2).sum())
    return math.sqrt(total)


class StepMetric(TrainingCallback):
    """A subscriber whose ``measure(state)`` gives the step's scalars; the epoch's row holds
    their mean over the epoch's sampled steps."""

    def __init__(self, every_steps: Optional[int] = None):
        if every_steps is not None:
            self.every_steps = int(every_steps)
        self._sums: Dict[str, float] = {}
        self._counts: Dict[str, int] = {}

    def measure(self, state: TrainingState) -> Dict[str, float]:
        raise NotImplementedError

    def on_step(self, state: TrainingState) -> Dict[str, float]:
        values = self.measure(state)
        for name, value in values.items():
            self._sums[name] = self._sums.get(name, 0.0) + value
            self._counts[name] = self._counts.get(name, 0) + 1
        return values

    def on_epoch_end(self, state: TrainingState) -> Dict[str, float]:
        means = {name: total / self._counts[name] for name, total in self._sums.items()}
        self._sums, self._counts = {}, {}
        return means


class UpdateRatio(StepMetric):
    """``update_ratio/<layer>``: the norm of what a step changed in a layer's parameters over
    their norm before it (about 1e-3 is healthy; far below, the layer does not learn; far
    above, it is unstable)."""

    name = "update_ratio"
    every_steps = 10
    topics = ("updates", "weights")

    def measure(self, state):
        values = {}
        for layer, updates in state.topics["updates"].items():
            if not updates:
                continue
            before = norm(w - u for w, u in zip(state.topics["weights"][layer], updates))
            values[f"{self.name}/{layer}"] = norm(updates) / before if before else math.inf
        return values


class GradientNormSteps(StepMetric):
    """``grad_norm_step/<layer>``: the L2 norm of a layer's gradient at the step, and
    ``grad_norm_step`` of the whole network's (layers with parameters only)."""

    name = "grad_norm_step"
    every_steps = 10
    topics = ("gradients",)

    def measure(self, state):
        grads = {layer: g for layer, g in state.topics["gradients"].items() if g}
        values = {f"{self.name}/{layer}": norm(g) for layer, g in grads.items()}
        values[self.name] = norm(t for g in grads.values() for t in g)
        return values


class NonFiniteWatch(StepMetric):
    """``nonfinite``: 1 where the step's loss or a gradient is NaN or infinite, else 0, and
    ``nonfinite/grad``, the count of such gradient entries (``--stop-when 'nonfinite > 0'``
    ends the candidate there)."""

    name = "nonfinite"
    every_steps = 10
    topics = ("gradients",)
    produces = ("nonfinite", "nonfinite/grad")

    def measure(self, state):
        bad = sum(int((~torch.isfinite(t)).sum()) for g in state.topics["gradients"].values()
                  for t in g)
        loss = state.metrics.get("loss", 0.0)
        return {"nonfinite": float(bad > 0 or not math.isfinite(loss)),
                "nonfinite/grad": float(bad)}


class Histograms(StepMetric):
    """``act_hist/<layer>/<bin>`` and ``grad_hist/<layer>/<bin>``: the share of a layer's
    activations (its output in the step's forward pass) and of its parameters' gradients in
    each bin of ``HISTOGRAM_EDGES`` (bins 0 to 10)."""

    name = "histograms"
    every_steps = 50
    topics = ("activations", "gradients")
    produces = ("act_hist/*", "grad_hist/*")

    def measure(self, state):
        values = {}
        for prefix, topic in (("act_hist", "activations"), ("grad_hist", "gradients")):
            for layer, tensors in state.topics[topic].items():
                tensors = tensors if isinstance(tensors, tuple) else (tensors,)
                if not tensors:
                    continue
                flat = torch.cat([t.detach().reshape(-1).float() for t in tensors])
                for index, share in enumerate(histogram(flat)):
                    values[f"{prefix}/{layer}/{index}"] = share
        return values


def histogram(values: torch.Tensor):
    """The share of ``values`` in each bin of ``HISTOGRAM_EDGES`` (11 bins)."""
    edges = torch.tensor(HISTOGRAM_EDGES, dtype=values.dtype, device=values.device)
    counts = torch.bincount(torch.bucketize(values, edges, right=True),
                            minlength=len(HISTOGRAM_EDGES) + 1)
    return (counts.double() / max(1, values.numel())).tolist()


class SpectralNorms(TrainingCallback):
    """``spectral_norm/<layer>``: the largest singular value of each layer's weight (as a
    matrix: output units by the rest) at the epoch's end, by power iteration from the last
    epoch's vector (``iterations`` each time), and their maximum, ``spectral_norm``."""

    name = "spectral_norm"

    def __init__(self, iterations: int = 20):
        self.iterations = int(iterations)
        self._vectors: Dict[str, torch.Tensor] = {}

    def on_epoch_end(self, state):
        values = {}
        for layer, module in layers(state.model):
            weight = getattr(module, "weight", None)
            if not isinstance(weight, torch.Tensor) or weight.dim() < 2:
                continue
            matrix = weight.detach().reshape(weight.shape[0], -1).double()
            v = self._vectors.get(layer)
            if v is None or v.shape[0] != matrix.shape[1]:
                generator = torch.Generator().manual_seed(0)   # its own: no result changes
                v = torch.randn(matrix.shape[1], generator=generator, dtype=torch.float64)
                v = v.to(matrix.device)
            for _ in range(self.iterations):
                u = matrix @ v
                u = u / (u.norm() + 1e-300)
                v = matrix.t() @ u
                v = v / (v.norm() + 1e-300)
            self._vectors[layer] = v
            values[f"{self.name}/{layer}"] = float((matrix @ v).norm())
        if values:
            values[self.name] = max(values.values())
        return values


class Saturation(TrainingCallback):
    """``saturated/<layer>``: the share of a tanh or sigmoid layer's outputs on the probe
    batch within 0.01 of the function's bounds (where its gradient nearly vanishes), at the
    epoch's end, and their mean, ``saturated``."""

    name = "saturated"

    def on_epoch_end(self, state):
        if state.probe is None:
            return {}
        outputs = probe_outputs(state.model, state.probe, (torch.nn.Tanh, torch.nn.Sigmoid))
        tanh = {name for name, module in layers(state.model) if isinstance(module, torch.nn.Tanh)}
        values = {}
        for name, output in outputs.items():
            low = -1.0 if name in tanh else 0.0
            near = (output <= low + 0.01) | (output >= 0.99)
            values[f"{self.name}/{name}"] = float(near.double().mean())
        if values:
            values[self.name] = sum(values.values()) / len(values)
        return values
