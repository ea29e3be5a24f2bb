"""Multi-objective search on NAS-Bench-201: accuracy against parameters or latency.

The exact Pareto front of the table, and pygmo's ``nsga2`` searching for it over many seeds::

    from nord.comparisons.multiobjective import exact_front, run_nsga2, write_nsga2_report

    front = exact_front("cifar10")          # 14 cells; front.hypervolume == 0.89318...
    result = run_nsga2("cifar10", budget=500, seeds=10)   # each seed a run of the search engine
    print(result.table())                   # hypervolume mean ± std, and the exact front's
    result.runs[0].points                   # (n_params, accuracy) of seed 0's front
    write_nsga2_report("report/nsga2", "cifar10", budget=500, seed=0)   # journal + page + PNG
    run_nsga2("cifar10", objectives="accuracy,latency:pixel3", max_latency_ms=20)

Details (objectives, the hypervolume's definition, the exact front): docs/comparisons.md.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from nord.benchmarks.nasbench201 import BenchmarkEvaluator, NASBench201Space, get_dataset, load_table
from nord.checks import check_int, check_seeds
from nord.comparisons.compare import benchmark_evaluator, chunks, evaluated_cells
from nord.comparisons.dataset_table import DatasetTable
from nord.comparisons.hardware import (LatencyEvaluator, LatencyLimit, Objective, latency_limit,
                                      parse_objectives)
from nord.comparisons.records import FrontRun, JSONRecord
from nord.errors import ConfigurationError
from nord.journal import Journal
from nord.report import write_report
from nord.report.fronts import plot_front_against_exact
from nord.report.pareto import hypervolume, pareto_indices
from nord.search.algorithms.registry import make_algorithm
from nord.search.engine import RunInfo, run_search
from nord.search.executors import ProcessPool

__all__ = ["REFERENCE_POINT", "EXACT_HYPERVOLUME", "ACCURACIES", "ParetoFront", "FrontRun",
           "MultiObjectiveResult", "NSGA2Report", "normalised_hypervolume", "exact_front",
           "front_of", "make_nsga2", "run_nsga2_seed", "run_nsga2", "write_nsga2_report",
           "reference_point_of", "DEFAULT_OBJECTIVES"]

DEFAULT_OBJECTIVES = "accuracy,parameters"

REFERENCE_POINT: Tuple[float, float] = (1.6e6, 0.0)
"""The hypervolume's reference point: (1.6 million parameters, 0 % accuracy as a fraction).
Every NAS-Bench-201 network has fewer parameters (the largest: 1.53 M on CIFAR-10)."""

EXACT_HYPERVOLUME = {"cifar10": 0.89318}
"""The exact front's hypervolume (200-epoch test accuracy, :data:`REFERENCE_POINT`), to
five decimals: the best any search can score."""

ACCURACIES = ("reported", "search")
"""Which accuracy scores a front: 'reported' (200-epoch test, the default) or 'search'
(12-epoch validation, what the algorithm optimises)."""

Point = Tuple[float, float]


def normalised_hypervolume(points: Sequence[Sequence[float]],
                           reference_point: Sequence[float] = REFERENCE_POINT) -> float:
    """The hypervolume of ``(n_params, accuracy)`` points, normalised to [0, 1].

    The area the points dominate up to ``reference_point`` (parameters as a count, accuracy
    as a fraction), divided by the area of the box ``[0, ref_params] x [ref_accuracy, 1]``;
    dominated points and points beyond the reference point add nothing.
    """
    return hypervolume(points, reference_point, normalise=True)


def _accuracy_array(dataset: str, accuracy: str) -> np.ndarray:
    if accuracy not in ACCURACIES:
        raise ConfigurationError(
            f"accuracy must be one of {ACCURACIES} ('reported': 200-epoch test, 'search': "
            f"12-epoch validation); got {accuracy!r}")
    arrays = load_table().arrays(dataset)
    return arrays.reported_accuracy if accuracy == "reported" else arrays.accuracy


@dataclass
class ParetoFront:
    """A set of cells on a Pareto front, with the points that score it.

    Attributes:
        indices: the cells' rows in the benchmark table, by increasing parameters.
        points: their ``(n_params, accuracy)``, accuracy as a fraction.
        hypervolume: :func:`normalised_hypervolume` of the points.
        accuracy: which accuracy the points hold ('reported' or 'search').
    """

    indices: List[int]
    points: List[Point]
    hypervolume: float
    accuracy: str = "reported"

    def __len__(self) -> int:
        return len(self.indices)

    @property
    def cells(self) -> List[str]:
        """The cell strings of the front's architectures."""
        cells = load_table().cells
        return [cells[index] for index in self.indices]


def reference_point_of(objective: Union[str, Objective] = DEFAULT_OBJECTIVES) -> Point:
    """The hypervolume's reference point for ``objectives``: ``(cost reference, 0.0)``
    (:data:`REFERENCE_POINT` for parameters; see :mod:`nord.comparisons.hardware`)."""
    return (parse_objectives(objective).reference, 0.0)


def _allowed(limit: Optional[LatencyLimit]) -> Optional[np.ndarray]:
    return None if limit is None else limit.allowed()


def exact_front(dataset: str = "cifar10", accuracy: str = "reported",
                reference_point: Optional[Sequence[float]] = None,
                objectives: Union[str, Objective] = DEFAULT_OBJECTIVES,
                limit: Optional[LatencyLimit] = None) -> ParetoFront:
    """The Pareto front of the whole table: cells no other cell beats on both cost (lower)
    and accuracy (higher). Of cells with the same point, the lowest index is kept.

    Args:
        dataset: 'cifar10', 'cifar100' or 'imagenet16'.
        accuracy: 'reported' (200-epoch test accuracy) or 'search' (12-epoch validation).
        reference_point: of the hypervolume; default :func:`reference_point_of` the objectives.
        objectives: 'accuracy,parameters' (default) or 'accuracy,latency:DEVICE'.
        limit: a :class:`LatencyLimit`: the front of the cells within it.
    """
    objective = parse_objectives(objectives)
    spec = get_dataset(objective.check_dataset(dataset))
    values = _accuracy_array(spec.name, accuracy)
    costs = objective.values(spec.name)
    allowed = _allowed(limit)
    candidates = [(cost, value) if allowed is None or allowed[i] else (math.nan, math.nan)
                  for i, (cost, value) in enumerate(zip(costs.tolist(), values.tolist()))]
    indices = pareto_indices(candidates)
    points = [(float(candidates[i][0]), float(candidates[i][1])) for i in indices]
    reference = (tuple(reference_point) if reference_point is not None
                 else reference_point_of(objective))
    return ParetoFront(indices, points, hypervolume(points, reference), accuracy)


def front_of(indices: Sequence[int], dataset: str = "cifar10", accuracy: str = "reported",
             reference_point: Optional[Sequence[float]] = None,
             objectives: Union[str, Objective] = DEFAULT_OBJECTIVES,
             limit: Optional[LatencyLimit] = None) -> ParetoFront:
    """The front a search returns from the cells it evaluated (``indices``, table rows).

    The front is chosen by the search signal (12-epoch validation accuracy) and the cost,
    as the search saw them, among the cells within ``limit``; its points and hypervolume
    then use ``accuracy``.
    """
    objective = parse_objectives(objectives)
    spec = get_dataset(objective.check_dataset(dataset))
    arrays = load_table().arrays(spec.name)
    costs = objective.values(spec.name)
    allowed = _allowed(limit)
    unique = sorted(set(int(i) for i in indices if allowed is None or allowed[int(i)]))
    chosen = [unique[i] for i in pareto_indices(
        [(costs[i], arrays.accuracy[i]) for i in unique])]
    values = _accuracy_array(spec.name, accuracy)
    points = [(float(costs[i]), float(values[i])) for i in chosen]
    reference = (tuple(reference_point) if reference_point is not None
                 else reference_point_of(objective))
    return ParetoFront(chosen, points, hypervolume(points, reference), accuracy)


# --- nsga2 ------------------------------------------------------------------------------------
def make_nsga2(space, seed: int, budget: int, population_size: int = 20,
               objectives: Union[str, Objective] = DEFAULT_OBJECTIVES):
    """pygmo's nsga2 on (1 - accuracy, cost) from the algorithm registry, with enough
    generations to propose ``budget`` candidates (the last may be cut by the budget).

    Raises:
        ConfigurationError: a population size pygmo's nsga2 cannot evolve, or unknown
            objectives. MissingDependencyError: pygmo is not installed.
    """
    metric = parse_objectives(objectives).metric
    extra = {} if metric == "n_params" else {"second_objective": metric}
    return make_algorithm("nsga2", space, seed=seed, budget=budget,
                          population_size=population_size, **extra)


def nsga2_evaluator(dataset: str, objectives: Union[str, Objective] = DEFAULT_OBJECTIVES,
                    limit: Optional[LatencyLimit] = None):
    """The evaluator of an nsga2 run: table look-ups, with the latency its objective or
    limit needs (:class:`~nord.comparisons.hardware.LatencyEvaluator`)."""
    objective = parse_objectives(objectives)
    inner = benchmark_evaluator(dataset)
    if objective.device is None and limit is None:
        return inner
    return LatencyEvaluator(inner, objective.device, limit)


def run_nsga2_seed(dataset: str = "cifar10", budget: int = 500, seed: int = 0,
                   population_size: int = 20, accuracy: str = "reported",
                   objectives: Union[str, Objective] = DEFAULT_OBJECTIVES,
                   limit: Optional[LatencyLimit] = None) -> FrontRun:
    """One nsga2 run of ``budget`` evaluations through the search engine (no journal)."""
    objective = parse_objectives(objectives)
    dataset = objective.check_dataset(dataset)
    indices = evaluated_cells(
        make_nsga2(NASBench201Space(), seed, budget, population_size, objective),
        nsga2_evaluator(dataset, objective, limit), budget)
    front = front_of(indices, dataset, accuracy, objectives=objective, limit=limit)
    return FrontRun(seed, front.hypervolume, front.indices, front.points, len(indices),
                    len(set(indices)))


def _nsga2_task(task) -> List[FrontRun]:
    dataset, budget, seeds, population_size, accuracy, objectives, limit = task
    return [run_nsga2_seed(dataset, budget, seed, population_size, accuracy, objectives, limit)
            for seed in seeds]


@dataclass
class MultiObjectiveResult(JSONRecord):
    """nsga2 over several seeds: each run's front and hypervolume, and the exact front.

    Attributes:
        dataset, budget, base_seed, seeds, population_size, accuracy: the settings.
        runs: one :class:`FrontRun` per seed, by seed.
        exact: the table's exact front (same accuracy, reference point and limit).
        wall_time: seconds taken.
        reference_point: of the hypervolumes, ``(cost, accuracy)``.
        objectives: 'accuracy,parameters' or 'accuracy,latency:DEVICE'.
        limit: the latency limit the runs searched under, or None.
    """

    dataset: str
    budget: int
    base_seed: int
    seeds: int
    population_size: int
    accuracy: str
    runs: List[FrontRun]
    exact: ParetoFront
    wall_time: float = math.nan
    reference_point: Tuple[float, float] = REFERENCE_POINT
    objectives: str = DEFAULT_OBJECTIVES
    limit: Optional[LatencyLimit] = None

    @property
    def objective(self) -> Objective:
        return parse_objectives(self.objectives)

    @property
    def hypervolumes(self) -> np.ndarray:
        """Each seed's hypervolume, by seed."""
        return np.array([run.hypervolume for run in self.runs])

    @property
    def fronts(self) -> List[List[Point]]:
        """Each seed's front, ``(n_params, accuracy)`` points."""
        return [run.points for run in self.runs]

    @property
    def mean(self) -> float:
        return float(self.hypervolumes.mean())

    @property
    def std(self) -> float:
        """Standard deviation over seeds (ddof=0)."""
        return float(self.hypervolumes.std())

    def table(self) -> str:
        """Plain text: hypervolume mean ± std over seeds, next to the exact front's."""
        which = "200-epoch test" if self.accuracy == "reported" else "12-epoch validation"
        ratio = self.mean / self.exact.hypervolume if self.exact.hypervolume else math.nan
        sizes = [len(run.indices) for run in self.runs]
        objective = self.objective
        cost = "parameters" if objective.device is None else f"latency on {objective.device}"
        limit = "" if self.limit is None else (
            f"; cells slower than {self.limit.max_ms:g} ms on {self.limit.device} fail")
        return "\n".join([
            f"NAS-Bench-201 {self.dataset}: nsga2 (population {self.population_size}) on "
            f"(1 - 12-epoch validation accuracy, {cost}), budget {self.budget} "
            f"evaluations, {self.seeds} seeds ({self.base_seed}..{self.base_seed + self.seeds - 1})"
            f"{limit}",
            f"hypervolume of the fronts found ({which} accuracy, reference point "
            f"{objective.format(self.reference_point[0])} {cost}, "
            f"{100 * self.reference_point[1]:g} %, normalised by that box)",
            f"  nsga2:       {self.mean:.4f} ± {self.std:.4f}  (min {self.hypervolumes.min():.4f},"
            f" max {self.hypervolumes.max():.4f}; {np.mean(sizes):.1f} cells per front; "
            f"{100 * ratio:.2f} % of the exact front's)",
            f"  exact front: {self.exact.hypervolume:.4f}  ({len(self.exact)} cells)"])

    def to_dict(self) -> Dict[str, Any]:
        return {"benchmark": "nasbench201", "algorithm": "nsga2", "dataset": self.dataset,
                "objectives": self.objectives.split(","),
                "max_latency": None if self.limit is None else self.limit.to_dict(),
                "budget": self.budget, "base_seed": self.base_seed, "seeds": self.seeds,
                "population_size": self.population_size, "accuracy": self.accuracy,
                "reference_point": list(self.reference_point), "wall_time": self.wall_time,
                "hypervolume": {"mean": self.mean, "std": self.std},
                "exact": asdict(self.exact), "runs": [asdict(run) for run in self.runs]}


def run_nsga2(dataset: str = "cifar10", budget: int = 500, seeds: int = 10, base_seed: int = 0,
              population_size: int = 20, accuracy: str = "reported",
              processes: Optional[int] = 1,
              progress: Optional[Callable[[int, int], None]] = None,
              objectives: Union[str, Objective] = DEFAULT_OBJECTIVES,
              max_latency_ms: Optional[float] = None,
              latency_device: Optional[str] = None) -> MultiObjectiveResult:
    """Run pygmo's nsga2 for ``seeds`` seeds at ``budget`` evaluations; hypervolumes and fronts.

    Args:
        dataset: 'cifar10', 'cifar100' or 'imagenet16'.
        budget: evaluations per run, repeats included.
        seeds: runs; run ``i`` uses seed ``base_seed + i``.
        base_seed: the first seed.
        population_size: nsga2's population (pygmo's rule: at least 5).
        accuracy: 'reported' (200-epoch test, default) or 'search' scores the fronts.
        processes: worker processes over seeds (None: one per CPU); results do not depend
            on it.
        progress: ``progress(seeds_done, seeds_total)``.
        objectives: 'accuracy,parameters' (default) or 'accuracy,latency:DEVICE'.
        max_latency_ms: a latency limit: slower cells are failed evaluations, left out of
            the fronts (the exact one too).
        latency_device: the device of the limit (only with one); default the objectives'
            device.

    Raises:
        ConfigurationError: a setting out of range, unknown objectives, a limit without a
            device or a device without a limit. BenchmarkError: an unknown device or data
            set. MissingDependencyError: no pygmo.
    """
    objective = parse_objectives(objectives)
    dataset = objective.check_dataset(dataset)
    limit = latency_limit(max_latency_ms, latency_device, DatasetTable.of(dataset),
                          objective.device)
    budget = check_int(budget, "--budget", 1, rule="an integer >= 1 (budget=, evaluations "
                                                    "per run)")
    seeds, base_seed = check_seeds(seeds, base_seed)
    population_size = check_int(population_size, "--population", 5, rule=(
        "an integer >= 5 (population_size=; nsga2 needs at least 5 individuals)"))
    if processes is None:
        processes = os.cpu_count() or 1
    processes = min(check_int(processes, "processes", 1), seeds)
    # pygmo there? a population nsga2 accepts? Fail here rather than in every worker
    make_nsga2(NASBench201Space(), base_seed, budget, population_size, objective).close()
    exact = exact_front(dataset, accuracy, objectives=objective, limit=limit)
    nsga2_evaluator(dataset, objective, limit).evaluate_genome((0,) * 6)  # load before forks
    jobs = [(dataset, budget, chunk, population_size, accuracy, objective, limit)
            for chunk in chunks(list(range(base_seed, base_seed + seeds)), processes)]
    runs: List[FrontRun] = []
    started = time.perf_counter()
    for outcome in ProcessPool(processes).map(_nsga2_task, jobs):
        runs.extend(outcome)
        if progress is not None:
            progress(len(runs), seeds)
    runs.sort(key=lambda run: run.seed)
    return MultiObjectiveResult(dataset, budget, base_seed, seeds, population_size, accuracy,
                                runs, exact, time.perf_counter() - started,
                                reference_point_of(objective), f"accuracy,{objective.name}",
                                limit)



# --- a report of one run ----------------------------------------------------------------------
@dataclass
class NSGA2Report:
    """What ``write_nsga2_report`` wrote and measured.

    Attributes:
        page: the report page (``write_report``'s ``report.md`` / ``.html``).
        figure: ``front_vs_exact.png``: the run's front next to the exact one, in 200-epoch
            test accuracy.
        journal: the run's journal.
        hypervolume: the run's front's hypervolume (200-epoch test accuracy).
        exact_hypervolume: the exact front's.
        front: the run's front.
    """

    page: Path
    figure: Path
    journal: Path
    hypervolume: float
    exact_hypervolume: float
    front: ParetoFront = field(repr=False, default=None)


def write_nsga2_report(out_dir: Union[str, os.PathLike], dataset: str = "cifar10",
                       budget: int = 500, seed: int = 0, population_size: int = 20,
                       journal: Union[str, os.PathLike, None] = None,
                       fmt: str = "markdown",
                       objectives: Union[str, Objective] = DEFAULT_OBJECTIVES,
                       limit: Optional[LatencyLimit] = None) -> NSGA2Report:
    """Run nsga2 once through ``run_search`` (journaled), and report it next to the exact front.

    Writes into ``out_dir``: the journal (default ``nsga2-<dataset>-seed<seed>.db``), nord's
    run report (``write_report``; with the parameter objective its Pareto plot shows the
    search signal against parameters, with the exact front of the 12-epoch validation
    accuracy for reference; with a latency objective that plot, which knows parameters only,
    is left out), and ``front_vs_exact.png``: every evaluated cell, the front the run
    returned and the exact front, all in 200-epoch test accuracy against the objectives'
    cost, with both hypervolumes.

    Raises:
        JournalError: the journal holds a run already (give another path).
        ConfigurationError, BenchmarkError, MissingDependencyError: as ``run_nsga2``.
    """

    objective = parse_objectives(objectives)
    spec = get_dataset(objective.check_dataset(dataset))
    budget = check_int(budget, "budget (evaluations)", 1)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    journal_path = (Path(journal) if journal is not None
                    else out / f"nsga2-{spec.name}-seed{seed}.db")
    algorithm = make_nsga2(NASBench201Space(), seed, budget, population_size, objective)
    evaluator = BenchmarkEvaluator(spec.name)
    if objective.device is not None or limit is not None:
        evaluator = LatencyEvaluator(evaluator, objective.device, limit)
    try:
        run_search(algorithm, evaluator, budget=budget, journal=journal_path,
                   info=RunInfo(dataset={"name": spec.name, "benchmark": "nasbench201"},
                                extra={"objectives": 2,
                                       "objective_names": ["accuracy", objective.name]}))
    finally:
        algorithm.close()
    with Journal(journal_path) as record:
        indices = [row["key"] for row in record.evaluations() if row["status"] == "ok"]
    reference = reference_point_of(objective)
    front = front_of(indices, spec.name, objectives=objective, limit=limit)
    exact = exact_front(spec.name, objectives=objective, limit=limit)
    title = f"nsga2 on NAS-Bench-201 {spec.name}: accuracy against {objective.label}"
    if objective.device is None:
        exact_search = exact_front(spec.name, accuracy="search", limit=limit)
        page = write_report([journal_path], out, title=title, fmt=fmt, pareto=True,
                            reference_front=exact_search.points,
                            reference_label="exact front of the table (12-epoch validation)",
                            reference_point=REFERENCE_POINT, best_count=1)
    else:
        page = write_report([journal_path], out, title=title, fmt=fmt, pareto=False,
                            best_count=1)
    figure = plot_front_against_exact(
        out / "front_vs_exact.png", spec.name, indices, front, exact, reference,
        costs=objective.values(spec.name),
        accuracies=load_table().arrays(spec.name).reported_accuracy, cost_label=objective.label)
    return NSGA2Report(page, figure, journal_path, front.hypervolume, exact.hypervolume, front)
