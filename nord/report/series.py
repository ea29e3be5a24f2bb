"""Per-step series of the best candidates, from the journal's ``series`` table, and what the
training callbacks said of each candidate (diagnostics, the rule that stopped it).

    from nord.report.series import has_series, plot_series, watch_notes

    if has_series(run):
        plot_series(run, "out/series-ga.png", count=3)
    for line in watch_notes(run):
        print(line)

A panel per best candidate and family of series (the name before its first ``/``), a line per
name, against training progress in epochs (epoch - 1 + step / the epoch's last step).
Details: docs/report.md.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Tuple, Union

from nord.report.plots import new_figure, run_colour, save_figure
from nord.report.runs import RunData

__all__ = ["has_series", "plot_series", "watch_notes"]

PathLike = Union[str, os.PathLike]


def has_series(run: RunData) -> bool:
    """Whether the run's best candidates have per-step series."""
    return bool(run.series)


def _families(rows: List[dict]) -> List[str]:
    return sorted({row["name"].split("/", 1)[0] for row in rows})


def plot_series(run: RunData, path: PathLike, count: int = 3) -> Path:
    """The per-step series of the run's ``count`` best candidates (those with series)."""
    by_candidate: Dict[int, List[dict]] = {}
    for row in run.series:
        by_candidate.setdefault(int(row["candidate"]), []).append(row)
    best = [row["candidate"] for row in run.best if row["candidate"] in by_candidate]
    best = best[:max(1, count)]
    families = _families([r for number in best for r in by_candidate[number]])
    figure = new_figure(4.6 * max(1, len(families)), 3.0 * max(1, len(best)) + 0.4)
    grid = figure.subplots(max(1, len(best)), max(1, len(families)), squeeze=False)
    for row_index, number in enumerate(best):
        rows = by_candidate[number]
        last_step: Dict[int, int] = {}
        for row in rows:
            last_step[row["epoch"]] = max(last_step.get(row["epoch"], 1), row["step"])
        for column, family in enumerate(families):
            axes = grid[row_index, column]
            lines: Dict[str, List[Tuple[float, float]]] = {}
            for row in rows:
                if row["name"].split("/", 1)[0] == family:
                    progress = row["epoch"] - 1 + row["step"] / last_step[row["epoch"]]
                    lines.setdefault(row["name"], []).append((progress, row["value"]))
            for index, (name, points) in enumerate(sorted(lines.items())):
                points.sort()
                axes.plot([p for p, _ in points], [v for _, v in points], "-", linewidth=0.9,
                          color=run_colour(index), label=name)
            if len(lines) <= 12:
                axes.legend(fontsize=6, loc="best")
            axes.set_title(f"#{row_index + 1} (candidate {number}): {family}", fontsize=9)
            axes.set_xlabel("epochs of training")
            axes.grid(alpha=0.3)
    figure.suptitle(f"{run.label}: per-step series of the best candidates", fontsize=12)
    return save_figure(figure, path)


def watch_notes(run: RunData) -> List[str]:
    """One line per candidate that a callback raised in or changed (its first diagnostic, and
    whether a callback changed its training) or that a stopping rule ended (the rule, the
    epoch and step), in whichever leg it happened."""
    lines, diagnosed = [], set()
    for row in run.said:
        metrics = row["metrics"]
        stopped = metrics.get("stopped_by")
        if stopped:
            where = f"epoch {stopped.get('epoch')}" + (
                f", step {stopped['step']}" if stopped.get("step") is not None else "")
            lines.append(f"candidate {row['candidate']}: stopped by the rule "
                         f"'{stopped.get('rule')}' at {where}")
        changed = metrics.get("callback_changes")
        for diagnostic in (metrics.get("diagnostics") or [])[:1]:
            if row["candidate"] not in diagnosed:
                diagnosed.add(row["candidate"])
                effect = (f"a callback changed its {', '.join(changed)}: result changed"
                          if changed else "result unchanged")
                lines.append(f"candidate {row['candidate']}: {diagnostic} ({effect})")
    return lines
