"""The records a comparison keeps of each seed's run, and JSON output.

:class:`SeedRun` is what one seed of an algorithm returned and cost, whether it ran by
evaluations (:mod:`~nord.comparisons.compare`) or in simulated time
(:mod:`~nord.comparisons.anytime`, which first traces a run as a :class:`SimulatedRun`);
:class:`FrontRun` is one seed of a multi-objective run (:mod:`~nord.comparisons.multiobjective`).
"""
from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from nord.comparisons.dataset_table import DatasetTable
from nord.errors import NordError
from nord.jsonable import dumps

__all__ = ["SeedRun", "SimulatedRun", "FrontRun", "JSONRecord", "incumbent_curve"]


def incumbent_curve(signals: Sequence[float], reported: Sequence[float], times: Sequence[float]
                    ) -> Tuple[int, List[Tuple[float, float]]]:
    """The position of the returned result (best signal, first on ties) and the incumbent's
    change points ``[(time, reported accuracy)]`` in told order."""
    signals = np.asarray(signals, dtype=float)
    running = np.maximum.accumulate(signals)
    changed = np.empty(len(signals), dtype=bool)
    changed[:1] = True
    changed[1:] = running[1:] > running[:-1]
    positions = np.flatnonzero(changed)
    reported = np.asarray(reported, dtype=float)
    times = np.asarray(times, dtype=float)
    curve = list(zip(times[positions].tolist(), reported[positions].tolist()))
    return int(positions[-1]), curve



@dataclass
class SeedRun:
    """One seed of one algorithm: what it returned, and what it cost.

    Attributes:
        seed: the algorithm's seed.
        reported_accuracy: 200-epoch test accuracy of the returned architecture (fraction).
        accuracy: its search signal, 12-epoch validation accuracy (fraction).
        index: its row in the benchmark table.
        cell: its cell string.
        n_params: its trainable parameters.
        found_at: the evaluation (1-based) that first evaluated it.
        evaluations: evaluations used (the budget unless the algorithm finished first).
        unique: distinct architectures among them.
        simulated_time: simulated seconds the run used (simulated runs; else None).
        utilisation: busy share of the simulated workers' time (simulated runs).
        curve: the incumbent's ``[simulated seconds, reported accuracy]`` at each change
            (simulated runs; see :mod:`nord.comparisons.anytime`).
        paid: simulated seconds of one-GPU training the results told were charged (under
            ``repeats='free'`` a repeat costs none; None in records older than this field).
        repeats: results told for a cell told before in the run (None in older records).
    """

    seed: int
    reported_accuracy: float
    accuracy: float
    index: int
    cell: str
    n_params: int
    found_at: int
    evaluations: int
    unique: int
    simulated_time: Optional[float] = None
    utilisation: Optional[float] = None
    curve: Optional[List[Tuple[float, float]]] = None
    paid: Optional[float] = None
    repeats: Optional[int] = None

    @classmethod
    def from_indices(cls, seed: int, indices: Sequence[int], table: DatasetTable,
                     allowed: Optional[np.ndarray] = None, repeats: str = "charge") -> "SeedRun":
        """The run's outcome from the rows of ``table`` it evaluated, in order; the returned
        architecture is chosen among the cells ``allowed`` (a mask over the table) marks.
        ``paid`` charges each told result its 12-epoch training time ('charge'), or each
        distinct cell once ('free')."""
        if not indices:
            raise NordError(f"the run with seed {seed} evaluated nothing; nothing to return")
        arrays = table.arrays
        order = np.asarray(indices, dtype=np.int64)
        costs = table.costs()
        paid = float(costs[order if repeats == "charge" else np.unique(order)].sum())
        signal = arrays.accuracy[order]
        if allowed is not None:
            if not allowed[order].any():
                return cls(seed=int(seed), reported_accuracy=math.nan, accuracy=math.nan,
                           index=-1, cell="", n_params=0, found_at=0, evaluations=len(order),
                           unique=int(np.unique(order).size), paid=paid,
                           repeats=len(order) - int(np.unique(order).size))
            signal = np.where(allowed[order], signal, -np.inf)
        position = int(np.argmax(signal))   # first of equal maxima
        best = int(order[position])
        return cls(seed=int(seed), reported_accuracy=float(arrays.reported_accuracy[best]),
                   accuracy=float(arrays.accuracy[best]), index=best, cell=table.cells[best],
                   n_params=int(arrays.n_params[best]), found_at=position + 1,
                   evaluations=len(order), unique=int(np.unique(order).size), paid=paid,
                   repeats=len(order) - int(np.unique(order).size))

    def to_dict(self) -> Dict[str, Any]:
        """The run as JSON keeps it: accuracies in percent, as the comparison's summary and
        curves, under keys that say so (``reported_accuracy_percent``, ``accuracy_percent``;
        the curve's points are ``[simulated seconds, percent]``)."""
        data = asdict(self)
        for key in _PERCENT:
            data[f"{key}_percent"] = _percent(data.pop(key))
        if self.curve is not None:
            data["curve"] = [[time, _percent(value)] for time, value in self.curve]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SeedRun":
        """A run saved with :meth:`to_dict`, or with ``dataclasses.asdict`` before (its
        accuracies fractions, under the field names)."""
        data = dict(data)
        percent = all(f"{key}_percent" in data for key in _PERCENT)
        for key in _PERCENT if percent else ():
            data[key] = _fraction(data.pop(f"{key}_percent"))
        run = cls(**data)
        if run.curve is not None:
            run.curve = [(float(time), _fraction(value) if percent else float(value))
                         for time, value in run.curve]
        return run

    @classmethod
    def from_simulated(cls, seed: int, run, table: DatasetTable) -> "SeedRun":
        """The outcome of a simulated run (:class:`~nord.comparisons.anytime.
        SimulatedRun`): the returned architecture is the best of the signals it was told;
        over several fidelities (``run.epochs``), the best at the highest one told so far,
        and ``accuracy`` is then its 12-epoch validation accuracy, as in every other row."""
        if not run.indices:
            raise NordError(f"the run with seed {seed} evaluated nothing within its time "
                            "budget; nothing to return")
        arrays = table.arrays
        order = np.asarray(run.indices, dtype=np.int64)
        ranking = np.asarray(run.accuracies, dtype=float)
        if run.epochs is not None:   # accuracies lie in [0, 1]: fidelity first, then accuracy
            ranking = ranking + 2.0 * np.asarray(run.epochs, dtype=float)
        position, curve = incumbent_curve(ranking, arrays.reported_accuracy[order], run.times)
        best = int(order[position])
        accuracy = (run.accuracies[position] if run.epochs is None
                    else arrays.accuracy[best])
        told = order if run.told is None else np.asarray(run.told, dtype=np.int64)
        unique = int(np.unique(told).size)
        return cls(seed=int(seed), reported_accuracy=float(arrays.reported_accuracy[best]),
                   accuracy=float(accuracy), index=best,
                   cell=table.cells[best], n_params=int(arrays.n_params[best]),
                   found_at=position + 1, evaluations=len(told), unique=unique,
                   simulated_time=float(run.simulated_time),
                   utilisation=float(run.utilisation), curve=curve,
                   paid=None if run.paid is None else float(run.paid),
                   repeats=len(told) - unique)



_PERCENT = ("reported_accuracy", "accuracy")
"""The fields of a SeedRun that JSON keeps in percent."""


def _percent(fraction: Optional[float]) -> Optional[float]:
    return None if fraction is None else fraction * 100


def _fraction(percent: Optional[float]) -> Optional[float]:
    """A percentage read back as the fraction it was written from: the benchmark's
    accuracies are fractions of at most 10 decimals (its table's percentages / 100), which
    the rounding restores exactly."""
    return None if percent is None else round(float(percent) / 100, 10)


class JSONRecord:
    """``to_json`` and ``save_json`` for result records that define ``to_dict``."""

    def to_json(self, indent: Optional[int] = 2) -> str:
        return dumps(self.to_dict(), indent=indent, sort_keys=False)

    def save_json(self, path: Union[str, os.PathLike]) -> Path:
        """Write ``to_json()`` to ``path`` (folders created); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path


@dataclass
class SimulatedRun:
    """What one simulated run told its algorithm, and when.

    Attributes:
        indices: table row of each told result, in the order told.
        accuracies: the search signal each result carried (noisy ones as seen).
        times: simulated seconds at which each was told.
        simulated_time: the clock when the run ended (the budget, unless the algorithm
            finished first).
        utilisation: busy share of the workers' time.
        epochs: the fidelity of each result, for runs over several (BOHB's: 12 or 200);
            None where every result has the same.
        paid: worker-seconds of the evaluations that finished (charged repeats included).
        told: the cells told, in order, where they differ from ``indices`` (async runs under
            a scheduler: ``indices`` then holds every leg that ended, so that a promotion
            reaches the incumbent); None: the same.
    """

    indices: List[int]
    accuracies: List[float]
    times: List[float]
    simulated_time: float
    utilisation: float
    epochs: Optional[List[int]] = None
    paid: Optional[float] = None
    told: Optional[List[int]] = None


@dataclass
class FrontRun:
    """One nsga2 run: the front it returned and its hypervolume.

    Attributes:
        seed: the run's seed.
        hypervolume: of its front (see :mod:`~nord.comparisons.multiobjective`).
        indices: the front's cells (table rows), by increasing cost.
        points: their ``(cost, accuracy)``: parameters or milliseconds.
        evaluations: evaluations used, repeats included.
        unique: distinct architectures evaluated.
    """

    seed: int
    hypervolume: float
    indices: List[int]
    points: List[Tuple[float, float]]
    evaluations: int
    unique: int
