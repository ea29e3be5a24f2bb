"""Compare search algorithms on NAS-Bench-201: many seeds, a budget of evaluations, seconds.

The runner behind ``nord compare``. Each algorithm runs once per seed through the search
engine and returns the architecture with the best search signal it evaluated (the 12-epoch
validation accuracy); the table then says how good it really is (200-epoch test accuracy)::

    from nord.comparisons.compare import run_comparison

    result = run_comparison(dataset="cifar10", algorithms=("random", "rea"), budget=100,
                            seeds=500)
    print(result.table())
    result.values("rea")            # per-seed 200-epoch test accuracy (fractions), by seed

Details (the protocol and budget, simulated time, refusals, the algorithms): docs/comparisons.md.
"""
from __future__ import annotations

import gc
import json
import logging
import math
import os
import textwrap
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from nord.benchmarks.nasbench201 import BenchmarkEvaluator, NASBench201Space
from nord.checks import check_int, check_seeds
from nord.comparisons.dataset_table import DatasetTable
from nord.comparisons.hardware import LatencyEvaluator, LatencyLimit, latency_limit
from nord.comparisons.records import JSONRecord, SeedRun
from nord.comparisons.anytime import SimulatedSetting, anytime_curves, run_simulated_seed
from nord.comparisons.fidelities import (candidates_within, protocol, run_bracketed_seed,
                                        scheduler_for)
from nord.comparisons.oneshot import (ONESHOT_PROTOCOL, OneShotRun, oneshot_curves,
                                      oneshot_summary, read_oneshot_runs)
from nord.errors import ConfigurationError
from nord.search.engine import run_search
from nord.search.executors import ProcessPool
from nord.search.algorithms.registry import ALGORITHMS, get_algorithm, make_algorithm

__all__ = ["REFERENCE_RESULTS", "DEFAULT_BUDGET", "SeedRun", "ComparisonResult", "JSONRecord",
           "evaluated_cells", "run_seed", "run_seeds", "run_comparison", "load_json"]

logger = logging.getLogger(__name__)

DEFAULT_BUDGET = 100
"""Evaluations per run of a comparison that is given no budget (and no simulated time)."""

REPEATS = ("charge", "free")
"""How a repeat of a cell a run evaluated before is charged (``nord compare --repeats``)."""

REPEAT_RULES = {
    "charge": "repeats charged: every result told costs its training time (simulated time, "
              "paid hours, BOHB's epochs), as the benchmark charges every query",
    "free": "repeats free: a cell told again is answered from the run's cache at no training "
            "time (simulated time, paid hours, BOHB's epochs); a budget of evaluations still "
            "counts it",
}
"""The table's line on the rule in force."""

DEFAULT_ALGORITHMS = ("random", "rea")
"""What a comparison compares where it is given no algorithms."""

COLUMNS = {
    "seeds": "runs over which the row is; n/m: n of the m runs returned an architecture",
    "test acc. 200 ep (%)": "the returned architecture's 200-epoch test accuracy, mean ± std",
    "search signal (%)": "its search signal, the accuracy the algorithm saw, mean ± std",
    "told": "results told to the algorithm in a run, repeats included (mean)",
    "distinct": "distinct architectures among them (mean)",
    "repeats": "results for an architecture told before in the same run (mean)",
    "paid (h)": "hours of one-GPU training the results told cost a run, by the benchmark's "
                "training times and the repeats rule above (mean)",
    "compute (s)": "seconds this machine spent on the algorithm's runs, all seeds together "
                   "(summed over worker processes)",
    "sim. time (h)": "simulated hours a run used, at most the time budget (mean)",
    "utilisation": "busy share of the simulated workers' time (mean)",
}
"""The legend under the table: what each column but the algorithm's name holds."""

UNITS = {
    "accuracies": "percent: the summary's test and search statistics, the curves, and each "
                  "run's reported_accuracy_percent and accuracy_percent",
    "utilisation": "a fraction of the simulated workers' time",
    "times": "seconds (simulated_time, wall_time, seconds, the curves' time), but paid_hours",
}
"""What the JSON of a comparison measures in, said in it."""

ONESHOT_COLUMNS = {
    "runs": "the method's runs (its seeds); n/m: n of the m runs finished, the others are "
            "drawn to their last finished epoch",
    "final table acc. (%)": "200-epoch test accuracy in the table of the cell derived after "
                            "the last finished epoch, mean ± std",
    "searched (h)": "the search's measured wall time, its epochs' seconds summed, mean ± std "
                    "(not simulated)",
    "epochs": "search epochs finished (mean)",
    "measured on": "where the seconds were measured, as the run's journal says",
}
"""The legend under the weight-sharing searches' rows."""

ONESHOT_UNITS = {
    "accuracies": "percent: the summary's final_accuracy, the curve, each run's "
                  "accuracies_percent, final_accuracy_percent and curve",
    "times": "seconds the search measured on its own machine (not simulated): each run's "
             "seconds, search_seconds and the curves' time, the summary's search_seconds",
}
"""What the JSON's one-shot section measures in, said in it."""

Progress = Callable[[str, int, int], None]
"""``progress(algorithm, seeds_done, seeds_total)``, called as seeds finish."""


REFERENCE_RESULTS: Dict[Tuple[str, str, int], Tuple[float, float]] = {
    ("cifar10", "random", 100): (93.75, 0.35),
    ("cifar10", "rea", 100): (93.98, 0.35),
    ("cifar10", "random", 500): (94.01, 0.23),
    ("cifar10", "rea", 500): (94.32, 0.14),
}
"""Published reference (mean, std over 500 seeds, % 200-epoch test accuracy) on this table,
from the benchmark issue, keyed by (data set, algorithm, budget). The NAS-Bench-201 paper
itself (500 runs, its time budget) reports REA 93.92 ± 0.30 and random search 93.70 ± 0.36."""


# --- one run ----------------------------------------------------------------------------------
def benchmark_evaluator(dataset: str) -> BenchmarkEvaluator:
    """The 12-epoch look-ups of the data set named ``dataset`` that every run of it in this
    process shares: its :class:`~nord.comparisons.dataset_table.DatasetTable`'s evaluator."""
    return DatasetTable.of(dataset).evaluator


def evaluated_cells(algorithm, evaluator, budget: int) -> List[int]:
    """Run ``algorithm`` (a fresh one over ``NASBench201Space``) through the search engine on
    ``evaluator`` (a data set's table look-ups) for ``budget`` look-ups, no journal; the table
    row of each evaluated cell, in the order told (fewer than ``budget`` when the algorithm
    finished first). The algorithm is closed."""
    cells: List[int] = []
    try:
        run_search(algorithm, evaluator, budget=budget,
                   on_result=lambda progress: cells.append(progress.outcome.key))
    finally:
        algorithm.close()
    return cells


def run_seed(algorithm: str = "rea", dataset: Union[str, DatasetTable] = "cifar10",
             budget: int = 100, seed: int = 0, limit: Optional[LatencyLimit] = None,
             params: Optional[Mapping[str, Any]] = None, repeats: str = "charge") -> SeedRun:
    """One run of the algorithm named ``algorithm`` with ``seed`` on ``dataset`` (a name or
    its :class:`~nord.comparisons.dataset_table.DatasetTable`), under a latency limit if
    given (``params``: its settings, default its own; ``repeats``: :data:`REPEATS`)."""
    table = DatasetTable.of(dataset)
    params = dict(params or {})
    if get_algorithm(algorithm).schedulers is not None:   # BOHB: Hyperband over the fidelities
        return run_bracketed_seed(algorithm, table, budget, seed, params, repeats)
    instance = make_algorithm(algorithm, NASBench201Space(), seed=seed, budget=budget, **params)
    evaluator = (table.evaluator if limit is None
                 else LatencyEvaluator(table.evaluator, limit=limit))
    return SeedRun.from_indices(seed, evaluated_cells(instance, evaluator, budget), table,
                                None if limit is None else limit.allowed(), repeats)


@contextmanager
def cycle_collector_paused():
    """Pause Python's cyclic garbage collector for the block (as it was before, after it).

    A run on the table makes a few objects per evaluation and keeps the first result of each
    architecture until it ends; none of them form reference cycles, so reference counting
    frees them all, yet the collector traverses them again and again as they age: a quarter
    of a simulated run's time (``bench/compare_speed.py --simulated``). Paused for one run at
    a time, whatever cycles an algorithm of one's own does make are collected after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run_seeds(algorithm: str, dataset: Union[str, DatasetTable], budget: int,
              seeds: Iterable[int], limit: Optional[LatencyLimit] = None,
              simulation: Optional[SimulatedSetting] = None,
              params: Optional[Mapping[str, Any]] = None,
              repeats: str = "charge") -> Tuple[List[SeedRun], float]:
    """Runs for several seeds on ``dataset`` (a name or its
    :class:`~nord.comparisons.dataset_table.DatasetTable`) in this process, the collector
    paused during each (see :func:`cycle_collector_paused`); also returns the seconds they
    took."""
    started = time.perf_counter()
    table = DatasetTable.of(dataset)
    runs = []
    for seed in seeds:
        with cycle_collector_paused():
            runs.append(run_seed(algorithm, table, budget, seed, limit, params, repeats)
                        if simulation is None
                        else run_simulated_seed(algorithm, table, seed, simulation, params,
                                                repeats=repeats))
    return runs, time.perf_counter() - started


# --- the comparison ---------------------------------------------------------------------------
def _stats(values: np.ndarray) -> Dict[str, float]:
    values = np.asarray(values, dtype=float) * 100
    values = values[~np.isnan(values)]   # runs that found no cell within a latency limit
    if values.size == 0:
        return {"mean": math.nan, "std": math.nan, "stderr": math.nan, "min": math.nan,
                "max": math.nan}
    std = float(values.std())
    return {"mean": float(values.mean()), "std": std, "stderr": std / math.sqrt(values.size),
            "min": float(values.min()), "max": float(values.max())}


@dataclass
class ComparisonResult(JSONRecord):
    """The outcome of ``run_comparison``: per algorithm, one :class:`SeedRun` per seed.

    Attributes:
        dataset: 'cifar10', 'cifar100' or 'imagenet16'.
        budget: evaluations per run, repeats included (None for simulated runs, whose
            budget is ``simulation.time_budget``).
        base_seed: seeds are ``base_seed .. base_seed + len(seeds) - 1``.
        seeds: number of seeds per algorithm.
        runs: algorithm short name -> its runs, ordered by seed.
        params: algorithm -> the settings given to it (absent: its own defaults).
        seconds: algorithm -> seconds of computation summed over the processes.
        descriptions: algorithm -> its description.
        wall_time: seconds ``run_comparison`` took.
        processes: worker processes used.
        simulation: the simulated-time setting, or None for a budget of evaluations.
        interrupted: the signal that stopped the comparison early (its runs are the seeds
            that finished), or None.
        repeats: how a repeat of a cell a run evaluated was charged (:data:`REPEATS`);
            comparisons saved before the choice existed read back as 'free'.
        oneshot: weight-sharing searches placed beside the runs in simulated time: method ->
            its runs (:mod:`~nord.comparisons.oneshot`); empty without them.
    """

    dataset: str
    budget: Optional[int]
    base_seed: int
    seeds: int
    runs: Dict[str, List[SeedRun]]
    params: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    seconds: Dict[str, float] = field(default_factory=dict)
    descriptions: Dict[str, str] = field(default_factory=dict)
    wall_time: float = math.nan
    processes: int = 1
    simulation: Optional[SimulatedSetting] = None
    limit: Optional[LatencyLimit] = None
    interrupted: Optional[str] = None
    repeats: str = "charge"
    oneshot: Dict[str, List[OneShotRun]] = field(default_factory=dict)

    @property
    def algorithms(self) -> List[str]:
        return list(self.runs)

    def values(self, algorithm: str, what: str = "reported_accuracy") -> np.ndarray:
        """One field of every run of ``algorithm``, by seed (accuracies as fractions)."""
        if algorithm not in self.runs:
            raise ConfigurationError(
                f"no algorithm {algorithm!r} in this comparison; it has "
                f"{', '.join(self.runs)}")
        return np.array([getattr(run, what) for run in self.runs[algorithm]])

    def summary(self) -> Dict[str, Dict[str, Any]]:
        """Per algorithm: the seeds run and those that returned an architecture
        ('returned': the statistics are over these), statistics (in %) of the reported
        accuracy ('test') and of the search signal ('search'), mean results told
        ('evaluations'), distinct architectures ('unique'), repeats among the results told
        ('repeats') and hours of one-GPU training charged ('paid_hours') per run, seconds of
        CPU and evaluations per second; for simulated runs also the mean simulated time
        used ('simulated_time', seconds) and worker utilisation ('utilisation', a fraction)."""
        summary = {}
        for name, runs in self.runs.items():
            evaluations = sum(run.evaluations for run in runs)
            seconds = self.seconds.get(name, math.nan)
            reported = self.values(name, "reported_accuracy")
            summary[name] = {
                "seeds": len(runs),
                "returned": int(np.count_nonzero(~np.isnan(reported.astype(float)))),
                "test": _stats(reported),
                "search": _stats(self.values(name, "accuracy")),
                "evaluations": evaluations / len(runs) if runs else math.nan,
                "unique": float(np.mean([run.unique for run in runs])) if runs else math.nan,
                "repeats": _mean([run.evaluations - run.unique if run.repeats is None
                                  else run.repeats for run in runs]),
                "paid_hours": _mean([None if run.paid is None else run.paid / 3600
                                     for run in runs]),
                "seconds": seconds,
                "evaluations_per_second": (evaluations / seconds
                                           if seconds and math.isfinite(seconds) else math.nan),
            }
            if self.simulation is not None:
                summary[name]["simulated_time"] = _mean([run.simulated_time for run in runs])
                summary[name]["utilisation"] = _mean([run.utilisation for run in runs])
        return summary

    def curves(self, points: int = 101) -> Dict[str, Dict[str, Any]]:
        """Per algorithm, its anytime curve over seeds (simulated runs only; see
        :func:`~nord.comparisons.anytime.anytime_curves`): the incumbent's test
        accuracy (%) against simulated seconds, mean and mean -/+ one standard deviation."""
        if self.simulation is None:
            return {}
        return {name: anytime_curves([run.curve or [] for run in runs],
                                     self.simulation.time_budget, points)
                for name, runs in self.runs.items()}

    def oneshot_curves(self, points: int = 101) -> Dict[str, Dict[str, Any]]:
        """Per one-shot method, its curve over its runs (see
        :func:`~nord.comparisons.oneshot.oneshot_curves`): the derived cell's table test
        accuracy (%) against seconds searched, mean and mean -/+ one standard deviation."""
        return oneshot_curves(self.oneshot, points)

    def table(self) -> str:
        """A plain-text table: per algorithm, mean ± std (%) of the returned architecture's
        200-epoch test accuracy and of its search signal, over the seeds."""
        label = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100",
                 "imagenet16": "ImageNet16-120"}.get(self.dataset, self.dataset)
        last = self.base_seed + self.seeds - 1
        seeds = f"{self.seeds} seed{'s' if self.seeds != 1 else ''} ({self.base_seed}..{last})"
        sim = self.simulation
        if sim is None:
            lines = [f"NAS-Bench-201, {label}: budget {self.budget} evaluations, {seeds}",
                     "returned architecture = best 12-epoch validation accuracy among those "
                     "evaluated; mean ± std over seeds"]
        else:
            grouped = (f", networks trained on {sim.train_workers} workers each (scaling "
                       f"efficiency {sim.scaling_efficiency:g})" if sim.train_workers > 1 else "")
            lines = [f"NAS-Bench-201, {label}: {sim.time_budget:,.0f} simulated seconds on "
                     f"{sim.workers} worker{'s' if sim.workers != 1 else ''} ({sim.mode}"
                     f"{grouped}), {seeds}",
                     f"search signal {sim.signal}{' with seed noise' if sim.noise else ''}"
                     f"{f', overhead {sim.overhead:g} s per evaluation' if sim.overhead else ''}"
                     "; returned architecture = best signal among those told; mean ± std over "
                     "seeds"]
        lines.append(REPEAT_RULES[self.repeats])
        if self.interrupted is not None:
            done = {name: len(runs) for name, runs in self.runs.items()}
            lines.append(f"interrupted by {self.interrupted}: only the seeds that finished ("
                         + ", ".join(f"{name} {count}/{self.seeds}" for name, count
                                     in done.items()) + ")")
        for name, settings in self.params.items():
            lines.append(f"{name} settings: " + ", ".join(
                f"{key}={json.dumps(value)}" for key, value in settings.items()))
        if self.limit is not None:
            lines.append(f"latency limit: cells slower than {self.limit.max_ms:g} ms on "
                         f"{self.limit.device} are failed evaluations, never returned")
        simulated_only = ("sim. time (h)", "utilisation")
        header = ("algorithm", *(column for column in COLUMNS
                                 if sim is not None or column not in simulated_only))
        rows = []
        summary = self.summary()
        for name, numbers in summary.items():
            seeds = (str(numbers["seeds"]) if numbers["returned"] == numbers["seeds"]
                     else f"{numbers['returned']}/{numbers['seeds']}")
            evaluations = numbers["evaluations"]
            row = (name, seeds,
                   f"{numbers['test']['mean']:.2f} ± {numbers['test']['std']:.2f}",
                   f"{numbers['search']['mean']:.2f} ± {numbers['search']['std']:.2f}",
                   f"{evaluations:.0f}" if float(evaluations).is_integer()
                   else f"{evaluations:.1f}", f"{numbers['unique']:.1f}",
                   f"{numbers['repeats']:.1f}", f"{numbers['paid_hours']:.2f}",
                   f"{numbers['seconds']:.2f}")
            if sim is not None:
                row += (f"{numbers['simulated_time'] / 3600:.2f}",
                        f"{numbers['utilisation'] * 100:.1f} %")
            rows.append(row)
        lines += ["", *_aligned(header, rows), "", *_legend(COLUMNS, header[1:])]
        notes = self._nothing_returned(summary) + self._bracketed()
        if sim is not None:
            notes += self._ended_early(sim.time_budget)
        return "\n".join(lines + ([""] + notes if notes else []) + self._oneshot_table())

    def _oneshot_table(self) -> List[str]:
        """The weight-sharing searches' rows, under the comparison's own (none without)."""
        if not self.oneshot:
            return []
        header = ("method", *ONESHOT_COLUMNS)
        rows = []
        for method, runs in self.oneshot.items():
            numbers = oneshot_summary(runs)
            final, searched = numbers["final_accuracy"], numbers["search_seconds"]
            rows.append((method, str(len(runs)) if numbers["finished"] == len(runs)
                         else f"{numbers['finished']}/{len(runs)}",
                         f"{final['mean']:.2f} ± {final['std']:.2f}",
                         f"{searched['mean'] / 3600:.2f} ± {searched['std'] / 3600:.2f}",
                         f"{numbers['epochs']:g}", "; ".join(numbers["devices"])))
        lines = ["", "Weight-sharing (one-shot) searches, beside the rows above:",
                 textwrap.fill(ONESHOT_PROTOCOL, 100), "",
                 *_aligned(header, rows, left=(0, len(header) - 1)), "",
                 *_legend(ONESHOT_COLUMNS, ONESHOT_COLUMNS)]
        unfinished = [run for runs in self.oneshot.values() for run in runs if not run.complete]
        if unfinished:
            lines.append("")
        lines += [f"note: {run.method} seed {run.seed} ({run.journal}) is {run.status()}: its "
                  "finished epochs are drawn" for run in unfinished]
        return lines

    def _nothing_returned(self, summary: Mapping[str, Mapping[str, Any]]) -> List[str]:
        """Notes on algorithms with seeds that returned no architecture (every evaluation
        failed: over the latency limit); the statistics leave those seeds out."""
        notes = []
        for name, numbers in summary.items():
            empty = numbers["seeds"] - numbers["returned"]
            if empty:
                why = (f"every cell it evaluated was slower than {self.limit.max_ms:g} ms on "
                       f"{self.limit.device}" if self.limit is not None
                       else "every evaluation failed")
                notes.append(f"note: {name} returned no architecture in {empty} of "
                             f"{numbers['seeds']} seed(s): {why}")
        return notes

    def _bracketed(self) -> List[str]:
        """Notes on algorithms that ran under Hyperband over the table's fidelities
        (:mod:`nord.comparisons.fidelities`): their rows follow another protocol."""
        return [f"note: {name} {self.protocol(name)}" for name in self.runs
                if _bracketed(name)]

    def protocol(self, name: str) -> str:
        """How an algorithm that needs a scheduler ran on the table (its note and JSON)."""
        return protocol(get_algorithm(name).schedulers,
                        "sync" if self.simulation is None else self.simulation.mode)

    def _ended_early(self, time_budget: float) -> List[str]:
        """Notes on algorithms whose runs stopped before the time budget: their rows do not
        stand for a full budget."""
        notes = []
        for name, runs in self.runs.items():
            early = sum(1 for run in runs if run.simulated_time is not None
                        and run.simulated_time < time_budget * (1 - 1e-9))
            if early:
                why = ("; repeats of a cell are told but cost no simulated time, so a run of "
                       "fewer than 100 new cells in 10,000 results ends where its clock stands"
                       if self.repeats == "free" else "")
                notes.append(
                    f"note: {name} stopped before the time budget in {early} of {len(runs)} "
                    "seed(s): the algorithm proposed nothing more, or almost only cells it "
                    "had evaluated (a pygmo algorithm's generations are sized from the budget"
                    f"{why}), so its row is not a full-budget result")
        return notes

    def to_dict(self) -> Dict[str, Any]:
        """Everything, JSON-ready: settings, the summary and every seed's run; for simulated
        runs also the setting ('simulation') and each algorithm's anytime curve ('curve')."""
        summary = self.summary()
        curves = self.curves()
        data = {
            "benchmark": "nasbench201", "dataset": self.dataset, "budget": self.budget,
            "seeds": self.seeds, "base_seed": self.base_seed, "processes": self.processes,
            "wall_time": self.wall_time, "interrupted": self.interrupted,
            "repeats": self.repeats,
            "max_latency": None if self.limit is None else self.limit.to_dict(),
            "protocol": ("returned architecture: best search signal (12-epoch validation "
                         "accuracy) among those evaluated, first found on ties; reported: its "
                         "200-epoch test accuracy; budget: evaluations including repeats; "
                         "std with ddof=0"),
            "units": UNITS,
            "algorithms": {
                name: {"description": self.descriptions.get(name, ""),
                       "params": self.params.get(name, {}),
                       "seconds": self.seconds.get(name),
                       "summary": summary[name],
                       **({"protocol": self.protocol(name)} if _bracketed(name) else {}),
                       **({"curve": curves[name]} if name in curves else {}),
                       "runs": [run.to_dict() for run in runs]}
                for name, runs in self.runs.items()},
        }
        if self.simulation is not None:
            data["simulation"] = self.simulation.to_dict()
        if self.oneshot:
            curves = self.oneshot_curves()
            data["oneshot"] = {
                "protocol": ONESHOT_PROTOCOL, "units": ONESHOT_UNITS,
                "methods": {method: {"summary": oneshot_summary(runs), "curve": curves[method],
                                     "runs": [run.to_dict() for run in runs]}
                            for method, runs in self.oneshot.items()}}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ComparisonResult":
        try:
            algorithms = data["algorithms"]
            simulation = data.get("simulation")
            return cls(dataset=data["dataset"],
                       budget=None if data["budget"] is None else int(data["budget"]),
                       base_seed=int(data["base_seed"]), seeds=int(data["seeds"]),
                       runs={name: [SeedRun.from_dict(run) for run in entry["runs"]]
                             for name, entry in algorithms.items()},
                       params={name: dict(entry["params"]) for name, entry in algorithms.items()
                               if entry.get("params")},
                       seconds={name: _number(entry.get("seconds"))
                                for name, entry in algorithms.items()},
                       descriptions={name: entry.get("description", "")
                                     for name, entry in algorithms.items()},
                       wall_time=_number(data.get("wall_time")),
                       processes=int(data.get("processes", 1)),
                       repeats=data.get("repeats", "free"),
                       simulation=None if simulation is None else SimulatedSetting(**simulation),
                       oneshot={method: [OneShotRun.from_dict(run) for run in entry["runs"]]
                                for method, entry in
                                (data.get("oneshot") or {}).get("methods", {}).items()},
                       limit=LatencyLimit(data["max_latency"]["device"],
                                          data["max_latency"]["max_latency_ms"])
                       if data.get("max_latency") else None)
        except (KeyError, TypeError, ValueError) as error:
            raise ConfigurationError(
                f"not a comparison written by ComparisonResult.to_json: {error!r}") from error

    @classmethod
    def from_json(cls, text: str) -> "ComparisonResult":
        try:
            data = json.loads(text)
        except ValueError as error:
            raise ConfigurationError(f"not a comparison saved by save_json: {error}") from error
        return cls.from_dict(data)


def load_json(path: Union[str, os.PathLike]) -> ComparisonResult:
    """A comparison saved with ``save_json``."""
    return ComparisonResult.from_json(Path(path).read_text(encoding="utf-8"))


def _aligned(header: Sequence[str], rows: Sequence[Sequence[str]],
             left: Sequence[int] = (0,)) -> List[str]:
    """A plain-text table: the header, a rule and the rows, each column as wide as its widest
    cell, those of ``left`` flush left and the others (figures) flush right."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row):
        return "  ".join(cell.ljust(width) if i in left else cell.rjust(width)
                         for i, (cell, width) in enumerate(zip(row, widths))).rstrip()
    return [line(header), line(tuple("-" * width for width in widths)), *map(line, rows)]


def _legend(meanings: Mapping[str, str], columns: Sequence[str]) -> List[str]:
    """What each of ``columns`` holds, under a table."""
    width = max(len(column) for column in columns)
    return ["columns:", *(f"  {column:{width}s}  {meanings[column]}" for column in columns)]


def _bracketed(name: str) -> bool:
    """Whether the algorithm ``name`` ran under :mod:`nord.comparisons.fidelities`."""
    try:
        return get_algorithm(name).schedulers is not None
    except ConfigurationError:   # a comparison read back, its plug-in not loaded
        return False


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def _mean(values: Sequence[Optional[float]]) -> float:
    values = [value for value in values if value is not None]
    return float(np.mean(values)) if values else math.nan


def _settings_by_name(params: Optional[Mapping[str, Mapping[str, Any]]], names: List[str],
                      canonical: List[str]) -> Dict[str, Dict[str, Any]]:
    """``params`` keyed by the names the comparison lists (a key may be any alias of one).

    Raises:
        ConfigurationError: ``params`` not a mapping of mappings, or a key naming no algorithm
            of the comparison.
    """
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise ConfigurationError(
            f"--params (params=) maps each algorithm to its settings, e.g. "
            f"'{{\"rea\": {{\"population_size\": 20}}}}'; got {params!r}")
    settings: Dict[str, Dict[str, Any]] = {}
    for key, value in params.items():
        try:
            index = canonical.index(ALGORITHMS.canonical(key))
        except (ConfigurationError, ValueError):
            raise ConfigurationError(
                f"--params (params=) has settings for {key!r}, which is not compared here "
                f"(--algorithms {','.join(names)}); key each algorithm's settings by one of "
                "those names") from None
        if not isinstance(value, Mapping):
            raise ConfigurationError(
                f"--params (params=): the settings of {key!r} must be a JSON object of its "
                f"keyword arguments, e.g. {{\"population_size\": 20}}; got {value!r}")
        if value:
            settings[names[index]] = dict(value)
    return settings


def _run_chunk(job: Tuple[str, DatasetTable, Optional[int], List[int], Optional[LatencyLimit],
                          Optional[SimulatedSetting], Dict[str, Any], str]
               ) -> Tuple[str, List[SeedRun], float]:
    """One worker's share: several seeds of one algorithm, and the seconds they took."""
    algorithm, table, budget, seeds, limit, simulation, params, repeats = job
    runs, seconds = run_seeds(algorithm, table, budget, seeds, limit, simulation, params,
                              repeats)
    return algorithm, runs, seconds


CHUNK_SEEDS = 25
"""The most seeds in one job: progress is said, and an interrupted comparison keeps its
finished seeds, at least that often."""
CHUNK_RESULTS = 60_000
"""The most results (told to an algorithm) in one job, about: a second or so of work. Seeds
of long runs (a large budget, thousands of simulated workers) go fewer to a job, down to one,
so that progress still comes as each of them finishes."""


def chunks(seeds: Sequence[int], processes: int,
           results_per_seed: Optional[float] = None) -> List[List[int]]:
    """Seeds split into jobs: about four jobs per process (so that the workers finish
    together), of at most CHUNK_SEEDS seeds and, when ``results_per_seed`` is known, about
    CHUNK_RESULTS results."""
    most = CHUNK_SEEDS
    if results_per_seed:
        most = min(most, int(CHUNK_RESULTS // results_per_seed))
    size = max(1, min(most, math.ceil(len(seeds) / (4 * processes))))
    return [list(seeds[start:start + size]) for start in range(0, len(seeds), size)]


def run_comparison(dataset: str = "cifar10",
                   algorithms: Union[str, Sequence[str]] = DEFAULT_ALGORITHMS,
                   budget: Optional[int] = None, seeds: int = 10, base_seed: int = 0,
                   processes: Optional[int] = 1, progress: Optional[Progress] = None,
                   max_latency_ms: Optional[float] = None,
                   latency_device: Optional[str] = None,
                   simulation: Optional[SimulatedSetting] = None,
                   params: Optional[Mapping[str, Mapping[str, Any]]] = None,
                   repeats: str = "charge",
                   oneshot: Optional[Sequence[Union[str, os.PathLike]]] = None
                   ) -> ComparisonResult:
    """Run each algorithm for ``seeds`` seeds at ``budget`` evaluations on NAS-Bench-201,
    or, with ``simulation``, for a budget of simulated time on simulated workers.

    Args:
        dataset: 'cifar10', 'cifar100' or 'imagenet16' (ImageNet16-120).
        algorithms: names of registered algorithms (any name or alias), or one
            comma-separated string such as ``'random,rea'``; the table uses the names given.
        budget: evaluations per run, repeats of an architecture included (default
            :data:`DEFAULT_BUDGET`); not with ``simulation``, whose budget is its time budget.
        seeds: runs per algorithm; run ``i`` uses seed ``base_seed + i``.
        base_seed: the first seed (>= 0).
        processes: worker processes over seeds (None: one per CPU). Results do not depend
            on it.
        progress: ``progress(algorithm, seeds_done, seeds_total)`` after each batch of seeds
            (in this process).
        max_latency_ms: a latency limit on ``latency_device`` (see the module docstring).
        latency_device: the device of the limit (:data:`nord.benchmarks.DEVICES`).
        simulation: a :class:`~nord.comparisons.anytime.SimulatedSetting` (the result's
            budget is then None). Not with a budget of evaluations or a latency limit.
        params: algorithm (a name in ``algorithms``, or any of its aliases) -> its settings,
            e.g. ``{"rea": {"population_size": 20}}``; the others run with their own.
        repeats: 'charge' (every result told costs its training time, repeats of a cell
            included, as the benchmark charges every query) or 'free' (a repeat is answered
            from the run's cache at no training time; a budget of evaluations still counts
            it). See :data:`REPEAT_RULES` and docs/comparisons.md.
        oneshot: journals of weight-sharing searches on ``dataset`` (several runs of one
            method: its seeds) whose curves, the derived cell's table accuracy against the
            seconds each searched, go beside the anytime curves; with ``simulation`` only (a
            budget of evaluations has no time axis). Read before any run; see
            :mod:`~nord.comparisons.oneshot`.

    Returns:
        A :class:`ComparisonResult`; ``.table()`` prints it, ``.save_json(path)`` saves it.

    Raises:
        ConfigurationError: an unknown algorithm (the message lists the valid ones), a
            repeated one; settings of an algorithm not compared, or that it does not take;
            a budget, seed count, base seed, process count or simulated setting
            out of range; a budget or a latency limit with simulated time; a latency device
            without a limit; ``oneshot`` without simulated time, or a journal it refuses
            (:func:`~nord.comparisons.oneshot.read_oneshot_runs`).
        BenchmarkError: an unknown data set.
        MissingDependencyError: a pygmo algorithm without pygmo installed.
    """
    table = DatasetTable.of(dataset)
    if isinstance(algorithms, str):
        algorithms = [name for name in algorithms.split(",") if name.strip()]
    names = [name.strip() for name in algorithms]
    if not names:
        raise ConfigurationError("give at least one algorithm to compare (--algorithms, "
                                 "algorithms=), e.g. random,rea or ('random', 'rea')")
    canonical = [ALGORITHMS.canonical(name) for name in names]
    if len(set(canonical)) != len(canonical):
        raise ConfigurationError(
            f"an algorithm is listed twice in --algorithms (algorithms=): {names}")
    settings = _settings_by_name(params, names, canonical)
    if repeats not in REPEATS:
        raise ConfigurationError(
            f"--repeats (repeats=) must be one of {', '.join(REPEATS)} (charge: every result "
            f"told costs its training time, as the benchmark charges every query; free: a "
            f"repeat of a cell costs nothing); got {repeats!r}")
    if simulation is not None:
        if budget is not None:
            raise ConfigurationError(
                f"--budget {budget} counts evaluations, but with --workers (simulation=) each "
                "run's budget is simulated seconds; give --time-budget S (time_budget=) instead "
                "(default: the data set's NATS-Bench budget), or leave --workers out, or "
                "--budget (budget=)")
        if max_latency_ms is not None:
            raise ConfigurationError(
                "a latency limit (max_latency_ms=) and simulated time (simulation=) do not go "
                "together yet: drop --max-latency-ms or --workers")
        simulation.check(table)
    else:
        if oneshot is not None:
            raise ConfigurationError(
                "--oneshot (oneshot=) draws a weight-sharing search's accuracy against the "
                "seconds it searched, beside the anytime curves of runs in simulated time; a "
                "budget of evaluations has no time axis: add --workers N (simulation=), or "
                "leave --oneshot out")
        budget = check_int(DEFAULT_BUDGET if budget is None else budget, "--budget", 1,
                           rule="an integer >= 1 (budget=, evaluations per run)")
    seeds, base_seed = check_seeds(seeds, base_seed)
    if processes is None:
        processes = os.cpu_count() or 1
    processes = min(check_int(processes, "processes", 1), seeds * len(names))
    limit = latency_limit(max_latency_ms, latency_device, table)
    for name in names:
        schedulers = get_algorithm(name).schedulers
        if schedulers is None:
            continue
        if limit is not None:
            raise ConfigurationError(
                f"{name} runs on the table under a scheduler over its two fidelities; a latency "
                "limit (--max-latency-ms, max_latency_ms=) is not supported for it: leave it "
                f"out, or {name} out of --algorithms")
        if simulation is None and "hyperband" not in schedulers:
            raise ConfigurationError(
                f"{name} runs only under the {' or '.join(schedulers)} scheduler, "
                "asynchronously, but a budget of evaluations (--budget, budget=) runs the "
                "table's fidelities "
                f"synchronously; compare {name} in simulated time: --workers N --mode async "
                "(simulation=SimulatedSetting(..., mode='async'))")
        scheduler_for(name, schedulers, "sync" if simulation is None else simulation.mode)
        if simulation is not None:
            if (simulation.signal, simulation.noise) != ("valid12", None):
                raise ConfigurationError(
                    f"in simulated time, {name} runs over the table's 12- and 200-epoch "
                    "validation accuracies, the 12-epoch one as its search signal; got "
                    f"--signal {simulation.signal} (signal={simulation.signal!r})"
                    f"{'' if simulation.noise is None else f', --noise {simulation.noise} (noise={simulation.noise!r})'}. "
                    f"Leave --signal and --noise out, or leave {name} out of --algorithms")
            continue
        if candidates_within(budget) == 0:
            raise ConfigurationError(
                f"--budget {budget} (budget=) counts 12-epoch evaluations: {12 * budget} "
                f"epochs, fewer than the 200 that one candidate trained to the table's "
                f"highest fidelity costs, so {name} could evaluate nothing; give --budget 17 "
                "or more")
    searches = {} if oneshot is None else read_oneshot_runs(oneshot, table)
    # fail now, in this process, on anything an algorithm's construction rejects (pygmo
    # missing, a bad setting) rather than in every worker
    for name in names:
        try:
            make_algorithm(name, NASBench201Space(), seed=base_seed,
                           budget=budget or DEFAULT_BUDGET, **settings.get(name, {})).close()
        except ConfigurationError as error:
            if name not in settings:
                raise
            raise ConfigurationError(f"--params (params=) for {name}: {error}") from None
    # read the table before any fork (a latency limit has read the costs file to check it)
    table.evaluator.evaluate_genome((0,) * 6)

    seed_list = list(range(base_seed, base_seed + seeds))
    jobs = [(name, table, budget, chunk, limit, simulation, settings.get(name, {}), repeats)
            for name in names
            for chunk in chunks(seed_list, processes, budget if simulation is None
                                else simulation.results_per_run(table))]
    runs: Dict[str, List[SeedRun]] = {name: [] for name in names}
    seconds = {name: 0.0 for name in names}
    started = time.perf_counter()

    def collect(name: str, chunk_runs: List[SeedRun], chunk_seconds: float) -> None:
        runs[name].extend(chunk_runs)
        seconds[name] += chunk_seconds
        if progress is not None:
            progress(name, len(runs[name]), seeds)

    interrupted = None
    try:
        for outcome in ProcessPool(processes).map(_run_chunk, jobs):
            collect(*outcome)
    except KeyboardInterrupt as stop:   # RunInterrupted too: keep the seeds that finished
        if not any(runs.values()):
            raise
        interrupted = getattr(stop, "signal_name", "SIGINT")
        logger.info("comparison interrupted by %s; %d seeds finished", interrupted,
                    sum(map(len, runs.values())))
    for name in names:
        runs[name].sort(key=lambda run: run.seed)
    wall_time = time.perf_counter() - started
    logger.info("compared %s on %s: %d seeds x %s in %.1f s", ", ".join(names), table.name, seeds,
                f"{budget} evaluations" if simulation is None
                else f"{simulation.time_budget:g} simulated seconds", wall_time)
    return ComparisonResult(dataset=table.name, budget=budget, base_seed=base_seed, seeds=seeds,
                            runs=runs, params=settings, seconds=seconds,
                            descriptions={n: ALGORITHMS.entry(n).description for n in names},
                            wall_time=wall_time, processes=processes, simulation=simulation,
                            limit=limit, interrupted=interrupted, repeats=repeats,
                            oneshot=searches)
