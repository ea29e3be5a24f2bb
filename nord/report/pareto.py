"""Pareto fronts and hypervolume for two objectives: fewer parameters, higher accuracy.

Points are ``(n_params, accuracy)`` pairs, as a multi-objective search trades them::

    from nord.report.pareto import hypervolume, pareto_front

    points = [(100, 0.50), (300, 0.70), (200, 0.40), (400, 0.70)]
    front = pareto_front(points)        # [(100, 0.5), (300, 0.7)]: nothing beats them on both
    hypervolume(front, reference_point=(500, 0.0), normalise=False)
    # (300 - 100) * 0.5 + (500 - 300) * 0.7 = 100 + 140 = 240.0
    hypervolume(front, reference_point=(500, 0.0))       # 240 / (500 * 1.0) = 0.48

Details (dominance, the hypervolume and its normalisation): docs/report.md.
"""
from __future__ import annotations

import math
from typing import Iterable, List, Sequence, Tuple

from nord.errors import ConfigurationError
from nord.search.algorithms.pygmo_adapter import import_pygmo

__all__ = ["pareto_indices", "pareto_front", "hypervolume", "dominates"]

Point = Tuple[float, float]


def _pygmo():
    return import_pygmo()


def _as_points(points: Iterable[Sequence[float]]) -> List[Point]:
    result = []
    for index, point in enumerate(points):
        try:
            n_params, accuracy = point
            result.append((float(n_params), float(accuracy)))
        except (TypeError, ValueError) as error:
            raise ConfigurationError(
                f"a point is a pair (n_params, accuracy); point {index} is {point!r}") from error
    return result


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether point ``a`` dominates ``b``: no more parameters, no less accuracy, and
    strictly better in at least one of them."""
    return bool(_pygmo().pareto_dominance([float(a[0]), -float(a[1])],
                                          [float(b[0]), -float(b[1])]))


def pareto_indices(points: Iterable[Sequence[float]]) -> List[int]:
    """Indices of the non-dominated points, ordered by parameters (ascending).

    Points with a NaN or infinite coordinate are ignored. Of several identical
    non-dominated points only the first is kept, so each front point appears once.

    Args:
        points: ``(n_params, accuracy)`` pairs.

    Returns:
        Indices into ``points``; along them parameters and accuracy both increase strictly.
    """
    values = _as_points(points)
    finite = [i for i, (p, a) in enumerate(values) if math.isfinite(p) and math.isfinite(a)]
    if not finite:
        return []
    if len(finite) == 1:
        return finite
    front = _pygmo().non_dominated_front_2d([[values[i][0], -values[i][1]] for i in finite])
    chosen, seen = [], set()
    for index in sorted((finite[int(j)] for j in front), key=lambda i: (values[i], i)):
        if values[index] not in seen:
            seen.add(values[index])
            chosen.append(index)
    return chosen


def pareto_front(points: Iterable[Sequence[float]]) -> List[Point]:
    """The non-dominated ``(n_params, accuracy)`` points, ordered by parameters.

    Args:
        points: ``(n_params, accuracy)`` pairs (tuples, lists or rows of an array).

    Returns:
        The front as a list of ``(n_params, accuracy)`` float tuples, each once.
    """
    values = _as_points(points)
    return [values[index] for index in pareto_indices(values)]


def hypervolume(front: Iterable[Sequence[float]], reference_point: Sequence[float],
                normalise: bool = True) -> float:
    """The area dominated by ``front`` and bounded by ``reference_point`` (2-D, exact).

    Args:
        front: ``(n_params, accuracy)`` points. Dominated points may be included (they add
            nothing); points that are not better than the reference point in both objectives
            (``n_params >= ref_params`` or ``accuracy <= ref_accuracy``) add nothing either.
        reference_point: ``(ref_params, ref_accuracy)``: a point worse than the front in both
            objectives, e.g. ``(1.1 * largest n_params, 0.0)``.
        normalise: divide by the area of the box ``[0, ref_params] x [ref_accuracy, 1]``
            (see the module docstring), giving a value in ``[0, 1]``. False returns the area in
            parameter x accuracy units.

    Returns:
        The hypervolume; 0.0 for an empty front.

    Raises:
        ConfigurationError: a malformed point, a reference point with a NaN coordinate, or,
            with ``normalise``, ``ref_params <= 0`` or ``ref_accuracy >= 1``.
    """
    (ref_params, ref_accuracy), = _as_points([reference_point])
    if not (math.isfinite(ref_params) and math.isfinite(ref_accuracy)):
        raise ConfigurationError(
            f"the reference point must be finite (ref_params, ref_accuracy); got {reference_point!r}")
    if normalise and (ref_params <= 0 or ref_accuracy >= 1):
        raise ConfigurationError(
            "a normalised hypervolume divides by the box [0, ref_params] x [ref_accuracy, 1], "
            f"so it needs ref_params > 0 and ref_accuracy < 1; got {reference_point!r}. Pass "
            "normalise=False for the raw area")
    inside = [[p, -a] for p, a in _as_points(front)
              if math.isfinite(p) and math.isfinite(a) and p < ref_params and a > ref_accuracy]
    if not inside:
        return 0.0
    area = float(_pygmo().hypervolume(inside).compute([ref_params, -ref_accuracy]))
    if normalise:
        area /= ref_params * (1.0 - ref_accuracy)
    return area
