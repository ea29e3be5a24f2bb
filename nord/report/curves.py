"""Learning curves and introspection metrics, from the journal's ``epochs`` table.

    from nord.report.curves import (has_curves, has_introspection, plot_introspection,
                                    plot_learning_curves)

    if any(has_curves(run) for run in runs):
        plot_learning_curves(runs, "out/learning_curves.png")
    if has_introspection(run):
        plot_introspection(run, "out/introspection-ga.png", count=3)

Every candidate's validation accuracy is drawn against its epochs; introspection metrics
(what training callbacks stored with each epoch) are drawn per layer for the best candidates.

Details (colours, a scheduler's fates, the metrics' names): docs/report.md.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Dict, List, Sequence, Tuple, Union

import numpy as np

from nord.report.plots import new_figure, note, run_colour, save_figure
from nord.report.runs import RunData, algorithm_name
from nord.report.schedule import candidate_fates

__all__ = ["has_curves", "has_introspection", "learning_curves", "plot_learning_curves",
           "plot_introspection", "FAMILY_TITLES"]

PathLike = Union[str, os.PathLike]
FAMILY_TITLES = {"grad_norm": "gradient norm per layer (mean over the epoch)",
                 "weight_norm": "weight norm per layer",
                 "dead_relu": "dead ReLU units per layer (fraction)"}
"""Titles of the callbacks' metric families; other families are titled by their name."""

# How each fate is drawn: line style, line width, alpha, end marker, and the legend's words.
_FATE_STYLE = {
    "finished": ("solid", 1.3, 0.9, "o", "finished (trained to the last rung)"),
    "promoted": ("solid", 0.9, 0.75, "^", "promoted, then stopped or left paused"),
    "paused": ("dashed", 0.8, 0.6, "s", "paused at its first rung, never promoted"),
    "stopped": ("dotted", 0.8, 0.6, "x", "stopped by the scheduler"),
    "failed": ("dotted", 0.8, 0.6, "X", "failed"),
    "training": ("dashdot", 0.8, 0.6, ">", "still training when the journal was read"),
}


def learning_curves(run: RunData) -> Dict[int, Tuple[np.ndarray, np.ndarray]]:
    """candidate -> (epochs, validation accuracies), finite values only, by epoch."""
    curves: Dict[int, Tuple[List[int], List[float]]] = {}
    for row in run.epochs:
        value = row.get("valid_accuracy")
        if value is None or not math.isfinite(value):
            continue
        epochs, values = curves.setdefault(int(row["candidate"]), ([], []))
        epochs.append(int(row["epoch"]))
        values.append(float(value))
    return {candidate: (np.array(e), np.array(v)) for candidate, (e, v) in curves.items()}


def has_curves(run: RunData) -> bool:
    """Whether the run recorded a validation accuracy for any epoch."""
    return any(row.get("valid_accuracy") is not None and math.isfinite(row["valid_accuracy"])
               for row in run.epochs)


def _metric_families(rows: Sequence[dict]) -> List[str]:
    families = {key.split("/", 1)[0] for row in rows for key in (row.get("metrics") or {})
                if "/" in key}
    known = [name for name in FAMILY_TITLES if name in families]
    return known + sorted(families - set(known))


def has_introspection(run: RunData) -> bool:
    """Whether any epoch of the run's best candidates carries per-layer callback metrics."""
    best = {row["candidate"] for row in run.best}
    return bool(_metric_families([row for row in run.epochs if row["candidate"] in best]))


def plot_learning_curves(runs: Sequence[RunData], path: PathLike) -> Path:
    """Validation accuracy against epoch for every candidate, one panel per run.

    A curve's colour is the validation accuracy it ended with (the colour bar), so the good
    candidates stand out from the crowd. In scheduled runs line style and end marker say how
    the candidate ended (finished, promoted, paused, stopped), and small black triangles
    mark the epochs at which candidates were promoted.
    """
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.collections import LineCollection
    from matplotlib.colors import Normalize
    from matplotlib.lines import Line2D

    shown = [run for run in runs if has_curves(run)] or list(runs)
    columns = 1 if len(shown) == 1 else 2
    rows = math.ceil(len(shown) / columns)
    figure = new_figure(6.6 * columns, 4.0 * rows + 0.3)
    axes_list = figure.subplots(rows, columns, squeeze=False).ravel()
    cmap = colormaps["viridis"]
    for axes, run in zip(axes_list, shown):
        curves = learning_curves(run)
        axes.set_title(f"{run.label}: {algorithm_name(run.metadata)}\n"
                       f"{len(curves):,} candidates' learning curves", fontsize=10)
        axes.set_xlabel("epoch")
        axes.set_ylabel("validation accuracy (%)")
        axes.grid(alpha=0.3)
        if not curves:
            note(axes, "no validation accuracy recorded per epoch")
            continue
        finals = {c: float(v[-1]) for c, (_, v) in curves.items()}
        norm = Normalize(100 * min(finals.values()), 100 * max(finals.values()) + 1e-9)
        fates = candidate_fates(run.legs) if run.legs else {}
        handles = []
        for state, (style, width, alpha, marker, words) in (_FATE_STYLE.items() if fates
                                                              else [("all", _FATE_STYLE["finished"])]):
            members = [c for c in curves if (fates[c].state if c in fates else "finished")
                       == state] if fates else list(curves)
            if not members:
                continue
            colours = cmap(norm([100 * finals[c] for c in members]))
            segments = [np.column_stack([curves[c][0], 100 * curves[c][1]]) for c in members]
            axes.add_collection(LineCollection(segments, colors=colours, linestyles=style,
                                               linewidths=width, alpha=alpha))
            ends = np.array([segment[-1] for segment in segments])
            axes.scatter(ends[:, 0], ends[:, 1], s=18, c=colours, marker=marker,
                         edgecolors="none" if marker in "x" else "black", linewidths=0.4,
                         alpha=min(1.0, alpha + 0.2), zorder=3)
            if fates:
                handles.append(Line2D([], [], color="#555555", linestyle=style, marker=marker,
                                      markersize=5, label=f"{words} ({len(members)})"))
        promotions = [(epoch, 100 * curves[c][1][curves[c][0] == epoch][0])
                      for c, fate in fates.items() if c in curves for epoch in fate.promotions
                      if (curves[c][0] == epoch).any()]
        if promotions:
            axes.scatter([e for e, _ in promotions], [v for _, v in promotions], marker="^",
                         s=10, color="black", zorder=4)
            handles.append(Line2D([], [], color="black", marker="^", markersize=4,
                                  linestyle="none", label="promoted here"))
        axes.autoscale_view()
        epochs = [e for e, _ in curves.values() for e in e.tolist()]
        axes.set_xlim(min(epochs) - 0.3, max(epochs) + 0.3)
        figure.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=axes,
                        label="final validation accuracy (%)")
        if handles:
            axes.legend(handles=handles, fontsize=7, loc="lower right", framealpha=0.85)
    for axes in axes_list[len(shown):]:
        axes.set_visible(False)
    figure.suptitle("Learning curves", fontsize=12)
    return save_figure(figure, path)


def plot_introspection(run: RunData, path: PathLike, count: int = 3) -> Path:
    """The callbacks' per-layer metrics of the run's ``count`` best candidates against
    epoch: a row per candidate (those without metrics left out), a column per metric family
    (gradient norms, weight norms, dead ReLUs, ...), a line per layer."""
    by_candidate: Dict[int, List[dict]] = {}
    for row in run.epochs:
        by_candidate.setdefault(int(row["candidate"]), []).append(row)
    best = [row for row in run.best[:max(1, count)]
            if _metric_families(by_candidate.get(row["candidate"], []))] or run.best[:1]
    families = _metric_families([r for row in best for r in by_candidate.get(row["candidate"], [])])
    figure = new_figure(4.6 * max(1, len(families)), 3.0 * len(best) + 0.4)
    grid = figure.subplots(len(best), max(1, len(families)), squeeze=False)
    for row_index, best_row in enumerate(best):
        epochs = sorted(by_candidate.get(best_row["candidate"], []), key=lambda r: r["epoch"])
        for column, family in enumerate(families or ["metrics"]):
            axes = grid[row_index, column]
            layers = sorted({key.split("/", 1)[1] for r in epochs for key in r["metrics"]
                             if key.startswith(family + "/")})
            for index, layer in enumerate(layers):
                points = [(r["epoch"], r["metrics"][f"{family}/{layer}"]) for r in epochs
                          if f"{family}/{layer}" in r["metrics"]]
                axes.plot([e for e, _ in points], [v for _, v in points], "-o", markersize=3,
                          color=run_colour(index), label=layer)
            if not layers:
                note(axes, "not recorded")
            elif family.endswith("norm") and all(v > 0 for r in epochs for k, v in
                                                 r["metrics"].items() if k.startswith(family)):
                axes.set_yscale("log")
            if layers and len(layers) <= 12:
                axes.legend(fontsize=6, loc="best", ncol=2 if len(layers) > 6 else 1)
            axes.set_title(f"#{row_index + 1} (candidate {best_row['candidate']}): "
                           f"{FAMILY_TITLES.get(family, family)}", fontsize=9)
            axes.set_xlabel("epoch")
            axes.grid(alpha=0.3)
    figure.suptitle(f"{run.label}: inside the training of the best candidates", fontsize=12)
    return save_figure(figure, path)
