"""write_report: compare search runs in a folder of PNG plots, a summary page and summary.json.

    from nord.report import write_report

    page = write_report(["runs/ga.db", "runs/random.db"], "report/")          # report/report.md
    write_report("runs/", "report/", title="GA against random search", fmt="html")
    write_report(["runs/nsga2.db"], "report/", reference_front=[(1.2e5, 0.85), (4e5, 0.9)])

Journals may belong to runs still going (the report is a snapshot).
Details (what the folder holds): docs/report.md.
"""
from __future__ import annotations

import datetime
import json
import logging
import math
import os
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from nord.architecture.descriptor import NeuralDescriptor
from nord.checks import check_int
from nord.errors import ConfigurationError, NordError
from nord.journal.listing import in_legs
from nord.report.architecture import draw_descriptor
from nord.report.curves import (has_curves, has_introspection, plot_introspection,
    plot_learning_curves)
from nord.report.page import Code, Link, Page, anchor
from nord.report.pareto import hypervolume, pareto_indices
from nord.report.plots import (plot_accuracy, plot_comparison, plot_parameters, plot_pareto,
                               plot_wall_time, run_colour)
from nord.report.runs import (RunData, best_entry, dumps, is_multi_objective, load_runs,
                              measured_on, run_numbers)
from nord.report.schedule import STATES, schedule_numbers
from nord.report.series import has_series, plot_series, watch_notes
from nord.report.weight_sharing import has_search, plot_search, search_numbers
from nord.version import __version__

__all__ = ["write_report", "FORMATS", "format_duration", "default_reference_point"]

logger = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]
FORMATS = {"markdown": "md", "md": "md", "html": "html"}
"""Accepted values of ``fmt``, and the page's file extension for each."""
REFERENCE_MARGIN = 1.1
"""The default hypervolume reference point lies this factor beyond the largest network."""

DEFINITIONS = [
    "Accuracy is the search signal: what the search selected architectures by, normally the "
    "validation accuracy (each run's section names it). A run without a validation split "
    "selected on test accuracy, and its best test accuracy is optimistically biased; the page "
    "warns about such runs at the top. Box plots and means are over each generation's (or "
    "bin's) ok evaluations, cached ones included; failed evaluations are counted in the "
    "tables but left out of the boxes.",
    "Reported accuracy: the figure an evaluator reports besides the search signal, never seen "
    "by the search (the test accuracy; tabular benchmarks: the 200-epoch test accuracy). "
    "Report this one.",
    "Total wall time: the run's own running time, summed over its sessions as --time-budget "
    "counts it (a run stopped and resumed leaves out the pause; a simulated run: its "
    "simulated time). Wall time of a generation: last end minus first start over its "
    "evaluations; in asynchronous runs generations overlap.",
    "Evaluation time: training plus testing seconds summed over the evaluations really run "
    "(cached ones excluded), over all workers.",
    "Cached: an architecture evaluated earlier in the run, whose result was reused.",
]


def format_duration(seconds: Optional[float]) -> str:
    """``12.3 s``, ``4.5 min``, ``2.25 h``; ``n/a`` for None or NaN."""
    if seconds is None or not math.isfinite(seconds):
        return "n/a"
    if seconds < 180:
        return f"{seconds:.3g} s"
    if seconds < 3 * 3600:
        return f"{seconds / 60:.3g} min"
    return f"{seconds / 3600:.3g} h"


def _percent(value: Optional[float]) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{100 * value:.2f} %"


def _count(value: Any) -> str:
    return "n/a" if value is None else f"{int(value):,}"


def _selected_on(numbers: Dict[str, Any]) -> str:
    if numbers["protocol"].get("measure") == "proxy score":
        return "untrained networks (proxy score)"
    return ("TEST data (biased)" if numbers["protocol"]["selected_on_test"]
            else "validation data")


def _signal(numbers: Dict[str, Any], value: Optional[float]) -> str:
    """A search-signal figure as what it is: an accuracy in percent, or a proxy's score."""
    if numbers["protocol"].get("measure") == "proxy score":
        return "n/a" if value is None or not math.isfinite(value) else f"{value:.4f} (proxy score)"
    return _percent(value)


def _plain(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def default_reference_point(point_sets: Iterable[Sequence[Tuple[float, float]]]
                            ) -> Optional[Tuple[float, float]]:
    """``(1.1 x the most parameters among the points, 0.0 accuracy)``, or None without points."""
    largest = [p for points in point_sets for p, a in points if math.isfinite(p) and math.isfinite(a)]
    if not largest or max(largest) <= 0:
        return None
    return (REFERENCE_MARGIN * max(largest), 0.0)


def _ok_points(run: RunData) -> List[Tuple[float, float]]:
    return [(float(row["n_params"]), float(row["accuracy"])) for row in run.ok_evaluations]


def _draw_best(run: RunData, out_dir: Path, count: int) -> List[Dict[str, Any]]:
    """Draw the run's best architectures; returns their summary.json entries."""
    entries = []
    for rank, row in enumerate(run.best[:count], start=1):
        entry = best_entry(row, rank)
        if row.get("descriptor") is None:   # a benchmark's cell: its string says it all
            entries.append(entry)
            continue
        stem = f"architectures/{run.slug}-best{rank}"
        title = (f"{run.label} #{rank}: accuracy {_percent(entry['accuracy'])}, "
                 f"{_count(entry['n_params'])} parameters")
        try:
            descriptor = NeuralDescriptor.from_json(row["descriptor"])
        except (NordError, TypeError, ValueError) as error:
            # A layer registered by the run's own code is unknown here: say so, draw nothing.
            entry["error"] = f"the descriptor could not be rebuilt: {error}"
            logger.warning("%s, best #%d: %s", run.label, rank, entry["error"])
            entries.append(entry)
            continue
        draw_descriptor(descriptor, out_dir / f"{stem}.png", title=title)
        (out_dir / f"{stem}.dot").write_text(descriptor.to_dot(f"{run.label} best {rank}") + "\n",
                                             encoding="utf-8")
        (out_dir / f"{stem}.json").write_text(descriptor.to_json(indent=2) + "\n",
                                              encoding="utf-8")
        entry["files"] = {"png": f"{stem}.png", "dot": f"{stem}.dot", "json": f"{stem}.json"}
        entries.append(entry)
    return entries


def write_report(journal_paths: Union[PathLike, Iterable[PathLike]], out_dir: PathLike,
                 title: Optional[str] = None, fmt: str = "markdown", *,
                 pareto: Optional[bool] = None,
                 reference_front: Optional[Sequence[Tuple[float, float]]] = None,
                 reference_label: str = "exact front",
                 reference_point: Optional[Tuple[float, float]] = None,
                 best_count: int = 3, labels: Optional[Sequence[str]] = None,
                 skipped: Optional[List[Tuple[Path, str]]] = None) -> Path:
    """Write a report comparing the runs in ``journal_paths`` into ``out_dir``.

    Args:
        journal_paths: run journals (SQLite files written by the search loop), or folders
            of them, or one path.
        out_dir: the folder to write into (created; files of an earlier report with the same
            names are replaced).
        title: the page's title; default "Comparison of N runs".
        fmt: 'markdown' (or 'md'): ``report.md``; 'html': ``report.html``.
        pareto: True draws the Pareto front of every run; False of none; None (default) of
            the multi-objective runs (``objectives`` >= 2 in their metadata), or of every run
            when ``reference_front`` is given.
        reference_front: ``(n_params, accuracy)`` points of a known front, accuracy as a
            fraction like the journal's (e.g. the exact front of a tabular benchmark:
            ``pareto_front(zip(arrays.n_params, arrays.accuracy))``), drawn beside each run's
            front and given a hypervolume of its own.
        reference_label: the legend entry of ``reference_front``.
        reference_point: ``(n_params, accuracy)`` reference point of the hypervolumes;
            default 1.1 x the largest network in the fronts' plots, at 0 accuracy. All
            hypervolumes of a report share it, so they compare.
        best_count: the best distinct architectures drawn per run.
        labels: the runs' names, one per journal (default: the journals' file names; a
            journal named twice is then reported once).
        skipped: a list that receives ``(path, reason)`` for each file left out: a file of
            a folder that is not a readable journal, or a journal named again (the page names
            them too).

    Returns:
        The path of the summary page.

    Raises:
        ConfigurationError: an unknown ``fmt``, no journal, or labels that do not match.
        JournalError: a path is not a journal.
    """
    extension = FORMATS.get(str(fmt).lower())
    if extension is None:
        raise ConfigurationError(
            f"the report format must be one of {sorted(FORMATS)}; got {fmt!r}")
    best_count = check_int(
        best_count, "the number of best candidates to show (--best, best_count=)", 0)
    left_out: List[Tuple[Path, str]] = []
    runs = load_runs(journal_paths, labels=labels, best_count=best_count, skipped=left_out)
    if skipped is not None:
        skipped.extend(left_out)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    title = title or f"Comparison of {len(runs)} run{'s' if len(runs) != 1 else ''}"
    reference = (sorted((float(p), float(a)) for p, a in reference_front)
                 if reference_front else None)

    files = {"accuracy": plot_accuracy(runs, out / "accuracy.png").name,
             "comparison": plot_comparison(runs, out / "comparison.png").name,
             "wall_time": plot_wall_time(runs, out / "wall_time.png").name,
             "parameters": plot_parameters(runs, out / "parameters.png").name}
    if any(has_curves(run) for run in runs):
        files["learning_curves"] = plot_learning_curves(runs, out / "learning_curves.png").name
    stepped = [run for run in runs if has_series(run)]
    if stepped:
        files["series"] = {run.label: plot_series(run, out / f"series-{run.slug}.png",
                                                  count=max(1, best_count)).name
                           for run in stepped}
    searched = [run for run in runs if has_search(run)]
    if searched:
        files["search"] = {run.label: plot_search(run, out / f"search-{run.slug}.png").name
                           for run in searched}
    introspected = [run for run in runs if has_introspection(run)]
    if introspected:
        files["introspection"] = {
            run.label: plot_introspection(run, out / f"introspection-{run.slug}.png",
                                          count=max(1, best_count)).name
            for run in introspected}

    if pareto is None:
        pareto_runs = [run for run in runs
                       if reference is not None or is_multi_objective(run.metadata)]
    else:
        pareto_runs = list(runs) if pareto else []
    numbers = [run_numbers(run) for run in runs]
    for run, entry in zip(runs, numbers):
        entry["schedule"] = schedule_numbers(run)
        if has_search(run):
            entry["search"] = search_numbers(run)
    pareto_info: Dict[str, Any] = {}
    if pareto_runs:
        point = reference_point or default_reference_point(
            [_ok_points(run) for run in pareto_runs] + ([reference] if reference else []))
        pareto_info = {"reference_point": list(point) if point else None, "normalised": True,
                       "reference_label": reference_label if reference else None,
                       "reference_front": [list(p) for p in reference] if reference else None,
                       "reference_hypervolume": (hypervolume(reference, point)
                                                 if reference and point else None)}
        files["pareto"] = {}
        chosen = {id(run) for run in pareto_runs}
        for index, run in enumerate(runs):
            if id(run) not in chosen:
                continue
            name = f"pareto-{run.slug}.png"
            plot_pareto(run, out / name, colour=run_colour(index), reference_front=reference,
                        reference_label=reference_label, reference_point=point)
            files["pareto"][run.label] = name
            points = _ok_points(run)
            front = [points[i] for i in pareto_indices(points)]
            numbers[index]["pareto"] = {
                "front": [list(p) for p in front], "file": name,
                "hypervolume": hypervolume(front, point) if point and front else None}

    for run, entry in zip(runs, numbers):
        entry["best"] = _draw_best(run, out, best_count)

    page_path = out / f"report.{extension}"
    summary = {"title": title, "generated": datetime.datetime.now().isoformat(timespec="seconds"),
               "nord_version": _nord_version(), "page": page_path.name,
               "selected_on_test": [n["label"] for n in numbers
                                    if n["protocol"]["selected_on_test"]],
               "unlike": unlike_runs(runs),
               "files": files,
               "pareto": pareto_info or None, "definitions": DEFINITIONS, "runs": numbers,
               "skipped": [{"path": str(path), "reason": reason} for path, reason in left_out]}
    (out / "summary.json").write_text(dumps(summary) + "\n", encoding="utf-8")
    page = _page(title, runs, numbers, files, pareto_info, left_out)
    page_path.write_text(page.to_html(out) if extension == "html" else page.to_markdown(),
                         encoding="utf-8")
    logger.info("report on %d runs written to %s", len(runs), page_path)
    return page_path


def unlike_runs(runs: Sequence[RunData]) -> Dict[str, List[str]]:
    """What the runs measure -> their labels, when they do not all measure the same thing
    (their accuracies then share the plots' axes without comparing); empty when they do."""
    groups: Dict[str, List[str]] = {}
    for run in runs:
        groups.setdefault(measured_on(run), []).append(run.label)
    return groups if len(groups) > 1 else {}


def _nord_version() -> Optional[str]:
    return __version__


def _page(title: str, runs: List[RunData], numbers: List[Dict[str, Any]],
          files: Dict[str, Any], pareto_info: Dict[str, Any],
          skipped: Sequence[Tuple[Path, str]] = ()) -> Page:
    page = Page(title)
    generated = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    page.paragraph(f"{len(runs)} run{'s' if len(runs) != 1 else ''} compared, generated "
                   f"{generated} by nord {_nord_version() or ''}. The same numbers are in ",
                   Link("summary.json", "summary.json"), ".")
    for n in numbers:
        protocol = n["protocol"]
        if protocol["selected_on_test"]:
            page.warning(f"{n['label']} selected its architectures on TEST data ("
                         f"{'; '.join(protocol['reasons'])}). Its best test accuracy "
                         f"({_percent(n['best_reported_accuracy'])}) is optimistically biased: "
                         "do not report it as a held-out result. Run again with a validation "
                         "split (nord run --valid-fraction 0.1).")
        for warning in protocol["warnings"]:
            if not protocol["selected_on_test"]:
                page.warning(f"{n['label']}: {warning}")
    unlike = unlike_runs(runs)
    if unlike:
        page.warning("These runs measure different things, so their accuracies do not compare, "
                     "though the plots share their axes: " + "; ".join(
                         f"{', '.join(labels)}: {what}" for what, labels in unlike.items())
                     + ". Report like runs together (nord report with the journals of one).")
    running = [n["label"] for n in numbers if n["status"] == "running"]
    if running:
        page.paragraph(f"Still running: {', '.join(running)}; their figures are a snapshot.")
    killed = [n["label"] for n in numbers if n["status"] == "killed"]
    if killed:
        page.paragraph(f"Stopped without a final status (killed, a lost host or a power cut): "
                       f"{', '.join(killed)}; 'nord resume' continues them.")
    for path, reason in skipped:
        page.paragraph(f"Left out: {path}: {reason}")

    page.heading("Runs")
    page.paragraph("Search signal: the accuracy the search selected architectures by "
                   "(validation accuracy, unless the run had no validation split). Reported: "
                   "the test accuracy of that best architecture, which the search never saw.")
    header = ["run", "algorithm", "seed", "data set", "ranks", "mode", "evaluations", "ok",
              "failed", "cached", "selected on", "best accuracy (search signal)",
              "its test accuracy (reported)", "parameters of best", "wall time", "status"]
    rows = []
    for n in numbers:
        rows.append([Link(n["label"], f"#{anchor(n['label'])}"), n["algorithm_label"],
                     _plain(n["seed"]), _plain(n["dataset"]), _plain(n["ranks"]),
                     _plain(n["mode"]), _count(n["evaluations"]), _count(n["ok"]),
                     _count(n["failed"]), _count(n["cached"]), _selected_on(n),
                     _signal(n, n["best_accuracy"]), _percent(n["best_reported_accuracy"]),
                     _count(n["best_n_params"]), format_duration(n["wall_time"]),
                     n["status"]])
    page.table(header, rows, align=["left"] * 6 + ["right"] * 4 + ["left"] + ["right"] * 4
               + ["left"])

    for run, n in zip(runs, numbers):
        page.heading(run.label, level=3)
        fields = [
            ("journal", Code(n["path"])),
            ("algorithm", n["algorithm_label"]),
            ("parameters", Code(json.dumps(n["parameters"], sort_keys=True, default=str))),
            ("seed", _plain(n["seed"])),
            ("data set", _plain(n["dataset"])),
            ("search space", Code(json.dumps(run.metadata.get("space"), sort_keys=True,
                                             default=str))),
            ("ranks / groups / workers",
             f"{_plain(n['ranks'])} / {_plain(n['groups'])} / {_plain(n['workers'])}"),
            ("mode", _plain(n["mode"])),
            ("budget", f"{_plain(n['budget'])} evaluations"),
            ("batch size", "none (asynchronous: no batches)" if n.get("mode") == "async"
             else "n/a" if n["batch_size"] is None
             else f"{n['batch_size']} (candidates evaluated before their results are told)"),
            ("status", n["status"] + (f" (resumed {n['resumed']} times)" if n["resumed"] else "")),
            ("evaluations (ok / failed / cached)",
             f"{_count(n['evaluations'])} ({_count(n['ok'])} / {_count(n['failed'])} / "
             f"{_count(n['cached'])})"),
            ("generations", "none (asynchronous: results are told in the order they come)"
             if n.get("mode") == "async" else _count(n["generations"])),
            ("search signal", n["protocol"]["signal"]),
            ("selected on", _selected_on(n)),
            ("reported accuracy", n["protocol"]["reported"]),
            ("best proxy score (search signal)" if n["protocol"].get("measure") == "proxy score"
             else "best accuracy (search signal)", _signal(n, n["best_accuracy"])),
            ("its test accuracy (reported)", _percent(n["best_reported_accuracy"])),
            ("its trainable parameters", _count(n["best_n_params"])),
            ("found in generation / candidate",
             f"{_plain(n['best_generation'])} / {_plain(n['best_candidate'])}"),
            ("total wall time", format_duration(n["wall_time"])),
            ("evaluation time (all workers)", format_duration(n["evaluation_time"])),
        ]
        if "pareto" in n:
            hv = n["pareto"]["hypervolume"]
            fields.append(("Pareto front / hypervolume",
                           f"{len(n['pareto']['front'])} points / "
                           f"{'n/a' if hv is None else f'{hv:.4f}'}"))
        if run.metadata.get("scheduler"):
            fields.append(("scheduler", Code(json.dumps(run.metadata["scheduler"],
                                                        sort_keys=True, default=str))))
        if run.metadata.get("config"):
            fields.append(("configuration", Code(json.dumps(run.metadata["config"],
                                                            sort_keys=True, default=str))))
        for warning in n["protocol"]["warnings"]:
            fields.append(("warning", warning))
        if not n["ok"]:
            fields.append(("note", "no evaluation succeeded: the plots show an empty panel"))
        page.table(["", "value"], [[name, value] for name, value in fields])

    page.heading("Best so far")
    page.image(files["comparison"], "best accuracy so far of every run, against evaluations "
               "and against wall time", 1200)
    page.paragraph("Solid: the best search-signal accuracy found so far; dotted: the test "
                   "(reported) accuracy of that same architecture. Left against the results "
                   "told, right against wall time since the run's first evaluation started.")
    page.heading("Accuracy as the runs went on")
    page.image(files["accuracy"], "accuracy per generation or per bin of evaluations", 1200)
    page.paragraph("Synchronous runs of a few generations: a box per generation (median, "
                   "quartiles, whiskers at 1.5 times the interquartile range) and the line of "
                   "the generation means. Asynchronous and long runs: every ok evaluation as a "
                   "dot in the order results were told, and boxes of the quartiles of equal "
                   "bins of evaluations (whiskers to the 10th and 90th percentiles); their "
                   "generations are no order. Dashed: the best accuracy so far.")
    if files.get("learning_curves"):
        page.heading("Learning curves")
        page.image(files["learning_curves"], "validation accuracy against epoch, every "
                   "candidate, coloured by its final value", 1200)
        page.paragraph("Each line is one candidate's validation accuracy after each epoch it "
                       "trained, coloured by the accuracy it ended with. Under a scheduler, "
                       "line style and end marker say how the candidate ended (finished, "
                       "promoted, paused, stopped); triangles mark promotions.")
    for label, name in (files.get("introspection") or {}).items():
        page.heading(f"Inside the training: {label}", level=3)
        page.image(name, f"per-layer training metrics of the best candidates of {label}", 1200)
    for run, n in zip(runs, numbers):
        name = (files.get("search") or {}).get(run.label)
        if name is None:
            continue
        page.heading(f"Weight-sharing search: {run.label}", level=3)
        looked_up = [value for value in n["search"]["lookup_accuracy"] if value is not None]
        page.paragraph(
            f"{run.metadata.get('algorithm')} searched for {n['search']['epochs']} epochs and "
            "ended with the cell ", Code(n["search"]["final_cell"]), ". Each edge's panel is the "
            "method's probability of each operation after each epoch. "
            + (f"The last panel is each epoch's derived cell's 200-epoch test accuracy in the "
               f"NAS-Bench-201 table ({100 * looked_up[-1]:.2f} % at the end), which the search "
               "never saw." if looked_up else
               "Its data set is not one of the table's, so the last panel is the mean losses."))
        page.image(name, f"each edge's distribution per epoch of {run.label}", 1200)
    for label, name in (files.get("series") or {}).items():
        page.heading(f"Step by step: {label}", level=3)
        page.image(name, f"per-step series of the best candidates of {label}", 1200)
    for run, n in zip(runs, numbers):
        notes = watch_notes(run)
        if notes:
            page.heading(f"What the callbacks said: {run.label}", level=3)
            page.paragraph(f"Candidates ended early by a stopping rule: {n['stopped_by_rules']}"
                           f"{in_legs(n['stopped_legs'])}; candidates with a training "
                           f"callback's diagnostic: {n['diagnosed']}"
                           f"{in_legs(n['diagnosed_legs'])}.")
            page.paragraph("; ".join(notes[:20]) + (f"; and {len(notes) - 20} more"
                                                    if len(notes) > 20 else "") + ".")
    scheduled = [(run, n) for run, n in zip(runs, numbers) if n.get("schedule")]
    if scheduled:
        page.heading("Scheduled training")
        page.paragraph("Epochs trained: over every leg of training that ended well. A full "
                       "search: the same candidates each trained to the scheduler's last rung "
                       "(max epochs), as without a scheduler.")
        rows = []
        for run, n in scheduled:
            numbers_of = n["schedule"]
            fraction = numbers_of["fraction"]
            rows.append([n["label"], _plain(numbers_of["scheduler"]),
                         _plain(numbers_of["max_epochs"]), _count(numbers_of["candidates"]),
                         _count(numbers_of["legs"]),
                         _count(numbers_of["unusable_checkpoints"]),
                         _count(numbers_of["epochs_trained"]),
                         _count(numbers_of["epochs_full"]),
                         "n/a" if fraction is None else f"{100 * fraction:.1f} %"]
                        + [_count(numbers_of["states"][state]) for state in STATES])
        page.table(["run", "scheduler", "max epochs", "candidates", "legs",
                    "checkpoints unusable", "epochs trained", "epochs of a full search",
                    "trained / full"] + list(STATES), rows,
                   align=["left", "left"] + ["right"] * (7 + len(STATES)))
        retrained = [(n["label"], n["schedule"]["unusable_checkpoints"]) for _, n in scheduled
                     if n["schedule"]["unusable_checkpoints"]]
        if retrained:
            page.paragraph(
                "Checkpoints that could not be used: "
                + "; ".join(f"{label}: {count} leg(s)" for label, count in retrained)
                + ". Each of these legs trained its candidate again from scratch instead of "
                "resuming it, so its learning curve restarts and the scheduler's saving is lost "
                "(the journal's legs say why).")
    page.heading("Wall time")
    page.image(files["wall_time"], "total wall time, and evaluations finished against wall time",
               1200)
    page.heading("Trainable parameters")
    page.image(files["parameters"],
               "mean trainable parameters per generation or per bin of evaluations", 900)

    if pareto_info:
        page.heading("Pareto fronts")
        point = pareto_info["reference_point"]
        if point:
            page.paragraph(
                "A point is on a run's front when no other ok evaluation of the run has no more "
                "parameters and no less accuracy (and is better in one). Hypervolume: the area "
                "the front dominates up to the reference point "
                f"({point[0]:,.0f} parameters, {100 * point[1]:.3g} % accuracy), with parameters "
                "divided by the reference's and accuracy as a fraction; 1 would be a network "
                "without parameters and perfect accuracy. Larger is better.")
        rows = []
        for n in numbers:
            if "pareto" in n:
                hv = n["pareto"]["hypervolume"]
                rows.append([n["label"], _count(len(n["pareto"]["front"])),
                             "n/a" if hv is None else f"{hv:.4f}"])
        if pareto_info.get("reference_front"):
            hv = pareto_info["reference_hypervolume"]
            rows.append([pareto_info["reference_label"],
                         _count(len(pareto_info["reference_front"])),
                         "n/a" if hv is None else f"{hv:.4f}"])
        page.table(["front", "points", "hypervolume"], rows, align=["left", "right", "right"])
        for label, name in files.get("pareto", {}).items():
            page.image(name, f"Pareto front of {label}", 900)

    page.heading("Best architectures")
    for run, n in zip(runs, numbers):
        page.heading(f"Best of {run.label}", level=3)
        if not n["best"]:
            page.paragraph("No evaluation succeeded, so there is no best architecture.")
            continue
        rows = []
        for entry in n["best"]:
            links: List[Any] = []
            for kind in ("png", "dot", "json"):
                if "files" in entry:
                    links += ([", "] if links else []) + [Link(kind.upper(), entry["files"][kind])]
            architecture: Any = links or entry.get("error", "")
            if entry.get("cell"):
                architecture = Code(str(entry["cell"]))
            elif not architecture:
                architecture = Code(json.dumps(entry["genome"], default=str))
            rows.append([str(entry["rank"]), _percent(entry["accuracy"]),
                         _percent(entry["reported_accuracy"]), _count(entry["n_params"]),
                         _plain(entry["epochs"]), _plain(entry["generation"]),
                         _plain(entry["candidate"]),
                         Code((entry["descriptor_hash"] or "")[:12]), architecture])
        page.table(["rank", "accuracy (search signal)", "test accuracy (reported)",
                    "parameters", "epochs", "generation", "candidate", "key", "architecture"],
                   rows, align=["right"] * 7 + ["left", "left"])
        for entry in n["best"]:
            if "files" in entry:
                page.image(entry["files"]["png"], f"{run.label} best {entry['rank']}", 700)

    page.heading("Definitions")
    page.bullets(DEFINITIONS)
    return page
