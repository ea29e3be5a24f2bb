"""A multi-objective run's front drawn next to the exact front of a benchmark table.

    arrays = load_table().arrays("cifar10")   # the caller's: nord.benchmarks.nasbench201
    plot_front_against_exact("front_vs_exact.png", "cifar10", indices, front, exact,
                             reference_point=(1.6e6, 0.0), costs=arrays.n_params,
                             accuracies=arrays.reported_accuracy)

The front is the one the run returned (chosen by the search signal it saw), drawn in the
reported accuracy (200-epoch test), which is also what the hypervolumes in the legend use.
The table's columns come from the caller (nord.comparisons), so reports read no benchmark.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Tuple

import numpy as np

__all__ = ["plot_front_against_exact"]


def plot_front_against_exact(path: Path, dataset: str, indices: Sequence[int], front,
                             exact, reference_point: Tuple[float, float], costs: np.ndarray,
                             accuracies: np.ndarray, cost_label: Optional[str] = None) -> Path:
    """Evaluated cells, the run's front and the exact front, in 200-epoch test accuracy.

    Args:
        path: the PNG to write.
        dataset: the NAS-Bench-201 data set.
        indices: table rows of every cell the run evaluated.
        front, exact: ``ParetoFront`` s (``nord.comparisons.multiobjective``) of the run and of
            the whole table.
        reference_point: the hypervolume's ``(cost, accuracy)`` reference point.
        costs: the x axis's value of every cell, in table order: parameters, or e.g.
            latencies.
        accuracies: the 200-epoch test accuracy of every cell, in table order.
        cost_label: the x axis's label (None: ``costs`` are trainable parameters).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import EngFormatter

    x_values, y_values = np.asarray(costs), np.asarray(accuracies)
    unique = sorted(set(indices))
    figure = Figure(figsize=(7.5, 4.8), dpi=110, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots()
    axes.scatter(x_values[unique], 100 * y_values[unique], s=12,
                 color="#1f77b4", alpha=0.3, edgecolors="none",
                 label=f"evaluated cells ({len(unique)})")
    for points, style, label in (
            (exact.points, dict(color="black", linestyle="--", marker="x", linewidth=1),
             f"exact front of the table ({len(exact)}), hypervolume {exact.hypervolume:.4f}"),
            (front.points, dict(color="#1f77b4", marker="o", markeredgecolor="black",
                                linewidth=1.5),
             f"front returned by nsga2 ({len(front)}), hypervolume {front.hypervolume:.4f}")):
        xs = [p for p, _ in points] + [reference_point[0]]
        ys = [100 * a for _, a in points]
        # the boundary of the dominated region: a returned front need not increase in test
        # accuracy (it was chosen by the search signal)
        bound = np.maximum.accumulate(ys).tolist()
        axes.step(xs, bound + bound[-1:], where="post",
                  **{k: v for k, v in style.items() if k not in ("marker", "markeredgecolor")})
        axes.plot(xs[:-1], ys, linestyle="none", label=label,
                  **{k: v for k, v in style.items() if k not in ("linestyle", "linewidth")})
    if cost_label is None:
        axes.xaxis.set_major_formatter(EngFormatter(sep=""))
    axes.set_xlim(0, reference_point[0])
    low = min([100 * a for _, a in exact.points + front.points], default=0.0)
    axes.set_ylim(max(0.0, low - 5), 100 * max(a for _, a in exact.points) + 1)
    if cost_label is None:
        axes.set_xlabel(f"trainable parameters (reference point: {reference_point[0] / 1e6:g}M)")
    else:
        axes.set_xlabel(f"{cost_label} (reference point: {reference_point[0]:g})")
    axes.set_ylabel("200-epoch test accuracy (%)")
    axes.set_title(f"NAS-Bench-201 {dataset}: nsga2 front against the exact front\n"
                   "front chosen by 12-epoch validation accuracy, scored by 200-epoch test "
                   "accuracy", fontsize=10)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="lower right")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110, facecolor="white")
    return path
