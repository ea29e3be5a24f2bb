"""The report's figures, written as PNG files with matplotlib's Agg renderer.

Each function takes runs read by :func:`nord.report.runs.load_runs` and writes one file::

    from nord.report.plots import plot_accuracy, plot_parameters, plot_pareto, plot_wall_time

    runs = load_runs(["runs/ga.db", "runs/random.db"])
    plot_accuracy(runs, "out/accuracy.png")         # the NORD paper's Figure 4
    plot_wall_time(runs, "out/wall_time.png")       # Figure 5
    plot_parameters(runs, "out/parameters.png")     # Figure 6
    plot_pareto(runs[0], "out/pareto-ga.png", reference_front=[(1e5, 0.8), (1e6, 0.9)])

Figures are made with ``matplotlib.figure.Figure`` and an Agg canvas, never through
``pyplot``: nothing global changes (no backend switch, no figure left open), so this works in
a notebook, a headless job, or next to a user's own plots. A run keeps its colour in every
figure. Runs without any successful evaluation still get their panel, with a note.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

from nord.errors import MissingDependencyError
from nord.report.pareto import hypervolume, pareto_indices
from nord.report.runs import RunData, accuracies_by_generation, algorithm_name

__all__ = ["plot_accuracy", "plot_wall_time", "plot_parameters", "plot_pareto", "run_colour",
           "time_unit", "compact_count"]

PathLike = Union[str, os.PathLike]
DPI = 110
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


def _new_figure(width: float, height: float):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:  # pragma: no cover - matplotlib is a dependency of nord
        raise MissingDependencyError(
            "report plots need matplotlib; install it with `pip install matplotlib`") from error
    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _save(figure, path: PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI, facecolor="white")
    return path


def _note(axes, text: str) -> None:
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


def plot_accuracy(runs: Sequence[RunData], path: PathLike) -> Path:
    """Accuracy per generation, one panel per run (the NORD paper's Figure 4).

    Each generation's box shows the accuracies of its ok evaluations (median, quartiles,
    whiskers at 1.5 IQR, outliers as dots); the line joins the generation means, and a
    dashed line shows the best accuracy found so far. Failed evaluations are left out of
    the boxes; the count of each generation's is written under its box, and the total in
    the panel's title.
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rows, columns = _grid(len(runs))
    figure = _new_figure(6.4 * columns, 3.6 * rows + 0.3)
    axes_list = figure.subplots(rows, columns, squeeze=False, sharey=True).ravel()
    all_values = [100 * a for run in runs for row in run.ok_evaluations for a in [row["accuracy"]]]
    for index, (axes, run) in enumerate(zip(axes_list, runs)):
        colour = run_colour(index)
        by_generation = accuracies_by_generation(run.evaluations)
        generations = list(by_generation)
        failed = sum(1 for row in run.evaluations if row["status"] != "ok")
        subtitle = f"{len(run.evaluations)} evaluations"
        if failed:
            subtitle += f", {failed} failed (not in the boxes)"
        if run.status == "running":
            subtitle += ", still running"
        axes.set_title(f"{run.label}: {algorithm_name(run.metadata)}\n{subtitle}", fontsize=10)
        axes.set_xlabel("generation")
        axes.grid(axis="y", alpha=0.3)
        filled = [g for g in generations if by_generation[g]]
        failed_in = {s["generation"]: s["failed"] for s in run.generations if s["failed"]}
        for generation, count in failed_in.items():
            # Failures have no accuracy to draw: say how many there were, under the box.
            axes.text(generation, 0.015, f"{count} failed", transform=axes.get_xaxis_transform(),
                      ha="center", va="bottom", fontsize=7, color="#b03030")
        if filled:
            for generation in filled:
                _box(axes, generation, [100 * a for a in by_generation[generation]], colour)
            stats = {s["generation"]: s for s in run.generations}
            means = [(g, 100 * stats[g]["accuracy_mean"]) for g in generations
                     if g in stats and _finite(stats[g]["accuracy_mean"])]
            axes.plot([g for g, _ in means], [m for _, m in means], "-o", color=colour,
                      markersize=4, linewidth=1.5, zorder=3)
            best = [(g, 100 * stats[g]["best_so_far"]) for g in generations
                    if g in stats and _finite(stats[g]["best_so_far"])]
            axes.plot([g for g, _ in best], [b for _, b in best], "--", color="#444444",
                      linewidth=1, zorder=3)
            axes.legend(handles=[Patch(facecolor=colour, alpha=0.35, edgecolor=colour,
                                       label="ok evaluations"),
                                 Line2D([], [], color=colour, marker="o", markersize=4,
                                        label="mean"),
                                 Line2D([], [], color="#444444", linestyle="--",
                                        label="best so far")],
                        fontsize=8, loc="best", framealpha=0.85)
        else:
            _note(axes, "no successful evaluation yet" if not run.evaluations else
                  f"no successful evaluation ({failed} failed)")
        _integer_ticks(axes, generations)
        if index % columns == 0:
            axes.set_ylabel("accuracy (%)")
    for axes in axes_list[len(runs):]:
        axes.set_visible(False)
    if all_values:
        low, high = min(all_values), max(all_values)
        pad = max(1.0, 0.08 * (high - low))
        axes_list[0].set_ylim(max(0.0, low - pad), min(100.0, high + pad))
    else:
        axes_list[0].set_ylim(0, 100)
    figure.suptitle("Accuracy per generation", fontsize=12)
    return _save(figure, path)


def plot_wall_time(runs: Sequence[RunData], path: PathLike) -> Path:
    """Total wall time per run (bars) and wall time of each generation (lines) (Figure 5).

    A generation's wall time is the last end minus the first start of its evaluations; the
    total is the same over the whole run (see :mod:`nord.report.runs`).
    """
    figure = _new_figure(11.0, 4.0)
    total_axes, generation_axes = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.6]})
    totals = [run.summary.get("wall_time") for run in runs]
    per_generation = [[s["wall_time"] for s in run.generations] for run in runs]
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
    generations_seen: List[int] = []
    for index, run in enumerate(runs):
        points = [(s["generation"], s["wall_time"] / scale) for s in run.generations
                  if _finite(s["wall_time"])]
        generations_seen += [g for g, _ in points]
        if points:
            generation_axes.plot([g for g, _ in points], [t for _, t in points], "-o",
                                 color=run_colour(index), markersize=4, label=run.label)
            plotted = True
    if plotted:
        generation_axes.legend(fontsize=8)
        generation_axes.set_ylim(bottom=0)
    else:
        _note(generation_axes, "no timed evaluation yet")
    _integer_ticks(generation_axes, sorted(set(generations_seen)))
    generation_axes.set_xlabel("generation")
    generation_axes.set_ylabel(f"wall time ({unit})")
    generation_axes.set_title("Wall time per generation (first start to last end)", fontsize=10)
    generation_axes.grid(alpha=0.3)
    figure.suptitle("Wall time", fontsize=12)
    return _save(figure, path)


def _parameter_axis(axes, values: Sequence[float], axis: str = "y") -> None:
    """Engineering tick labels (12k, 1.5M); logarithmic when values span over 50x."""
    from matplotlib.ticker import EngFormatter

    positive = [v for v in values if _finite(v) and v > 0]
    if positive and max(positive) / min(positive) > 50:
        (axes.set_yscale if axis == "y" else axes.set_xscale)("log")
    (axes.yaxis if axis == "y" else axes.xaxis).set_major_formatter(EngFormatter(sep=""))


def plot_parameters(runs: Sequence[RunData], path: PathLike) -> Path:
    """Mean trainable parameters of each generation's ok evaluations, per run (Figure 6)."""
    figure = _new_figure(7.5, 4.2)
    axes = figure.subplots()
    values: List[float] = []
    generations_seen: List[int] = []
    for index, run in enumerate(runs):
        points = [(s["generation"], s["n_params_mean"]) for s in run.generations
                  if _finite(s["n_params_mean"])]
        values += [v for _, v in points]
        generations_seen += [g for g, _ in points]
        if points:
            axes.plot([g for g, _ in points], [v for _, v in points], "-o",
                      color=run_colour(index), markersize=4, label=run.label)
        else:
            axes.plot([], [], "-o", color=run_colour(index), markersize=4,
                      label=f"{run.label} (no successful evaluation)")
    if not values:
        _note(axes, "no successful evaluation yet")
    _parameter_axis(axes, values)
    _integer_ticks(axes, sorted(set(generations_seen)))
    axes.set_xlabel("generation")
    axes.set_ylabel("mean trainable parameters")
    axes.set_title("Mean trainable parameters per generation (ok evaluations)", fontsize=11)
    axes.grid(alpha=0.3, which="both")
    axes.legend(fontsize=8)
    return _save(figure, path)


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
    figure = _new_figure(7.5, 4.8)
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
        _note(axes, "no successful evaluation" + (f" ({failed} failed)" if failed else " yet"))
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
    return _save(figure, path)
