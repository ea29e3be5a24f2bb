"""Compare search algorithms on NAS-Bench-201: many seeds, a budget of evaluations, seconds.

The runner behind ``nord compare``. Each algorithm runs once per seed, with a budget of
``budget`` evaluations (table look-ups), and returns the architecture with the best search
signal it evaluated; the table then says how good that architecture really is::

    from nord.benchmarks.compare import run_comparison

    result = run_comparison(dataset="cifar10", algorithms=("random", "rea"), budget=100,
                            seeds=500)
    print(result.table())
    result.save_json("compare.json")
    result.values("rea")            # per-seed 200-epoch test accuracy (fractions), by seed

**Protocol** (that of the benchmark's paper and of the published comparisons):

* The search signal an algorithm sees is the 12-epoch validation accuracy
  (``EvaluationResult.accuracy``). The architecture an algorithm *returns* is the one with
  the best search signal among all those it evaluated (ties: the first evaluated).
* The reported figure is that architecture's 200-epoch test accuracy
  (``EvaluationResult.reported_accuracy``), which the algorithms never see.
* **Budget**: ``budget`` evaluations = look-ups = results told to the algorithm, repeats of
  an architecture already evaluated included (a repeat costs as much as a new one). This is
  the convention that reproduces the reference numbers (:data:`REFERENCE_RESULTS`): had only
  distinct architectures counted, REA would reach 94.34 ± 0.11 at 500, outside the
  reference's 94.32 ± 0.14. An algorithm that finishes before the budget (a pygmo
  algorithm whose generations are spent) stops there; ``SeedRun.evaluations`` says how many
  it used.
* Seed ``i`` of ``seeds`` is ``base_seed + i``; a seed's run depends only on the algorithm,
  data set, budget and seed, so results are identical for any ``processes``.
* Mean ± standard deviation over seeds; the deviation is the population one (``ddof=0``),
  the standard error ``std / sqrt(seeds)``.

**Speed.** Running every seed through ``run_search`` would decode each genome into a
descriptor and hash it (about a millisecond each); here the same algorithm classes are
driven through ``ask``/``tell`` directly with ``BenchmarkEvaluator.evaluate_genome`` (no
descriptors, no journal): :func:`drive`. 500 seeds x 500 evaluations of random search or
REA take a few seconds in one process. For journals, MPI and reports of a single run, use
``run_search`` with ``NASBench201Space`` and ``BenchmarkEvaluator`` as for real training.

**Algorithms** (:data:`COMPARE_ALGORITHMS`, short names for ``nord compare --algorithms``):

* ``random``: ``RandomSearch``, uniformly random cells.
* ``rea``: ``RegularizedEvolution``, population 10, sample 3, one-edge mutation, aging (the
  benchmark paper's setting).
* ``ga``: ``GeneticAlgorithm`` with its defaults: generational, population 10,
  single-point crossover 0.9, per-gene mutation 0.2, tournaments of 2, 1 elite.
* ``pygmo-sga``: ``PygmoAlgorithm('sga')``, the NORD paper's sga (crossover 0.9, per-gene
  mutation 0.2), population 10, generations enough to fill the budget (as for all below).
* ``pygmo-gaco``: ``PygmoAlgorithm('gaco', ker=10)``, extended ant colony, population 10.
* ``pygmo-pso``: ``PygmoAlgorithm('pso_gen')``, generational particle swarm, population 10.
* ``pygmo-de``: ``PygmoAlgorithm('de')``, differential evolution, population 10.

The pygmo ones need pygmo. Add your own with :func:`register_compare_algorithm` (before
``run_comparison``; worker processes are forked and inherit the registration).
"""
from __future__ import annotations

import json
import logging
import math
import multiprocessing
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import (Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple,
                    Union)

import numpy as np

from nord.benchmarks.cell_space import NASBench201Space
from nord.benchmarks.nasbench201 import BenchmarkEvaluator, get_dataset, load_table
from nord.errors import ConfigurationError, NordError
from nord.search.algorithm import SearchAlgorithm
from nord.search.space import SearchSpace

__all__ = ["CompareAlgorithm", "COMPARE_ALGORITHMS", "REFERENCE_RESULTS", "SeedRun",
           "ComparisonResult", "register_compare_algorithm", "list_compare_algorithms",
           "get_compare_algorithm", "drive", "run_seed", "run_seeds", "run_comparison",
           "load_json"]

logger = logging.getLogger(__name__)

MakeAlgorithm = Callable[[SearchSpace, int, int], SearchAlgorithm]
"""``make(space, seed, budget) -> SearchAlgorithm``: a fresh, seeded algorithm for one run."""

Progress = Callable[[str, int, int], None]
"""``progress(algorithm, seeds_done, seeds_total)``, called as seeds finish."""


# --- the algorithms ---------------------------------------------------------------------------
@dataclass(frozen=True)
class CompareAlgorithm:
    """An algorithm as ``run_comparison`` makes it.

    Attributes:
        name: its short name (``nord compare --algorithms``).
        description: one line for help texts and the JSON file.
        make: ``make(space, seed, budget) -> SearchAlgorithm``; the budget lets algorithms
            with a fixed number of generations (pygmo's) size them to it.
    """

    name: str
    description: str
    make: MakeAlgorithm


def _generations(budget: int, population_size: int) -> int:
    """Generations after the initial population so that at least ``budget`` are proposed."""
    return max(1, math.ceil(budget / population_size) - 1)


def _random(space, seed, budget):
    from nord.search.random_search import RandomSearch
    return RandomSearch(space, seed=seed)


def _rea(space, seed, budget):
    from nord.search.evolution import RegularizedEvolution
    return RegularizedEvolution(space, seed=seed, population_size=10, sample_size=3)


def _ga(space, seed, budget):
    from nord.search.genetic import GeneticAlgorithm
    return GeneticAlgorithm(space, seed=seed)


def _pygmo(name: str, population_size: int = 10, **kwargs) -> MakeAlgorithm:
    def make(space, seed, budget):
        from nord.search.pygmo_adapter import PygmoAlgorithm
        return PygmoAlgorithm(space, name, population_size=population_size,
                              generations=_generations(budget, population_size), seed=seed,
                              **kwargs)
    return make


COMPARE_ALGORITHMS: Dict[str, CompareAlgorithm] = {}
"""Short name -> :class:`CompareAlgorithm`; see the module docstring for the settings."""


def register_compare_algorithm(name: str, make: MakeAlgorithm, description: str = "",
                               overwrite: bool = False) -> CompareAlgorithm:
    """Make an algorithm available to ``run_comparison`` under ``name``.

    Args:
        name: the short name, e.g. 'my-search' (lower case, no spaces or commas).
        make: ``make(space, seed, budget) -> SearchAlgorithm``.
        description: one line saying what it is and its settings.
        overwrite: replace an algorithm registered under the same name.

    Raises:
        ConfigurationError: a bad name, ``make`` not callable, or a taken name.
    """
    if not isinstance(name, str) or not name or name != name.strip().lower() \
            or any(c in name for c in ", \t"):
        raise ConfigurationError(
            f"a comparison algorithm's name is lower case without spaces or commas, such as "
            f"'my-search'; got {name!r}")
    if not callable(make):
        raise ConfigurationError(
            f"make must be a callable (space, seed, budget) -> SearchAlgorithm; got {make!r}")
    if name in COMPARE_ALGORITHMS and not overwrite:
        raise ConfigurationError(
            f"comparison algorithm {name!r} is registered already; choose another name or "
            "pass overwrite=True")
    spec = CompareAlgorithm(name, description, make)
    COMPARE_ALGORITHMS[name] = spec
    return spec


def list_compare_algorithms() -> List[str]:
    """The short names ``run_comparison`` accepts, in registration order."""
    return list(COMPARE_ALGORITHMS)


def get_compare_algorithm(name: str) -> CompareAlgorithm:
    """The algorithm registered as ``name``.

    Raises:
        ConfigurationError: no such name; the message lists the valid ones.
    """
    spec = COMPARE_ALGORITHMS.get(name.strip().lower()) if isinstance(name, str) else None
    if spec is None:
        raise ConfigurationError(
            f"unknown algorithm {name!r} for a benchmark comparison; valid names are "
            f"{', '.join(COMPARE_ALGORITHMS)} (add one with register_compare_algorithm)")
    return spec


for _name, _description, _make in (
        ("random", "random search: uniformly random cells", _random),
        ("rea", "regularized evolution: population 10, sample 3, one-edge mutation, aging "
                "(the NAS-Bench-201 paper's setting)", _rea),
        ("ga", "nord's GeneticAlgorithm, defaults: generational, population 10, single-point "
               "crossover 0.9, per-gene mutation 0.2, tournaments of 2, 1 elite", _ga),
        ("pygmo-sga", "pygmo sga: crossover 0.9, per-gene uniform mutation 0.2, population "
                      "10 (the NORD paper's setting)", _pygmo("sga")),
        ("pygmo-gaco", "pygmo gaco (extended ant colony), population 10, kernel 10",
         _pygmo("gaco", ker=10)),
        ("pygmo-pso", "pygmo pso_gen (generational particle swarm), population 10",
         _pygmo("pso_gen")),
        ("pygmo-de", "pygmo de (differential evolution), population 10", _pygmo("de"))):
    register_compare_algorithm(_name, _make, _description)


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
def drive(algorithm: SearchAlgorithm, evaluator: BenchmarkEvaluator, budget: int) -> List[int]:
    """Run ``algorithm`` for ``budget`` evaluations by table look-up; the lean search loop.

    Ask, look the genome up with ``evaluator.evaluate_genome``, tell; no descriptor, no
    journal. Sequential: every result is told before the next ask, so an ``ask`` that returns
    None means the algorithm is finished (or broken).

    Args:
        algorithm: a fresh algorithm over ``NASBench201Space``; closed at the end.
        evaluator: the benchmark evaluator of the data set.
        budget: evaluations, repeats included.

    Returns:
        The table index of each evaluated architecture, in evaluation order (fewer than
        ``budget`` when the algorithm finished first).

    Raises:
        NordError: ``ask`` returned None while nothing was outstanding and the algorithm was
            not finished.
    """
    indices: List[int] = []
    ask, tell, evaluate = algorithm.ask, algorithm.tell, evaluator.evaluate_genome
    try:
        for _ in range(budget):
            candidate = ask()
            if candidate is None:
                if algorithm.finished:
                    break
                raise NordError(
                    f"{type(algorithm).__name__} proposed nothing (ask() returned None) with no "
                    f"result outstanding after {len(indices)} evaluations; a sequential driver "
                    "cannot go on")
            result = evaluate(candidate.genome)
            tell(candidate, result)
            indices.append(result.metrics["index"])
    finally:
        algorithm.close()
    return indices


@dataclass
class SeedRun:
    """One seed of one algorithm: what it returned, and what it cost.

    Attributes:
        seed: the algorithm's seed.
        reported_accuracy: 200-epoch test accuracy of the returned architecture (fraction).
        accuracy: its search signal, 12-epoch validation accuracy (fraction).
        index: its row in the benchmark table.
        cell: its cell string.
        n_params: its trainable parameters.
        found_at: the evaluation (1-based) that first evaluated it.
        evaluations: evaluations used (the budget unless the algorithm finished first).
        unique: distinct architectures among them.
    """

    seed: int
    reported_accuracy: float
    accuracy: float
    index: int
    cell: str
    n_params: int
    found_at: int
    evaluations: int
    unique: int

    @classmethod
    def from_indices(cls, seed: int, indices: Sequence[int], dataset: str) -> "SeedRun":
        """The run's outcome from the table indices it evaluated, in order."""
        if not indices:
            raise NordError(f"the run with seed {seed} evaluated nothing; nothing to return")
        table = load_table()
        arrays = table.arrays(dataset)
        order = np.asarray(indices, dtype=np.int64)
        position = int(np.argmax(arrays.accuracy[order]))   # first of equal maxima
        best = int(order[position])
        return cls(seed=int(seed), reported_accuracy=float(arrays.reported_accuracy[best]),
                   accuracy=float(arrays.accuracy[best]), index=best, cell=table.cells[best],
                   n_params=int(arrays.n_params[best]), found_at=position + 1,
                   evaluations=len(order), unique=int(np.unique(order).size))


_EVALUATORS: Dict[str, BenchmarkEvaluator] = {}


def _evaluator(dataset: str) -> BenchmarkEvaluator:
    """One evaluator per data set and process (its records are built on first use)."""
    evaluator = _EVALUATORS.get(dataset)
    if evaluator is None:
        evaluator = _EVALUATORS[dataset] = BenchmarkEvaluator(dataset)
    return evaluator


def run_seed(algorithm: str = "rea", dataset: str = "cifar10", budget: int = 100,
             seed: int = 0) -> SeedRun:
    """One run of the comparison algorithm ``algorithm`` (a short name) with ``seed``."""
    spec = get_compare_algorithm(algorithm)
    dataset = get_dataset(dataset).name
    instance = spec.make(NASBench201Space(), seed, budget)
    return SeedRun.from_indices(seed, drive(instance, _evaluator(dataset), budget), dataset)


def run_seeds(algorithm: str, dataset: str, budget: int, seeds: Iterable[int]
              ) -> Tuple[List[SeedRun], float]:
    """Runs for several seeds in this process; also returns the seconds they took."""
    started = time.perf_counter()
    runs = [run_seed(algorithm, dataset, budget, seed) for seed in seeds]
    return runs, time.perf_counter() - started


def _run_task(task: Tuple[str, str, int, List[int]]) -> Tuple[str, List[SeedRun], float]:
    algorithm, dataset, budget, seeds = task
    runs, seconds = run_seeds(algorithm, dataset, budget, seeds)
    return algorithm, runs, seconds


# --- the comparison ---------------------------------------------------------------------------
def _stats(values: np.ndarray) -> Dict[str, float]:
    values = np.asarray(values, dtype=float) * 100
    if values.size == 0:
        return {"mean": math.nan, "std": math.nan, "stderr": math.nan, "min": math.nan,
                "max": math.nan}
    std = float(values.std())
    return {"mean": float(values.mean()), "std": std, "stderr": std / math.sqrt(values.size),
            "min": float(values.min()), "max": float(values.max())}


class JSONRecord:
    """``to_json`` and ``save_json`` for result records that define ``to_dict``."""

    def to_json(self, indent: Optional[int] = 2) -> str:
        return json.dumps(_json_ready(self.to_dict()), indent=indent)

    def save_json(self, path: Union[str, os.PathLike]) -> Path:
        """Write ``to_json()`` to ``path`` (folders created); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path


@dataclass
class ComparisonResult(JSONRecord):
    """The outcome of ``run_comparison``: per algorithm, one :class:`SeedRun` per seed.

    Attributes:
        dataset: 'cifar10', 'cifar100' or 'imagenet16'.
        budget: evaluations per run, repeats included.
        base_seed: seeds are ``base_seed .. base_seed + len(seeds) - 1``.
        seeds: number of seeds per algorithm.
        runs: algorithm short name -> its runs, ordered by seed.
        seconds: algorithm -> seconds of computation summed over the processes.
        descriptions: algorithm -> its description.
        wall_time: seconds ``run_comparison`` took.
        processes: worker processes used.
    """

    dataset: str
    budget: int
    base_seed: int
    seeds: int
    runs: Dict[str, List[SeedRun]]
    seconds: Dict[str, float] = field(default_factory=dict)
    descriptions: Dict[str, str] = field(default_factory=dict)
    wall_time: float = math.nan
    processes: int = 1

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
        """Per algorithm: statistics (in %) of the reported accuracy ('test') and of the
        search signal ('search'), mean evaluations and distinct architectures per run,
        seconds and evaluations per second."""
        summary = {}
        for name, runs in self.runs.items():
            evaluations = sum(run.evaluations for run in runs)
            seconds = self.seconds.get(name, math.nan)
            summary[name] = {
                "seeds": len(runs),
                "test": _stats(self.values(name, "reported_accuracy")),
                "search": _stats(self.values(name, "accuracy")),
                "evaluations": evaluations / len(runs) if runs else math.nan,
                "unique": float(np.mean([run.unique for run in runs])) if runs else math.nan,
                "seconds": seconds,
                "evaluations_per_second": (evaluations / seconds
                                           if seconds and math.isfinite(seconds) else math.nan),
            }
        return summary

    def table(self) -> str:
        """A plain-text table: per algorithm, mean ± std (%) of the returned architecture's
        200-epoch test accuracy and of its search signal, over the seeds."""
        label = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100",
                 "imagenet16": "ImageNet16-120"}.get(self.dataset, self.dataset)
        last = self.base_seed + self.seeds - 1
        lines = [f"NAS-Bench-201, {label}: budget {self.budget} evaluations, {self.seeds} "
                 f"seed{'s' if self.seeds != 1 else ''} ({self.base_seed}..{last})",
                 "returned architecture = best 12-epoch validation accuracy among those "
                 "evaluated; mean ± std over seeds"]
        header = ("algorithm", "seeds", "test acc. 200 ep (%)", "search signal (%)",
                  "evals", "distinct", "compute (s)")
        rows = []
        for name, numbers in self.summary().items():
            rows.append((name, str(numbers["seeds"]),
                         f"{numbers['test']['mean']:.2f} ± {numbers['test']['std']:.2f}",
                         f"{numbers['search']['mean']:.2f} ± {numbers['search']['std']:.2f}",
                         f"{numbers['evaluations']:.0f}", f"{numbers['unique']:.1f}",
                         f"{numbers['seconds']:.2f}"))
        widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]
        def line(row):
            return "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                             for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
        lines += ["", line(header), line(tuple("-" * w for w in widths))]
        lines += [line(row) for row in rows]
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        """Everything, JSON-ready: settings, the summary and every seed's run."""
        summary = self.summary()
        return {
            "benchmark": "nasbench201", "dataset": self.dataset, "budget": self.budget,
            "seeds": self.seeds, "base_seed": self.base_seed, "processes": self.processes,
            "wall_time": self.wall_time,
            "protocol": ("returned architecture: best search signal (12-epoch validation "
                         "accuracy) among those evaluated, first found on ties; reported: its "
                         "200-epoch test accuracy; budget: evaluations including repeats; "
                         "std with ddof=0; accuracies in the runs are fractions, in the "
                         "summary percent"),
            "algorithms": {
                name: {"description": self.descriptions.get(name, ""),
                       "seconds": self.seconds.get(name),
                       "summary": summary[name],
                       "runs": [asdict(run) for run in runs]}
                for name, runs in self.runs.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ComparisonResult":
        try:
            algorithms = data["algorithms"]
            return cls(dataset=data["dataset"], budget=int(data["budget"]),
                       base_seed=int(data["base_seed"]), seeds=int(data["seeds"]),
                       runs={name: [SeedRun(**run) for run in entry["runs"]]
                             for name, entry in algorithms.items()},
                       seconds={name: _number(entry.get("seconds"))
                                for name, entry in algorithms.items()},
                       descriptions={name: entry.get("description", "")
                                     for name, entry in algorithms.items()},
                       wall_time=_number(data.get("wall_time")),
                       processes=int(data.get("processes", 1)))
        except (KeyError, TypeError, ValueError) as error:
            raise ConfigurationError(
                f"not a comparison written by ComparisonResult.to_json: {error!r}") from error

    @classmethod
    def from_json(cls, text: str) -> "ComparisonResult":
        return cls.from_dict(json.loads(text))


def load_json(path: Union[str, os.PathLike]) -> ComparisonResult:
    """A comparison saved with ``save_json``."""
    return ComparisonResult.from_json(Path(path).read_text(encoding="utf-8"))


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def _json_ready(value: Any) -> Any:
    """NaN and infinities as null (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    return value


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigurationError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def _pool_context():
    # fork: workers inherit the loaded table and any registered algorithm, and no script is
    # imported again (a script that starts MPI at import would hang under spawn)
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def run_comparison(dataset: str = "cifar10", algorithms: Union[str, Sequence[str]] = ("random", "rea"),
                   budget: int = 100, seeds: int = 10, base_seed: int = 0,
                   processes: Optional[int] = 1, progress: Optional[Progress] = None
                   ) -> ComparisonResult:
    """Run each algorithm for ``seeds`` seeds at ``budget`` evaluations on NAS-Bench-201.

    Args:
        dataset: 'cifar10', 'cifar100' or 'imagenet16' (ImageNet16-120).
        algorithms: short names (see :data:`COMPARE_ALGORITHMS`), or one comma-separated
            string such as ``'random,rea'``.
        budget: evaluations per run, repeats of an architecture included.
        seeds: runs per algorithm; run ``i`` uses seed ``base_seed + i``.
        base_seed: the first seed (>= 0).
        processes: worker processes over seeds (None: one per CPU). Results do not depend
            on it.
        progress: ``progress(algorithm, seeds_done, seeds_total)`` after each batch of seeds
            (in this process).

    Returns:
        A :class:`ComparisonResult`; ``.table()`` prints it, ``.save_json(path)`` saves it.

    Raises:
        ConfigurationError: an unknown algorithm (the message lists the valid ones), a
            repeated one, or a budget, seed count, base seed or process count out of range.
        BenchmarkError: an unknown data set.
        MissingDependencyError: a pygmo algorithm without pygmo installed.
    """
    dataset = get_dataset(dataset).name
    if isinstance(algorithms, str):
        algorithms = [name for name in algorithms.split(",") if name.strip()]
    names = [get_compare_algorithm(name).name for name in algorithms]
    if not names:
        raise ConfigurationError("give at least one algorithm to compare, e.g. ('random', 'rea')")
    if len(set(names)) != len(names):
        raise ConfigurationError(f"an algorithm is listed twice: {names}")
    budget = _check_int("budget (evaluations per run)", budget, 1)
    seeds = _check_int("seeds (runs per algorithm)", seeds, 1)
    base_seed = _check_int("base_seed", base_seed, 0)
    if processes is None:
        processes = os.cpu_count() or 1
    processes = _check_int("processes", processes, 1)
    processes = min(processes, seeds * len(names))
    # fail now, in this process, on anything an algorithm's construction rejects (pygmo
    # missing, a bad setting) rather than in every worker
    for name in names:
        COMPARE_ALGORITHMS[name].make(NASBench201Space(), base_seed, budget).close()
    _evaluator(dataset).evaluate_genome((0,) * 6)   # load the table before any fork

    seed_list = list(range(base_seed, base_seed + seeds))
    chunk = max(1, math.ceil(seeds / (4 * processes))) if processes > 1 else seeds
    tasks = [(name, dataset, budget, seed_list[start:start + chunk])
             for name in names for start in range(0, seeds, chunk)]
    runs: Dict[str, List[SeedRun]] = {name: [] for name in names}
    seconds = {name: 0.0 for name in names}
    started = time.perf_counter()

    def collect(name: str, chunk_runs: List[SeedRun], chunk_seconds: float) -> None:
        runs[name].extend(chunk_runs)
        seconds[name] += chunk_seconds
        if progress is not None:
            progress(name, len(runs[name]), seeds)

    if processes == 1:
        for task in tasks:
            collect(*_run_task(task))
    else:
        with _pool_context().Pool(processes) as pool:
            for outcome in pool.imap_unordered(_run_task, tasks):
                collect(*outcome)
    for name in names:
        runs[name].sort(key=lambda run: run.seed)
    wall_time = time.perf_counter() - started
    logger.info("compared %s on %s: %d seeds x %d evaluations in %.1f s", ", ".join(names),
                dataset, seeds, budget, wall_time)
    return ComparisonResult(dataset=dataset, budget=budget, base_seed=base_seed, seeds=seeds,
                            runs=runs, seconds=seconds,
                            descriptions={n: COMPARE_ALGORITHMS[n].description for n in names},
                            wall_time=wall_time, processes=processes)
