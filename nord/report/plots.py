"""The report's figures, written as PNG files with matplotlib's Agg renderer.

Each function takes runs read by :func:`nord.report.runs.load_runs` and writes one file::

    from nord.report.plots import (plot_accuracy, plot_comparison, plot_parameters,
                                   plot_pareto, plot_wall_time)

    runs = load_runs(["runs/ga.db", "runs/random.db"])
    plot_accuracy(runs, "out/accuracy.png")         # the NORD paper's Figure 4
    plot_comparison(runs, "out/comparison.png")     # best so far, all runs on the same axes
    plot_wall_time(runs, "out/wall_time.png")       # Figure 5
    plot_parameters(runs, "out/parameters.png")     # Figure 6
    plot_pareto(runs[0], "out/pareto-ga.png", reference_front=[(1e5, 0.8), (1e6, 0.9)])

Never through ``pyplot``: nothing global changes. Details (colours, empty runs): docs/report.md.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

from nord.errors import MissingDependencyError
from nord.report.pareto import hypervolume, pareto_indices
from nord.report.runs import RunData, algorithm_name
from nord.report.timeline import Group, best_so_far, ok_mask, progress_axis, progress_groups

__all__ = ["plot_accuracy", "plot_comparison", "plot_wall_time", "plot_parameters",
           "plot_pareto", "run_colour", "time_unit", "compact_count", "new_figure",
           "save_figure", "note"]

PathLike = Union[str, os.PathLike]
DPI = 110
MIN_BIN = 5
"""Bins of fewer evaluations than this are not drawn as boxes (the dots say it all)."""
LOG_AXIS_FROM = 500
"""Runs of this many evaluations or more are compared on a logarithmic evaluations axis."""
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf")


def run_colour(index: int) -> str:
    """The colour of the ``index``-th run in every figure."""
    return _PALETTE[index % len(_PALETTE)]


def time_unit(seconds: Sequence[float]) -> Tuple[str, float]:
    """A unit for durations up to ``max(seconds)``: ('s', 1), ('min', 60) or ('h', 3600)."""
    finite = [s for s in seconds if s is not None and math.isfinite(s)]
    largest = max(finite, default=0.0)
    if largest >= 3 * 3600:
        return "h", 3600.0
    if largest >= 3 * 60:
        return "min", 60.0
    return "s", 1.0


def compact_count(value: float) -> str:
    """``1.45M``, ``830k``, ``512``: a parameter count in three significant digits."""
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g}{suffix}"
    return f"{value:.3g}"


def new_figure(width: float, height: float):
    """A figure on its own Agg canvas (no pyplot), laid out by constrained layout."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:  # pragma: no cover - matplotlib is a dependency of nord
        raise MissingDependencyError(
            "report plots need matplotlib; install it with `pip install matplotlib`") from error
    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def save_figure(figure, path: PathLike) -> Path:
    """Write ``figure`` as a PNG on white (its folder is created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI, facecolor="white")
    return path


def note(axes, text: str) -> None:
    """Grey text in the middle of a panel that has nothing to draw."""
    axes.text(0.5, 0.5, text, transform=axes.transAxes, ha="center", va="center",
              fontsize=10, color="#666666", wrap=True)


def _finite(value) -> bool:
    return value is not None and math.isfinite(value)


def _integer_ticks(axes, generations: Sequence[int]) -> None:
    """Generation numbers on the x axis: every one when few, else a readable subset."""
    from matplotlib.ticker import MaxNLocator

    if not generations:
        axes.set_xticks([])
        return
    low, high = min(generations), max(generations)
    if high - low < 15:
        axes.set_xticks(range(low, high + 1))
    else:
        axes.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=12))
    axes.set_xlim(low - 0.6, high + 0.6)


def _grid(count: int) -> Tuple[int, int]:
    columns = 1 if count == 1 else 2
    return math.ceil(count / columns), columns


def _box(axes, position: float, values: Sequence[float], colour: str, width: float = 0.6) -> None:
    """One box of a box plot (median, quartiles, whiskers at 1.5 IQR, outliers as dots).

    Drawn from primitives rather than with ``Axes.boxplot``, which reads every rcParam and
    so makes matplotlib pick a GUI backend through ``pyplot`` as a side effect.
    """
    from matplotlib import cbook
    from matplotlib.patches import Rectangle

    stats = cbook.boxplot_stats(list(values), whis=1.5)[0]
    left, right = position - width / 2, position + width / 2
    axes.add_patch(Rectangle((left, stats["q1"]), width, stats["q3"] - stats["q1"],
                             facecolor=colour, alpha=0.35, edgecolor="none", zorder=2))
    axes.add_patch(Rectangle((left, stats["q1"]), width, stats["q3"] - stats["q1"],
                             facecolor="none", edgecolor=colour, linewidth=1, zorder=2))
    axes.plot([position, position], [stats["whislo"], stats["q1"]], color=colour, linewidth=1)
    axes.plot([position, position], [stats["q3"], stats["whishi"]], color=colour, linewidth=1)
    for end in (stats["whislo"], stats["whishi"]):
        axes.plot([position - width / 4, position + width / 4], [end, end], color=colour,
                  linewidth=1)
    axes.plot([left, right], [stats["med"], stats["med"]], color="black", linewidth=1.2, zorder=3)
    if len(stats["fliers"]):
        axes.plot([position] * len(stats["fliers"]), stats["fliers"], "o", color=colour,
                  markersize=3, linestyle="none")


def _status_note(run: RunData) -> str:
    """What the panel title says about a run that has not finished."""
    return {"running": ", still running", "killed": ", killed (no final status)",
            "interrupted": ", interrupted", "crashed": ", crashed",
            "failed": ", failed"}.get(run.status, "")


def _draw_bins(axes, groups: Sequence[Group], colour: str) -> None:
    """Bins of evaluations: quartile boxes spanning each bin, the median, whiskers to the
    10th and 90th percentiles (boxes as one collection: fast whatever the run's length)."""
    from matplotlib.collections import LineCollection, PatchCollection
    from matplotlib.patches import Rectangle

    filled = [g for g in groups if len(g.accuracies)]
    if not filled:
        return
    boxes, medians, whiskers = [], [], []
    for group in filled:
        values = 100 * group.accuracies
        p10, q1, median, q3, p90 = np.percentile(values, [10, 25, 50, 75, 90])
        half = 0.4 * group.width
        boxes.append(Rectangle((group.position - half, q1), 2 * half, max(q3 - q1, 1e-9)))
        medians.append([(group.position - half, median), (group.position + half, median)])
        whiskers += [[(group.position, p10), (group.position, q1)],
                     [(group.position, q3), (group.position, p90)]]
    axes.add_collection(PatchCollection(boxes, facecolor=colour, alpha=0.35, edgecolor=colour,
                                        linewidth=0.8, zorder=2))
    axes.add_collection(LineCollection(whiskers, colors=colour, linewidths=0.8, zorder=2))
    axes.add_collection(LineCollection(medians, colors="black", linewidths=1.2, zorder=3))


def plot_accuracy(runs: Sequence[RunData], path: PathLike) -> Path:
    """The search signal as the run went on, one panel per run (the NORD paper's Figure 4).

    Synchronous runs of a few generations get a box per generation (median, quartiles,
    whiskers at 1.5 IQR, outliers as dots) and the line of the generation means. Other runs
    (asynchronous ones, whose generations are no order, and long ones) are drawn against the
    order results were told, in at most :data:`~nord.report.timeline.MAX_GROUPS` bins: every
    ok evaluation as a faint dot, each bin's quartiles as a box with its median, whiskers to
    its 10th and 90th percentiles. A dashed line shows the best accuracy so far. Failed
    evaluations are left out of the boxes and counted in the panel's title.
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rows, columns = _grid(len(runs))
    figure = new_figure(6.4 * columns, 3.6 * rows + 0.3)
    axes_list = figure.subplots(rows, columns, squeeze=False, sharey=True).ravel()
    all_values = [100 * a for run in runs for row in run.ok_evaluations for a in [row["accuracy"]]]
    for index, (axes, run) in enumerate(zip(axes_list, runs)):
        colour = run_colour(index)
        axis, groups = progress_groups(run)
        failed = sum(group.failed for group in groups)
        subtitle = f"{len(run.evaluations):,} evaluations, {run.metadata.get('mode', '?')} mode"
        if failed:
            subtitle += f", {failed:,} failed (not in the boxes)"
        subtitle += _status_note(run)
        axes.set_title(f"{run.label}: {algorithm_name(run.metadata)}\n{subtitle}", fontsize=10)
        axes.grid(axis="y", alpha=0.3)
        handles = []
        if any(len(group.accuracies) for group in groups):
            if axis == "generation":
                for group in groups:
                    if len(group.accuracies):
                        _box(axes, group.position, 100 * group.accuracies, colour)
                    if group.failed:
                        axes.text(group.position, 0.015, f"{group.failed} failed",
                                  transform=axes.get_xaxis_transform(), ha="center",
                                  va="bottom", fontsize=7, color="#b03030")
                means = [(g.position, 100 * float(np.mean(g.accuracies))) for g in groups
                         if len(g.accuracies)]
                axes.plot([x for x, _ in means], [m for _, m in means], "-o", color=colour,
                          markersize=4, linewidth=1.5, zorder=3)
                handles += [Patch(facecolor=colour, alpha=0.35, edgecolor=colour,
                                  label="ok evaluations"),
                            Line2D([], [], color=colour, marker="o", markersize=4, label="mean")]
            else:
                ok = ok_mask(run.evaluations)
                order = np.flatnonzero(ok) + 1
                accuracy = np.array([row["accuracy"] for row in run.evaluations], dtype=float)
                few = len(order) <= 200
                axes.scatter(order, 100 * accuracy[ok], s=14 if few else 3, color=colour,
                             alpha=0.8 if few else 0.15, edgecolors="none", rasterized=True,
                             zorder=1 if not few else 3)
                handles.append(Line2D([], [], color=colour, marker="o", markersize=3,
                                      alpha=0.8 if few else 0.4, linestyle="none",
                                      label="ok evaluation"))
                size = groups[0].last - groups[0].first + 1
                if size >= MIN_BIN:
                    _draw_bins(axes, groups, colour)
                    handles.append(Patch(facecolor=colour, alpha=0.35, edgecolor=colour,
                                         label=f"quartiles of {size:,} evaluations"))
            curve = best_so_far(run)
            if axis == "generation":
                best = {}
                for group in groups:
                    if len(group.accuracies):
                        best[group.position] = max(best.get(group.position, -1.0),
                                                   float(group.accuracies.max()))
                xs = sorted(best)
                axes.plot(xs, 100 * np.maximum.accumulate([best[x] for x in xs]), "--",
                          color="#444444", linewidth=1, zorder=3)
            else:
                axes.step(curve.evaluations, 100 * curve.accuracy, where="post",
                          linestyle="--", color="#444444", linewidth=1, zorder=3)
            handles.append(Line2D([], [], color="#444444", linestyle="--", label="best so far"))
            axes.legend(handles=handles, fontsize=8, loc="lower right", framealpha=0.85)
        else:
            note(axes, "no successful evaluation yet" if not run.evaluations else
                  f"no successful evaluation ({failed} failed)")
        if axis == "generation":
            axes.set_xlabel("generation")
            _integer_ticks(axes, [int(g.position) for g in groups])
        else:
            axes.set_xlabel("evaluations told (in the order results came in)")
            axes.set_xlim(0, max(1, len(run.evaluations)) + 0.5)
        if index % columns == 0:
            axes.set_ylabel(_signal_label(runs))
    for axes in axes_list[len(runs):]:
        axes.set_visible(False)
    if all_values:
        low, high = min(all_values), max(all_values)
        pad = max(1.0, 0.08 * (high - low))
        axes_list[0].set_ylim(max(0.0, low - pad), min(100.0, high + pad))
    else:
        axes_list[0].set_ylim(0, 100)
    figure.suptitle("Search signal as the runs went on", fontsize=12)
    return save_figure(figure, path)


def _signal_label(runs: Sequence[RunData]) -> str:
    """The y label of the search signal (its values drawn x 100): the runs' common wording,
    else 'accuracy (search signal)', naming proxy scores where any run's signal is one."""
    signals = {run.protocol.signal for run in runs}
    scores = any(run.protocol.scores for run in runs)
    if len(signals) == 1:
        return signals.pop() + (" (x 100)" if scores else " (%)")
    if scores:
        return "search signal: accuracy (%), or proxy score mapped into (0, 1) (x 100)"
    return "accuracy (search signal) (%)"


def plot_comparison(runs: Sequence[RunData], path: PathLike) -> Path:
    """Best-so-far search signal of every run on the same axes: against evaluations told,
    and against wall time since the run's first start. A thin dotted line of each run's
    colour shows the reported (test) accuracy of the architecture that was best so far,
    where the journal has one."""
    figure = new_figure(12.0, 4.4)
    by_count, by_time = figure.subplots(1, 2, sharey=True)
    curves = [best_so_far(run) for run in runs]
    times = [float(np.nanmax(c.seconds)) for c in curves
             if len(c.seconds) and np.isfinite(c.seconds).any()]
    unit, scale = time_unit(times)
    drawn = False
    for index, (run, curve) in enumerate(zip(runs, curves)):
        colour = run_colour(index)
        if not len(curve.accuracy):
            by_count.plot([], [], color=colour, label=f"{run.label} (no successful evaluation)")
            continue
        drawn = True
        # extend to the run's last evaluation, so a run that stopped improving still shows
        end = max(len(run.evaluations), int(curve.evaluations[-1]))
        xs = np.append(curve.evaluations, end)
        by_count.step(xs, 100 * np.append(curve.accuracy, curve.accuracy[-1]), where="post",
                      color=colour, linewidth=1.6, label=f"{run.label} ({algorithm_name(run.metadata)})")
        if np.isfinite(curve.reported).any():
            by_count.step(xs, 100 * np.append(curve.reported, curve.reported[-1]), where="post",
                          color=colour, linewidth=0.9, linestyle=":")
        timed = np.isfinite(curve.seconds)
        if timed.any():
            seconds = curve.seconds[timed] / scale
            by_time.step(seconds, 100 * curve.accuracy[timed], where="post", color=colour,
                         linewidth=1.6, label=run.label)
            if np.isfinite(curve.reported[timed]).any():
                by_time.step(seconds, 100 * curve.reported[timed], where="post", color=colour,
                             linewidth=0.9, linestyle=":")
    if not drawn:
        note(by_count, "no successful evaluation yet")
        note(by_time, "no successful evaluation yet")
    from matplotlib.lines import Line2D
    handles, labels = by_count.get_legend_handles_labels()
    if any(np.isfinite(c.reported).any() for c in curves):
        handles.append(Line2D([], [], color="#444444", linestyle=":", linewidth=0.9))
        labels.append("reported accuracy of the best so far")
    if handles:
        by_count.legend(handles, labels, fontsize=8, loc="lower right", framealpha=0.85)
    by_count.set_xlabel("evaluations told")
    by_count.set_ylabel(f"best so far: {_signal_label(runs)}")
    by_count.set_title("Best so far against evaluations", fontsize=10)
    by_time.set_xlabel(f"wall time since the run started ({unit})")
    by_time.set_title("Best so far against wall time", fontsize=10)
    # Best-so-far curves rise early and then flatten: a long run is read on a log axis.
    longest = max((len(run.evaluations) for run in runs), default=0)
    if drawn and longest >= LOG_AXIS_FROM:
        by_count.set_xscale("log")
        by_count.set_xlabel("evaluations told (log scale)")
    else:
        by_count.set_xlim(left=0)
    first = [float(np.nanmin(c.seconds[c.seconds > 0])) / scale for c in curves
             if len(c.seconds) and (c.seconds > 0).any()]
    if drawn and first and max(times, default=0) / scale > 100 * min(first):
        by_time.set_xscale("log")
        by_time.set_xlabel(f"wall time since the run started ({unit}, log scale)")
    else:
        by_time.set_xlim(left=0)
    for axes in (by_count, by_time):
        axes.grid(alpha=0.3, which="both")
    figure.suptitle("Comparison of the runs: best accuracy found so far", fontsize=12)
    return save_figure(figure, path)


def plot_wall_time(runs: Sequence[RunData], path: PathLike) -> Path:
    """Total wall time per run (bars), and beside it (the NORD paper's Figure 5) the wall
    time of each generation when every run is synchronous with a few generations, else the
    evaluations finished against wall time (generations of asynchronous runs overlap).

    A generation's wall time is the last end minus the first start of its evaluations; the
    total is the run's own running time over its sessions (``Journal.summary()``).
    """
    figure = new_figure(11.0, 4.0)
    total_axes, right_axes = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.6]})
    totals = [run.summary.get("wall_time") for run in runs]
    per_generation_view = all(progress_axis(run) == "generation" for run in runs)
    per_generation = ([[s["wall_time"] for s in run.generations] for run in runs]
                      if per_generation_view else [])
    unit, scale = time_unit(totals + [t for times in per_generation for t in times])

    labels = [run.label for run in runs]
    heights = [t / scale if _finite(t) else 0.0 for t in totals]
    bars = total_axes.bar(range(len(runs)), heights,
                          color=[run_colour(i) for i in range(len(runs))], alpha=0.85)
    for bar, total in zip(bars, totals):
        text = f"{total / scale:.3g} {unit}" if _finite(total) else "n/a"
        total_axes.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                            xytext=(0, 2), textcoords="offset points", ha="center",
                            va="bottom", fontsize=8)
    total_axes.set_xticks(range(len(runs)), labels, rotation=20 if len(runs) > 2 else 0,
                          ha="right" if len(runs) > 2 else "center", fontsize=8)
    total_axes.set_ylabel(f"wall time ({unit})")
    total_axes.set_title("Total wall time per run", fontsize=10)
    total_axes.set_ylim(0, max(heights + [1e-9]) * 1.15)
    total_axes.grid(axis="y", alpha=0.3)

    plotted = False
    if per_generation_view:
        generations_seen: List[int] = []
        for index, run in enumerate(runs):
            points = [(s["generation"], s["wall_time"] / scale) for s in run.generations
                      if _finite(s["wall_time"])]
            generations_seen += [g for g, _ in points]
            if points:
                right_axes.plot([g for g, _ in points], [t for _, t in points], "-o",
                                color=run_colour(index), markersize=4, label=run.label)
                plotted = True
        _integer_ticks(right_axes, sorted(set(generations_seen)))
        right_axes.set_xlabel("generation")
        right_axes.set_ylabel(f"wall time ({unit})")
        right_axes.set_title("Wall time per generation (first start to last end)", fontsize=10)
    else:
        for index, run in enumerate(runs):
            ended = np.array([row["ended"] for row in run.evaluations
                              if row.get("ended") is not None], dtype=float)
            started = [row["started"] for row in run.evaluations if row.get("started") is not None]
            if len(ended) and started:
                ended = np.sort(ended) - min(started)
                right_axes.step(np.append(0.0, ended / scale), np.arange(len(ended) + 1),
                                where="post", color=run_colour(index), label=run.label)
                plotted = True
        right_axes.set_xlabel(f"wall time since the run started ({unit})")
        right_axes.set_ylabel("evaluations finished")
        right_axes.set_title("Evaluations finished against wall time", fontsize=10)
        right_axes.set_xlim(left=0)
    if plotted:
        right_axes.legend(fontsize=8, loc="upper left")
        right_axes.set_ylim(bottom=0)
    else:
        note(right_axes, "no timed evaluation yet")
    right_axes.grid(alpha=0.3)
    figure.suptitle("Wall time", fontsize=12)
    return save_figure(figure, path)


def _parameter_axis(axes, values: Sequence[float], axis: str = "y") -> None:
    """Engineering tick labels (12k, 1.5M); logarithmic when values span over 50x."""
    from matplotlib.ticker import EngFormatter

    positive = [v for v in values if _finite(v) and v > 0]
    if positive and max(positive) / min(positive) > 50:
        (axes.set_yscale if axis == "y" else axes.set_xscale)("log")
    (axes.yaxis if axis == "y" else axes.xaxis).set_major_formatter(EngFormatter(sep=""))


def plot_parameters(runs: Sequence[RunData], path: PathLike) -> Path:
    """Mean trainable parameters of the ok evaluations as the runs went on (Figure 6): per
    generation when every run is drawn so in :func:`plot_accuracy`, else per bin of
    evaluations told."""
    figure = new_figure(7.5, 4.2)
    axes = figure.subplots()
    axis = ("generation" if all(progress_axis(run) == "generation" for run in runs)
            else "evaluation")
    values: List[float] = []
    positions: List[int] = []
    for index, run in enumerate(runs):
        _, groups = progress_groups(run, axis)
        points = [(g.position, float(np.mean(g.n_params))) for g in groups if len(g.n_params)]
        values += [v for _, v in points]
        positions += [int(x) for x, _ in points]
        if points:
            axes.plot([x for x, _ in points], [v for _, v in points],
                      "-o" if axis == "generation" else "-", color=run_colour(index),
                      markersize=4, label=run.label)
        else:
            axes.plot([], [], "-o", color=run_colour(index), markersize=4,
                      label=f"{run.label} (no successful evaluation)")
    if not values:
        note(axes, "no successful evaluation yet")
    _parameter_axis(axes, values)
    if axis == "generation":
        _integer_ticks(axes, sorted(set(positions)))
        axes.set_xlabel("generation")
        axes.set_title("Mean trainable parameters per generation (ok evaluations)", fontsize=11)
    else:
        axes.set_xlabel("evaluations told")
        axes.set_title("Mean trainable parameters of the ok evaluations, per bin of evaluations",
                       fontsize=11)
        axes.set_xlim(left=0)
    axes.set_ylabel("mean trainable parameters")
    axes.grid(alpha=0.3, which="both")
    axes.legend(fontsize=8, loc="best" if len(values) < 500 else "upper left")
    return save_figure(figure, path)


def plot_pareto(run: RunData, path: PathLike, colour: Optional[str] = None,
                reference_front: Optional[Sequence[Tuple[float, float]]] = None,
                reference_label: str = "exact front",
                reference_point: Optional[Tuple[float, float]] = None) -> Path:
    """Accuracy against parameters: every ok evaluation, and the run's Pareto front.

    Args:
        run: the run.
        path: the PNG file.
        colour: the run's colour.
        reference_front: ``(n_params, accuracy)`` points of a known front (e.g. the exact
            front of a tabular benchmark), drawn as a separate series.
        reference_label: that series' legend entry.
        reference_point: when given, the run's normalised hypervolume for it is shown in the
            title (see :func:`nord.report.pareto.hypervolume`).
    """
    colour = colour or run_colour(0)
    figure = new_figure(7.5, 4.8)
    axes = figure.subplots()
    ok = run.ok_evaluations
    points = [(float(row["n_params"]), float(row["accuracy"])) for row in ok]
    front = [points[i] for i in pareto_indices(points)]
    xs: List[float] = [p for p, _ in points]
    if points:
        axes.scatter([p for p, _ in points], [100 * a for _, a in points], s=14, color=colour,
                     alpha=0.3, edgecolors="none", label=f"ok evaluations ({len(points)})")
        axes.step([p for p, _ in front], [100 * a for _, a in front], where="post",
                  color=colour, linewidth=1.5)
        axes.plot([p for p, _ in front], [100 * a for _, a in front], "o", color=colour,
                  markeredgecolor="black", markersize=6,
                  label=f"Pareto front of the run ({len(front)})")
    if reference_front:
        reference = sorted((float(p), float(a)) for p, a in reference_front)
        xs += [p for p, _ in reference]
        axes.step([p for p, _ in reference], [100 * a for _, a in reference], where="post",
                  color="black", linestyle="--", linewidth=1)
        axes.plot([p for p, _ in reference], [100 * a for _, a in reference], "x",
                  color="black", markersize=5, label=f"{reference_label} ({len(reference)})")
    if not points:
        failed = len(run.evaluations) - len(ok)
        note(axes, "no successful evaluation" + (f" ({failed} failed)" if failed else " yet"))
    if xs:
        _parameter_axis(axes, xs, axis="x")
    else:
        axes.set_xticks([])
        axes.set_yticks([])
    axes.set_xlabel("trainable parameters")
    axes.set_ylabel("accuracy (%)")
    title = f"{run.label}: {algorithm_name(run.metadata)}, accuracy against size"
    if reference_point is not None and front:
        value = hypervolume(front, reference_point)
        title += (f"\nhypervolume {value:.4f} (reference point: "
                  f"{compact_count(reference_point[0])} parameters, "
                  f"{100 * reference_point[1]:.3g} % accuracy)")
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3, which="both")
    if points or reference_front:
        axes.legend(fontsize=8, loc="lower right")
    return save_figure(figure, path)
