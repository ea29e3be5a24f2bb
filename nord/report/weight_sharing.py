"""A weight-sharing search in the report: the distribution over each edge's operations, epoch
by epoch, and the derived cell's accuracy in the benchmark's table, from the journal's
``search_epochs``.

    from nord.report.weight_sharing import has_search, plot_search, search_numbers

    if has_search(run):
        plot_search(run, "out/search-gdas.png")
        search_numbers(run)["final_cell"]

A panel per edge (a line per operation: its probability after each epoch) and one panel of the
derived cell's 200-epoch test accuracy in the NAS-Bench-201 table (the curve the benchmark draws
for these methods; never seen by the search), or, off the table's data sets, the epoch's mean
losses. Details: docs/report.md.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Dict, List, Union

from nord.benchmarks.nasbench201.cells import EDGE_NAMES, OPS, in_benchmark_order
from nord.report.plots import new_figure, run_colour, save_figure
from nord.report.runs import RunData

__all__ = ["has_search", "plot_search", "search_numbers"]

PathLike = Union[str, os.PathLike]


def has_search(run: RunData) -> bool:
    """Whether the run is a weight-sharing search with epochs journaled."""
    return bool(run.search_epochs)


def _looked_up(rows: List[Dict[str, Any]]) -> List[float]:
    return [row["lookup_accuracy"] for row in rows if row.get("lookup_accuracy") is not None]


def search_numbers(run: RunData) -> Dict[str, Any]:
    """What summary.json says of the search: its epochs, final cell, and each epoch's derived
    cell and table accuracy (None off the table)."""
    rows = run.search_epochs
    return {"epochs": len(rows), "final_cell": rows[-1]["cell"] if rows else None,
            "cells": [row["cell"] for row in rows],
            "lookup_accuracy": [row.get("lookup_accuracy") for row in rows]}


def plot_search(run: RunData, path: PathLike) -> Path:
    """The distribution of every edge over the epochs, and the derived cell's table accuracy
    (or the losses) per epoch."""
    rows = run.search_epochs
    epochs = [row["epoch"] for row in rows]
    edges = in_benchmark_order(rows[0]["weights"], EDGE_NAMES)
    figure = new_figure(13.0, 6.4)
    grid = figure.subplots(2, 4, squeeze=False)
    for index, edge in enumerate(edges):
        axes = grid[index // 4, index % 4]
        ops = in_benchmark_order(rows[0]["weights"][edge], OPS)
        for number, op in enumerate(ops):
            axes.plot(epochs, [row["weights"][edge][op] for row in rows], color=run_colour(number),
                      label=op, marker="." if len(rows) < 30 else None)
        axes.set_title(edge.replace("edge_", "edge ").replace("_", " -> "), loc="left",
                       fontsize=9)
        axes.set_ylim(0, 1)
        axes.set_xlabel("epoch")
        axes.set_ylabel("probability")
        axes.xaxis.get_major_locator().set_params(integer=True)
    grid[0, 0].legend(fontsize=7, loc="upper left")
    axes = grid[1, 2]
    looked_up = _looked_up(rows)
    if looked_up:
        axes.plot([row["epoch"] for row in rows if row.get("lookup_accuracy") is not None],
                  [100 * value for value in looked_up], color=run_colour(0), marker=".")
        axes.set_title("derived cell: table test accuracy", loc="left", fontsize=9)
        axes.set_ylabel("200-epoch test accuracy (%)")
    else:
        for number, name in enumerate(sorted({key for row in rows for key in row["metrics"]
                                              if key.endswith("loss")})):
            axes.plot(epochs, [row["metrics"].get(name, math.nan) for row in rows],
                      color=run_colour(number), label=name.replace("_", " "))
        axes.legend(fontsize=7)
        axes.set_title("mean losses (no table for this data set)", loc="left", fontsize=9)
        axes.set_ylabel("loss")
    axes.set_xlabel("epoch")
    axes.xaxis.get_major_locator().set_params(integer=True)
    grid[1, 3].axis("off")
    grid[1, 3].text(0.0, 0.9, f"{run.label}: {run.metadata.get('algorithm')}\nfinal cell:\n"
                    + rows[-1]["cell"].replace("+", "+\n"), fontsize=8, va="top",
                    family="monospace", transform=grid[1, 3].transAxes)
    figure.suptitle(f"Weight-sharing search {run.label}: each edge's distribution per epoch",
                    fontsize=10)
    return save_figure(figure, path)
