"""Runs read from their journals, with the numbers a report shows about each.

    from nord.report.runs import load_runs, run_numbers

    runs = load_runs(["runs/ga.db", "runs/random.db"])   # or a folder of journals
    for run in runs:
        print(run.label, run_numbers(run)["best_accuracy"])

Everything here comes from the journal's read API (:class:`nord.journal.Journal`), with the
figures of each generation computed here (:func:`generation_stats`).
Details (the definitions used throughout the report): docs/report.md.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from nord.errors import ConfigurationError, JournalError
from nord.journal import Journal, list_runs
from nord.report.protocol import Protocol, protocol_of

__all__ = ["measured_on", "RunData", "load_run", "load_runs", "run_numbers", "is_multi_objective",
           "accuracies_by_generation", "generation_stats", "journal_paths", "slug"]

logger = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]
SAID = ("stopped_by", "diagnostics")
"""The keys of a result's metrics by which a stopping rule or a training callback speaks."""
_READ_ATTEMPTS = 5


@dataclass
class RunData:
    """What a report needs from one journal, read once.

    Attributes:
        path: the journal file.
        label: the run's name in plots and tables (unique within a report).
        metadata: ``Journal.metadata()``.
        summary: ``Journal.summary()`` (counts, best accuracy, total wall time).
        evaluations: ``Journal.evaluations()``, in the order told.
        generations: :func:`generation_stats`, one dict per generation.
        best: ``Journal.best(count)``: the best distinct architectures, best first (at
            least the best one, when any evaluation succeeded).
        epochs: ``Journal.epochs()``: the learning curves (empty when none were recorded).
        legs: ``Journal.legs()``: the legs of training under a scheduler (empty without one).
        series: ``Journal.series()`` of the ``best`` candidates: their callbacks' per-step
            series (empty without any).
        said: ``Journal.trainings(mentioning=SAID)``: every result of training (under a
            scheduler, every leg's) that a stopping rule ended or a callback raised in.
        search_epochs: ``Journal.search_epochs()``: a weight-sharing search's epochs (empty
            for other runs).
    """

    path: Path
    label: str
    metadata: Dict[str, Any]
    summary: Dict[str, Any]
    evaluations: List[Dict[str, Any]]
    generations: List[Dict[str, Any]]
    best: List[Dict[str, Any]] = field(default_factory=list)
    epochs: List[Dict[str, Any]] = field(default_factory=list)
    legs: List[Dict[str, Any]] = field(default_factory=list)
    series: List[Dict[str, Any]] = field(default_factory=list)
    said: List[Dict[str, Any]] = field(default_factory=list)
    search_epochs: List[Dict[str, Any]] = field(default_factory=list)

    @property
    def protocol(self) -> Protocol:
        """What the accuracies measure, and whether selection used test data."""
        return protocol_of(self.metadata, self.evaluations)

    @property
    def scheduled(self) -> bool:
        """Whether a scheduler trained the candidates in legs."""
        return bool(self.legs or self.metadata.get("scheduler"))

    @property
    def slug(self) -> str:
        """The label as a file-name fragment."""
        return slug(self.label)

    @property
    def status(self) -> str:
        """The run's state: its journaled status, or 'killed' when it was left 'running' by
        a writer that is gone (see ``Journal.state``)."""
        return str(self.summary.get("state") or self.metadata.get("status", "unknown"))

    @property
    def ok_evaluations(self) -> List[Dict[str, Any]]:
        """Evaluations with status 'ok' and a finite accuracy."""
        return [row for row in self.evaluations if _is_ok(row)]


def slug(text: str) -> str:
    """``text`` reduced to letters, digits, '.', '_' and '-' (for file names)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-.")
    return cleaned or "run"


def _is_ok(row: Mapping[str, Any]) -> bool:
    accuracy = row.get("accuracy")
    return (row.get("status") == "ok" and accuracy is not None
            and math.isfinite(float(accuracy)))


def journal_paths(paths: Union[PathLike, Iterable[PathLike]],
                  skipped: Optional[List[Tuple[Path, str]]] = None,
                  once: bool = True) -> List[Path]:
    """The journal files named by ``paths``: files as given, folders expanded to the
    journals (``*.db``) they and their sub-folders hold, oldest run first.

    Args:
        paths: files or folders.
        skipped: a list that receives ``(path, reason)`` for each file of a folder that is
            not a readable journal (it is left out; a file named on its own is not skipped)
            and for each repeat of a journal left out.
        once: a journal named twice (also through a folder or another spelling of its
            path) is kept once, where it first appears, so that no run is drawn twice.

    Raises:
        ConfigurationError: nothing given, or a folder that holds no journal.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    result: List[Path] = []
    for path in paths:
        path = Path(path)
        if path.is_dir():
            runs, unreadable = list_runs(path)
            if skipped is not None:
                skipped.extend(unreadable)
            found = [Path(run["path"]) for run in runs]
            if not found:
                raise ConfigurationError(
                    f"'{path}' is a folder without run journals (*.db files written by a "
                    "search); give journal files, or the folder a search wrote them to")
            result.extend(found)
        else:
            result.append(path)
    if not result:
        raise ConfigurationError("a report needs at least one run journal; none was given")
    if not once:
        return result
    unique: List[Path] = []
    first: Dict[str, Path] = {}
    for path in result:
        same = first.setdefault(os.path.realpath(path), path)
        if same is path:
            unique.append(path)
        elif skipped is not None:
            skipped.append((path, f"the same journal as {same}, which is reported once"))
    return unique


def generation_stats(journal: Journal) -> List[Dict[str, Any]]:
    """Per-generation figures of a journal's run, for plots: one dict per generation, in order.

    Keys: ``generation``, ``evaluations``, ``ok``, ``failed``, ``cached``,
    ``accuracy_mean``, ``accuracy_median``, ``accuracy_std``, ``accuracy_min``,
    ``accuracy_max`` (over ok evaluations; NaN when none), ``best_so_far`` (best accuracy
    up to and including this generation), ``n_params_mean``, ``train_time_sum``,
    ``started``, ``ended`` and ``wall_time`` (first start to last end).
    """
    by_generation: Dict[int, List[Dict[str, Any]]] = {}
    for row in journal.evaluations():
        by_generation.setdefault(row["generation"], []).append(row)
    stats, best = [], math.nan
    for generation in sorted(by_generation):
        rows = by_generation[generation]
        good = [row for row in rows if row["status"] == "ok" and math.isfinite(row["accuracy"])]
        accuracies = [row["accuracy"] for row in good]
        if accuracies:
            best = max(accuracies) if math.isnan(best) else max(best, max(accuracies))
        starts = [row["started"] for row in rows if row["started"] is not None]
        ends = [row["ended"] for row in rows if row["ended"] is not None]
        stats.append({
            "generation": generation,
            "evaluations": len(rows),
            "ok": len(good),
            "failed": sum(row["status"] != "ok" for row in rows),
            "cached": sum(row["cached"] for row in rows),
            "accuracy_mean": statistics.fmean(accuracies) if accuracies else math.nan,
            "accuracy_median": statistics.median(accuracies) if accuracies else math.nan,
            "accuracy_std": statistics.pstdev(accuracies) if accuracies else math.nan,
            "accuracy_min": min(accuracies, default=math.nan),
            "accuracy_max": max(accuracies, default=math.nan),
            "best_so_far": best,
            "n_params_mean": (statistics.fmean(row["n_params"] for row in good)
                              if good else math.nan),
            "train_time_sum": sum(row["train_time"] for row in rows
                                  if not row["cached"] and math.isfinite(row["train_time"])),
            "started": min(starts, default=None),
            "ended": max(ends, default=None),
            "wall_time": (max(ends) - min(starts)) if starts and ends else math.nan,
        })
    return stats


def load_run(path: PathLike, label: Optional[str] = None, best_count: int = 3) -> RunData:
    """Read one journal.

    Args:
        path: the journal file (it may belong to a run that is still going).
        label: the run's name in the report; default the file name without extension.
        best_count: how many of the best distinct architectures to keep (at least 1 is
            read, for the run's numbers).

    Raises:
        JournalError: the file is missing or is not a journal.
    """
    path = Path(path)
    with Journal(path) as journal:
        # A run that is still going may add evaluations between these reads; read again
        # until they agree, so the tables and the plots show the same evaluations.
        for attempt in range(_READ_ATTEMPTS):
            metadata = journal.metadata()
            summary = journal.summary()
            evaluations = journal.evaluations()
            generations = generation_stats(journal)
            best = journal.best(count=max(1, int(best_count)))
            epochs, legs = journal.epochs(), journal.legs()
            series = [row for entry in best for row in journal.series(entry["candidate"])]
            said = journal.trainings(mentioning=SAID)
            search_epochs = journal.search_epochs()
            counts = {len(evaluations), int(summary.get("evaluations") or 0),
                      sum(g["evaluations"] for g in generations), journal.count()}
            if len(counts) == 1:
                break
            logger.debug("%s changed while it was read (attempt %d)", path, attempt + 1)
    return RunData(path=path, label=label or path.stem, metadata=metadata, summary=summary,
                   evaluations=evaluations, generations=generations, best=list(best),
                   epochs=epochs, legs=legs, series=series, said=said,
                   search_epochs=search_epochs)


def load_runs(paths: Union[PathLike, Iterable[PathLike]],
              labels: Optional[Sequence[str]] = None, best_count: int = 3,
              skipped: Optional[List[Tuple[Path, str]]] = None) -> List[RunData]:
    """Read several journals (folders are expanded, see :func:`journal_paths`, which also
    says what ``skipped`` receives).

    Labels default to the file names, and a journal named twice is then read once; with
    ``labels``, one per journal, every journal is read as named (a label each). A label
    already taken (also one that differs only in characters that file names drop) gets a
    suffix (``ga``, ``ga-2``), so every run has its own label and its own files.

    Raises:
        ConfigurationError: ``labels`` does not have one label per journal.
        JournalError: a file is missing or is not a journal.
    """
    if not isinstance(paths, (str, os.PathLike)):
        paths = list(paths)   # read twice: for the files, and for those named on their own
    files = journal_paths(paths, skipped, once=labels is None)
    if labels is not None and len(labels) != len(files):
        raise ConfigurationError(
            f"labels must name every run: {len(files)} journals but {len(labels)} labels "
            f"({list(labels)})")
    given = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    named = {os.path.realpath(path) for path in given if not Path(path).is_dir()}
    runs: List[RunData] = []
    taken: set = set()   # file-name forms of the labels, which must differ too
    for index, path in enumerate(files):
        base = str(labels[index]) if labels is not None else path.stem
        label, number = base, 1
        while slug(label) in taken:
            number += 1
            label = f"{base}-{number}"
        try:
            run = load_run(path, label=label, best_count=best_count)
        except JournalError as error:
            if skipped is None or os.path.realpath(path) in named:
                raise
            skipped.append((path, str(error)))   # found in a folder: left out, with a note
            continue
        taken.add(slug(label))
        runs.append(run)
    if not runs:
        raise ConfigurationError(
            "none of the journals found could be read (each is named with its reason); give "
            "readable run journals")
    return runs


def measured_on(run: RunData) -> str:
    """What a run's figures measure, in words: its data set, and whether its networks were
    trained by the run, looked up in a benchmark's table or scored untrained by a proxy."""
    meta = run.metadata
    dataset = (meta.get("dataset") or {}).get("name") or "no data set"
    evaluator = (meta.get("evaluator") or {}).get("evaluator") or ""
    if evaluator == "ProxyTableEvaluator":
        how = "scored untrained by a zero-cost proxy, from nord's NAS-Bench-201 table"
    elif evaluator == "ZeroCostEvaluator":
        how = "scored untrained by a zero-cost proxy"
    elif "Benchmark" in evaluator:
        how = "NAS-Bench-201's table"
    else:
        how = "trained by the run"
    return f"{dataset}, {how}"


def is_multi_objective(metadata: Mapping[str, Any]) -> bool:
    """Whether a run searched more than one objective (accuracy and parameters).

    True when ``objectives`` is 2 or more in the run's algorithm parameters, its ``extra``
    metadata, or the metadata itself (as written by ``PygmoAlgorithm(objectives=2)``).
    """
    places = [metadata, metadata.get("parameters") or {}, metadata.get("extra") or {}]
    for place in places:
        if not isinstance(place, Mapping):
            continue
        value = place.get("objectives")
        try:
            if value is not None and int(value) >= 2:
                return True
        except (TypeError, ValueError):
            continue
    return False


def accuracies_by_generation(evaluations: Iterable[Mapping[str, Any]]) -> Dict[int, List[float]]:
    """Generation -> accuracies (fractions) of its ok evaluations, every generation present
    in ``evaluations`` included (an empty list when none of its evaluations succeeded)."""
    result: Dict[int, List[float]] = {}
    for row in evaluations:
        values = result.setdefault(int(row["generation"]), [])
        if _is_ok(row):
            values.append(float(row["accuracy"]))
    return dict(sorted(result.items()))


def _finite(value: Any) -> Optional[float]:
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def dataset_name(metadata: Mapping[str, Any]) -> Optional[str]:
    """The data set's name: from the run's ``dataset``, else its evaluator's or ``extra``."""
    for place in (metadata.get("dataset"), metadata.get("evaluator"), metadata.get("extra")):
        if isinstance(place, Mapping):
            for key in ("name", "dataset"):
                value = place.get(key)
                if isinstance(value, str) and value:
                    return value
        elif isinstance(place, str) and place:
            return place
    return None


def algorithm_name(metadata: Mapping[str, Any]) -> str:
    """The algorithm's name, with the wrapped optimiser for adapters (``pygmo (nsga2)``)."""
    name = str(metadata.get("algorithm", "?"))
    parameters = metadata.get("parameters") or {}
    inner = parameters.get("pygmo_algorithm") if isinstance(parameters, Mapping) else None
    return f"{name} ({inner})" if inner else name


def algorithm_parameters(metadata: Mapping[str, Any]) -> Dict[str, Any]:
    """The algorithm's parameters without the entries shown elsewhere (name and seed)."""
    parameters = metadata.get("parameters") or {}
    if not isinstance(parameters, Mapping):
        return {"parameters": parameters}
    return {key: value for key, value in sorted(parameters.items())
            if key not in ("algorithm", "seed")}


def architecture_key(row: Mapping[str, Any]) -> Optional[str]:
    """The architecture's identity in the run's space (``key``; older journals: the
    descriptor's hash), as text."""
    key = row.get("key", row.get("descriptor_hash"))
    return None if key is None else str(key)


def best_entry(row: Mapping[str, Any], rank: int) -> Dict[str, Any]:
    """One of the best architectures, as stored in ``summary.json``. ``cell`` is the
    benchmark's cell string when the evaluator gave one (tabular benchmarks build no
    descriptor)."""
    metrics = row.get("metrics") if isinstance(row.get("metrics"), Mapping) else {}
    return {
        "rank": rank,
        "accuracy": _finite(row.get("accuracy")),
        "reported_accuracy": _finite(row.get("reported_accuracy")),
        "n_params": row.get("n_params"),
        "generation": row.get("generation"),
        "candidate": row.get("candidate"),
        "sequence": row.get("sequence"),
        "descriptor_hash": architecture_key(row),
        "epochs": row.get("epochs"),
        "genome": row.get("genome"),
        "cell": metrics.get("cell"),
    }


def run_numbers(run: RunData) -> Dict[str, Any]:
    """The numbers a report shows about one run (also written to ``summary.json``).

    Keys: ``label``, ``path``, ``algorithm`` (the journal's name), ``algorithm_label``,
    ``parameters``, ``seed``, ``dataset``, ``ranks``, ``groups``, ``workers``, ``mode``,
    ``batch_size``, ``budget``, ``status``, ``resumed``, ``multi_objective``,
    ``evaluations``, ``ok``, ``failed``, ``cached``, ``generations`` (how many),
    ``best_accuracy``, ``best_reported_accuracy``, ``best_n_params``, ``best_generation``,
    ``best_candidate``, ``best_hash``, ``best_epochs``, ``protocol`` (what ``accuracy`` and
    ``reported_accuracy`` measure and whether selection used test data:
    :meth:`nord.report.protocol.Protocol.to_json`), ``stopped_by_rules`` and ``diagnosed``
    (candidates a stopping rule ended, or a training callback raised in, in any of their
    legs) with ``stopped_legs`` and ``diagnosed_legs`` (the legs of training under a
    scheduler that said so; 0 without one), ``wall_time``, ``evaluation_time`` and
    ``per_generation`` (one dict per generation: ``generation``, ``evaluations``, ``ok``,
    ``failed``, ``cached``, ``accuracy_mean``, ``accuracy_median``, ``accuracy_min``,
    ``accuracy_max``, ``accuracy_std``, ``best_so_far``, ``n_params_mean``, ``wall_time``).
    Accuracies are fractions; times are seconds; a missing value is None.
    """
    meta, summary = run.metadata, run.summary
    best = run.best[0] if run.best else None
    evaluation_time = sum(
        (_finite(row.get("train_time")) or 0.0) + (_finite(row.get("eval_time")) or 0.0)
        for row in run.evaluations if not row.get("cached"))
    per_generation = []
    for stats in run.generations:
        per_generation.append({
            "generation": stats["generation"],
            "evaluations": stats["evaluations"], "ok": stats["ok"], "failed": stats["failed"],
            "cached": stats["cached"],
            **{key: _finite(stats.get(key)) for key in (
                "accuracy_mean", "accuracy_median", "accuracy_min", "accuracy_max",
                "accuracy_std", "best_so_far", "n_params_mean", "wall_time")},
        })
    return {
        "label": run.label,
        "path": str(run.path),
        "algorithm": meta.get("algorithm"),
        "algorithm_label": algorithm_name(meta),
        "parameters": algorithm_parameters(meta),
        "seed": meta.get("seed"),
        "dataset": dataset_name(meta),
        "ranks": meta.get("ranks"),
        "groups": meta.get("groups"),
        "workers": meta.get("workers"),
        "mode": meta.get("mode"),
        "batch_size": meta.get("batch_size"),
        "budget": meta.get("budget"),
        "status": run.status,
        "protocol": run.protocol.to_json(),
        "resumed": meta.get("resumed", 0),
        "multi_objective": is_multi_objective(meta),
        "evaluations": int(summary.get("evaluations") or 0),
        "ok": int(summary.get("ok") or 0),
        "failed": int(summary.get("failed") or 0),
        "cached": int(summary.get("cached") or 0),
        "generations": len(run.generations),
        "best_accuracy": _finite(best["accuracy"]) if best else None,
        "best_reported_accuracy": _finite(best.get("reported_accuracy")) if best else None,
        "best_n_params": best.get("n_params") if best else None,
        "best_generation": best.get("generation") if best else None,
        "best_candidate": best.get("candidate") if best else None,
        "best_hash": architecture_key(best) if best else None,
        "best_epochs": best.get("epochs") if best else None,
        **{key: int(summary.get(key) or 0) for key in (
            "stopped_by_rules", "stopped_legs", "diagnosed", "diagnosed_legs")},
        "wall_time": _finite(summary.get("wall_time")),
        "evaluation_time": evaluation_time,
        "per_generation": per_generation,
    }


def json_ready(value: Any) -> Any:
    """``value`` with NaN and infinities as None and tuples as lists (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(key): json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return json_ready(value.item())
    return value


def dumps(value: Any) -> str:
    """Strict JSON text (no NaN) of ``value``, indented for people."""
    return json.dumps(json_ready(value), indent=2, sort_keys=False, allow_nan=False, default=str)
