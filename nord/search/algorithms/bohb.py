"""BOHB: kernel-density models propose the candidates that Hyperband's brackets start with.

    algorithm = BOHB(space, seed=0)            # the NAS-Bench-201 paper's settings
    run_search(algorithm, evaluator, budget=60, scheduler=make_scheduler("hyperband", ...))

Falkner, Klein and Hutter, "BOHB: Robust and Efficient Hyperparameter Optimization at Scale"
(ICML 2018). Hyperband (the scheduler) decides how far each candidate trains; this algorithm
only proposes. Each told result is filed under its budget, the epochs it was trained
(``EvaluationResult.epochs``), and so is its accuracy at every rung it passed on the way
(``metrics['rungs']``, which the engine adds); a new candidate comes from a TPE-like model fitted on the
largest budget that has enough results. It assumes every gene is an integer whose values are
unordered choices (an edge's operation). Details (the kernel, bandwidths, what differs from
the paper and from HpBandSter): docs/search.md.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from nord.checks import check_int
from nord.errors import ConfigurationError, SearchSpaceError
from nord.evaluators.result import EvaluationResult
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.schedulers import RUNGS_METRIC
from nord.search.spaces.base import SearchSpace

__all__ = ["BOHB", "CategoricalKDE", "categorical_bandwidths"]

SCHEDULERS = ("hyperband", "sha")
"""Schedulers with brackets, whose first candidates BOHB proposes: Hyperband (the paper's) and
successive halving (one bracket of it)."""


def _check_real(value: Any, name: str, rule: str, low: float, high: float,
                low_open: bool, high_open: bool) -> float:
    """``value`` as a float when it is a finite real in the interval from ``low`` to ``high``
    (``*_open``: that end excluded)."""
    if (not isinstance(value, bool) and isinstance(value, numbers.Real) and math.isfinite(value)
            and (value > low if low_open else value >= low)
            and (value < high if high_open else value <= high)):
        return float(value)
    raise ConfigurationError(f"{name} must be {rule}; got {value!r}")


def categorical_bandwidths(points: np.ndarray, sizes: np.ndarray,
                           min_bandwidth: float) -> np.ndarray:
    """One Aitchison-Aitken bandwidth per gene for ``points`` (rows of value indices).

    The rule: a gene's spread, the share of the points that differ from its most common value
    (0 when they all agree, ``(c - 1) / c`` when spread evenly over ``c`` values), times
    ``n ** (-1 / (4 + d))``, the rate at which the normal-reference rule that BOHB takes from
    statsmodels shrinks with ``n`` points in ``d`` dimensions; floored at ``min_bandwidth``
    and capped at ``(c - 1) / c``, where the kernel is uniform. Statsmodels' rule applied to
    unordered codes would read a standard deviation into their arbitrary order; this one uses
    only agreement."""
    count, dimension = points.shape
    rate = count ** (-1.0 / (4 + dimension))
    spread = np.empty(dimension)
    for gene in range(dimension):
        spread[gene] = 1.0 - np.bincount(points[:, gene], minlength=sizes[gene]).max() / count
    return np.clip(spread * rate, min_bandwidth, (sizes - 1) / sizes)


class CategoricalKDE:
    """A product of Aitchison-Aitken kernels (Aitchison and Aitken, Biometrika 1976) over
    unordered categorical genes: around a point, a gene with ``c`` values and bandwidth
    ``lambda`` keeps the point's value with probability ``1 - lambda`` and takes each other
    value with ``lambda / (c - 1)``, so the density sums to one over the values.

    Args:
        points: the observations, one row of value indices (0 .. c - 1) per point.
        sizes: the number of values of each gene.
        bandwidths: one per gene, in ``[0, (c - 1) / c]``.
    """

    def __init__(self, points: np.ndarray, sizes: np.ndarray, bandwidths: np.ndarray):
        self.points = np.asarray(points, dtype=np.int64)
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.bandwidths = np.asarray(bandwidths, dtype=float)

    def density(self, genomes: np.ndarray) -> np.ndarray:
        """The density at each row of ``genomes`` (value indices)."""
        genomes = np.asarray(genomes, dtype=np.int64)
        same = genomes[:, None, :] == self.points[None, :, :]         # (queries, points, genes)
        keep = 1.0 - self.bandwidths
        move = np.where(self.sizes > 1, self.bandwidths / np.maximum(self.sizes - 1, 1), 0.0)
        kernels = np.where(same, keep, move).prod(axis=2)
        return kernels.mean(axis=1)

    def sample(self, rng: np.random.Generator, count: int, widen: float = 1.0) -> np.ndarray:
        """``count`` draws: a point chosen uniformly, each gene moved to another value with its
        bandwidth times ``widen`` (capped where the kernel is uniform)."""
        bandwidths = np.minimum(self.bandwidths * widen, (self.sizes - 1) / self.sizes)
        chosen = self.points[rng.integers(len(self.points), size=count)]
        moves = rng.random(chosen.shape) < bandwidths
        # another value, uniformly among the c - 1 others: shift by 1 .. c - 1 around the ring
        shifts = 1 + np.floor(rng.random(chosen.shape) * (self.sizes - 1)).astype(np.int64)
        return np.where(moves, (chosen + shifts) % self.sizes, chosen)


class BOHB(SearchAlgorithm):
    """BOHB's model-based proposals (Falkner et al., 2018), for a scheduler with brackets.

    Every told result is filed under its budget, ``result.epochs``, with its loss (``1 -
    accuracy``, a failure the worst; one that failed before any epoch goes under budget 0,
    which is never modelled), after the losses at the rungs it passed on the way
    (``result.metrics['rungs']``), each under its own budget: so every candidate that reached
    a rung counts there, as in the paper. To propose: with probability ``random_fraction`` a
    uniformly random genome; else the largest budget with at least ``min_points_in_model + 2``
    results is modelled: its best ``max(min_points_in_model, top_n_percent % of them)``
    results make the good density l(x), its worst ``max(min_points_in_model, the rest)`` the
    bad density g(x) (the paper's Eqs. 2 and 3), each a :class:`CategoricalKDE` with
    :func:`categorical_bandwidths`. ``num_samples`` genomes are drawn from l with its
    bandwidths times ``bandwidth_factor`` and the one with the largest l(x) / g(x) is proposed
    (the first on ties). Without such a budget yet, the genome is random. Results change the
    model in the order told, and nothing else does, so a resumed run, told the journaled
    results in order, proposes what the uninterrupted one did.

    Args:
        space: a space of integer genes.
        seed: seeds every draw.
        random_fraction: the share of random proposals, in [0, 1] (the NAS-Bench-201 paper's
            0; the BOHB paper's 1/3).
        num_samples: genomes drawn from l(x) per proposal, >= 1 (NAS-Bench-201's 4; BOHB's
            64).
        bandwidth_factor: widens l(x)'s bandwidths for the draws, > 0 (both papers' 3).
        top_n_percent: the good share, in (0, 100) (15).
        min_points_in_model: N_min, >= 1 (None: genes + 1): a budget is modelled from
            N_min + 2 results on, and each density takes at least N_min of them.
        min_bandwidth: the bandwidth floor, > 0 (1e-3), so a gene on which every good result
            agrees still gets explored.

    Raises:
        ConfigurationError: a setting out of its range (the message names it).
        SearchSpaceError: the space has a real-valued gene.
    """

    name = "bohb"
    schedulers = SCHEDULERS

    def __init__(self, space: SearchSpace, seed: Optional[int] = None,
                 random_fraction: float = 0.0, num_samples: int = 4,
                 bandwidth_factor: float = 3.0, top_n_percent: float = 15.0,
                 min_points_in_model: Optional[int] = None, min_bandwidth: float = 1e-3):
        random_fraction = _check_real(random_fraction, "random_fraction (the share of random "
                                      "proposals)", "a number in [0, 1], e.g. 0 or 0.33",
                                      0.0, 1.0, False, False)
        num_samples = check_int(num_samples, "num_samples (draws from the good density per "
                                "proposal)", 1)
        bandwidth_factor = _check_real(bandwidth_factor, "bandwidth_factor", "a finite number "
                                       "> 0, e.g. 3", 0.0, math.inf, True, True)
        top_n_percent = _check_real(top_n_percent, "top_n_percent (the good share of a budget's "
                                    "results)", "a number in (0, 100), e.g. 15", 0.0, 100.0,
                                    True, True)
        min_bandwidth = _check_real(min_bandwidth, "min_bandwidth", "a number in (0, 1), e.g. "
                                    "1e-3", 0.0, 1.0, True, True)
        if not all(space.integer_mask):
            real = [index for index, flag in enumerate(space.integer_mask) if not flag]
            raise SearchSpaceError(
                f"{type(space).__name__} has real-valued genes (positions {real}); BOHB here "
                "models unordered categorical genes, so use it on a space of integer genes")
        if min_points_in_model is None:
            min_points_in_model = space.dimension + 1
        min_points_in_model = check_int(min_points_in_model, "min_points_in_model (None: genes "
                                        "+ 1)", 1)
        super().__init__(space, seed)
        self.random_fraction = random_fraction
        self.num_samples = num_samples
        self.bandwidth_factor = bandwidth_factor
        self.top_n_percent = top_n_percent
        self.min_points_in_model = min_points_in_model
        self.min_bandwidth = min_bandwidth
        self._lower = np.asarray([int(low) for low in space.lower], dtype=np.int64)
        self.sizes = np.asarray([int(high) - int(low) + 1
                                 for low, high in zip(space.lower, space.upper)], dtype=np.int64)
        self.observations: Dict[int, List[Tuple[np.ndarray, float]]] = {}  # budget -> results
        self._models: Dict[int, Optional[Tuple[CategoricalKDE, CategoricalKDE]]] = {}
        self.proposals = {"random": 0, "model": 0}

    def parameters(self) -> Dict[str, Any]:
        return {**super().parameters(), "random_fraction": self.random_fraction,
                "num_samples": self.num_samples, "bandwidth_factor": self.bandwidth_factor,
                "top_n_percent": self.top_n_percent,
                "min_points_in_model": self.min_points_in_model,
                "min_bandwidth": self.min_bandwidth}

    # --- the model ---------------------------------------------------------------------------
    def model_budget(self) -> Optional[int]:
        """The largest budget with enough results for a model, or None."""
        enough = [budget for budget, seen in self.observations.items()
                  if budget > 0 and len(seen) >= self.min_points_in_model + 2]
        return max(enough, default=None)

    def split(self, budget: int) -> Tuple[np.ndarray, np.ndarray]:
        """The good and the bad points of ``budget`` (value indices): the best ``max(N_min,
        q n)`` and the worst ``max(N_min, n - that)``; equal losses in the order told."""
        seen = self.observations[budget]
        order = sorted(range(len(seen)), key=lambda i: (seen[i][1], i))
        points = np.stack([seen[i][0] for i in order])
        count = len(seen)
        good = max(self.min_points_in_model, int(self.top_n_percent * count // 100))
        bad = max(self.min_points_in_model, count - good)
        return points[:good], points[count - bad:]

    def model(self, budget: int) -> Tuple[CategoricalKDE, CategoricalKDE]:
        """The good and bad densities of ``budget`` (refitted only after a new result there)."""
        fitted = self._models.get(budget)
        if fitted is None:
            fitted = tuple(CategoricalKDE(points, self.sizes, categorical_bandwidths(
                points, self.sizes, self.min_bandwidth)) for points in self.split(budget))
            self._models[budget] = fitted
        return fitted

    # --- ask/tell -----------------------------------------------------------------------------
    def _ask(self) -> Optional[Candidate]:
        budget = self.model_budget()
        if (budget is None or self.random_fraction >= 1.0
                or (self.random_fraction > 0.0 and self.rng.random() < self.random_fraction)):
            self.proposals["random"] += 1
            return Candidate(self.space.sample(self.rng))
        good, bad = self.model(budget)
        drawn = good.sample(self.rng, self.num_samples, self.bandwidth_factor)
        ratio = good.density(drawn) / np.maximum(bad.density(drawn), 1e-32)
        self.proposals["model"] += 1
        best = drawn[int(np.argmax(ratio))]
        return Candidate(tuple(int(value) for value in best + self._lower))

    def _tell(self, candidate: Candidate, result: EvaluationResult) -> None:
        indices = np.asarray(candidate.genome, dtype=np.int64) - self._lower
        # the rungs it passed on the way (a scheduler's sync brackets tell a candidate once,
        # at its last rung), then the one it is told at; a failure before any epoch is kept
        # under budget 0, which is never modelled: it says nothing about any budget trained
        seen = [(int(epochs), EvaluationResult(accuracy=accuracy).fitness)
                for epochs, accuracy in result.metrics.get(RUNGS_METRIC, ())]
        seen.append((int(result.epochs or 0), result.fitness))
        for budget, loss in seen:
            self.observations.setdefault(budget, []).append((indices, loss))
            self._models.pop(budget, None)
