"""A run's progress as the figures draw it: by generation, or by evaluation order in bins.

Synchronous runs with a few generations are drawn per generation, as the NORD paper does.
Asynchronous runs are not: their "generation" is the size of the population when a
candidate was proposed, so it can go backwards in the order results come in. They, and any
run with more than :data:`MAX_GROUPS` generations, are drawn against the order the results
were told, cut into at most :data:`MAX_GROUPS` bins of equal size, so that a run of 15,000
evaluations gives forty boxes, not 1,500::

    from nord.report.timeline import best_so_far, progress_groups

    axis, groups = progress_groups(run)      # 'generation' or 'evaluation'
    for group in groups:
        group.position, group.accuracies     # x of the group, its ok accuracies (fractions)
    curve = best_so_far(run)                 # evaluations told, wall time, best accuracy
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np

from nord.report.runs import RunData

__all__ = ["MAX_GROUPS", "Group", "BestSoFar", "progress_axis", "progress_groups",
           "best_so_far", "ok_mask"]

MAX_GROUPS = 40
"""The most boxes (or bins) a panel draws along its x axis."""


@dataclass
class Group:
    """One box of a progress figure.

    Attributes:
        position: its x coordinate (the generation, or the bin's middle evaluation, from 1).
        first, last: the evaluations it holds (told order, from 1, inclusive).
        accuracies: the accuracies of its ok evaluations (fractions).
        n_params: their trainable parameters.
        failed: how many of its evaluations failed.
    """

    position: float
    first: int
    last: int
    accuracies: np.ndarray
    n_params: np.ndarray
    failed: int

    @property
    def width(self) -> float:
        """The span the group covers on the x axis."""
        return float(self.last - self.first + 1)


@dataclass
class BestSoFar:
    """The best accuracy found so far after each ok evaluation, in the order told.

    Attributes:
        evaluations: evaluations told when it was reached (1 for the first).
        seconds: seconds from the run's first start to the end of that evaluation (NaN when
            the journal has no time for it).
        accuracy: the best search-signal accuracy so far (fraction).
        reported: the reported accuracy of that best architecture (NaN when none).
    """

    evaluations: np.ndarray
    seconds: np.ndarray
    accuracy: np.ndarray
    reported: np.ndarray


def _column(rows: Sequence[dict], name: str) -> np.ndarray:
    return np.array([math.nan if row.get(name) is None else float(row[name]) for row in rows],
                    dtype=float)


def ok_mask(rows: Sequence[dict]) -> np.ndarray:
    """True for the ok evaluations with a finite accuracy."""
    accuracy = _column(rows, "accuracy")
    status = np.array([row.get("status") == "ok" for row in rows], dtype=bool)
    return status & np.isfinite(accuracy) if len(rows) else np.zeros(0, dtype=bool)


def progress_axis(run: RunData) -> str:
    """'generation' for a synchronous run of at most :data:`MAX_GROUPS` generations, else
    'evaluation' (the order results were told)."""
    if run.metadata.get("mode") == "async" or len(run.generations) > MAX_GROUPS:
        return "evaluation"
    return "generation"


def progress_groups(run: RunData, axis: str = None) -> Tuple[str, List[Group]]:
    """The run's evaluations in groups along ``axis`` (default :func:`progress_axis`).

    Returns:
        ``(axis, groups)``; groups in x order, empty ones (all failed) included.
    """
    axis = axis or progress_axis(run)
    rows = run.evaluations
    ok = ok_mask(rows)
    accuracy = _column(rows, "accuracy")
    n_params = _column(rows, "n_params")
    groups: List[Group] = []
    if axis == "generation":
        generation = np.array([int(row["generation"]) for row in rows], dtype=int)
        order = np.arange(1, len(rows) + 1)
        for value in sorted(set(generation.tolist())):
            members = generation == value
            good = members & ok
            groups.append(Group(float(value), int(order[members].min()),
                                int(order[members].max()), accuracy[good], n_params[good],
                                int(members.sum() - good.sum())))
        return axis, groups
    size = max(1, math.ceil(len(rows) / MAX_GROUPS))
    for start in range(0, len(rows), size):
        stop = min(len(rows), start + size)
        good = ok[start:stop]
        groups.append(Group((start + 1 + stop) / 2.0, start + 1, stop,
                            accuracy[start:stop][good], n_params[start:stop][good],
                            int(len(good) - good.sum())))
    return axis, groups


def best_so_far(run: RunData) -> BestSoFar:
    """The best-so-far curve of the run's search signal (told results, in the order told)."""
    rows = run.evaluations
    ok = ok_mask(rows)
    if not ok.any():
        empty = np.zeros(0)
        return BestSoFar(empty, empty, empty, empty)
    accuracy = np.where(ok, _column(rows, "accuracy"), -np.inf)
    reported = _column(rows, "reported_accuracy")
    ended = _column(rows, "ended")
    started = _column(rows, "started")
    origin = np.nanmin(started) if np.isfinite(started).any() else math.nan
    # the index of the best so far at every step (earliest on ties, as Journal.best)
    running = np.maximum.accumulate(accuracy)
    improved = np.flatnonzero(ok & (accuracy >= running) &
                              np.concatenate(([True], accuracy[1:] > running[:-1])))
    holder = improved[np.searchsorted(improved, np.arange(len(rows)), side="right") - 1]
    first = improved[0]
    steps = np.arange(first, len(rows))
    return BestSoFar(evaluations=steps + 1.0, seconds=ended[steps] - origin,
                     accuracy=accuracy[holder[steps]], reported=reported[holder[steps]])
