"""Search on NAS-Bench-201 in simulated time: workers, a time budget, anytime curves.

The pieces behind ``nord compare --time-budget S --workers N``: a run of one algorithm and
seed through the search engine on a ``SimulatedExecutor``, and the curves that compare such
runs::

    from nord.comparisons.anytime import SimulatedSetting, run_simulated_seed

    setting = SimulatedSetting.for_dataset("cifar10", workers=8, mode="async")
    run = run_simulated_seed("rea", "cifar10", seed=0, setting=setting)
    run.reported_accuracy, run.evaluations, run.simulated_time, run.utilisation
    run.curve          # [(simulated seconds, reported accuracy of the incumbent), ...]

Details (what a run costs, the incumbent, data-parallel workers, budgets): docs/comparisons.md.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from nord.benchmarks.nasbench201 import N_CELLS, BenchmarkEvaluator, NASBench201Space, get_dataset
from nord.benchmarks.nasbench201.evaluator import check_signal
from nord.checks import check_int
from nord.comparisons.dataset_table import DatasetTable
from nord.comparisons.fidelities import TableFidelities, bracket_scheduler, scheduler_for
from nord.comparisons.records import SeedRun, SimulatedRun, incumbent_curve
from nord.errors import ConfigurationError
from nord.report.plots import new_figure, save_figure
from nord.search.engine import MODES, run_search
from nord.search.executors import SimulatedExecutor, TimeBudgetSpent
from nord.search.algorithms.registry import make_algorithm

__all__ = ["TIME_BUDGETS", "SimulatedSetting", "SimulatedRun", "run_simulated_seed",
           "incumbent_curve", "curve_on_grid", "anytime_curves", "time_to_reach",
           "write_anytime_plot"]

TIME_BUDGETS: Dict[str, float] = {"cifar10": 20_000.0, "cifar100": 40_000.0,
                                  "imagenet16": 120_000.0}
"""Simulated seconds per run, per data set: the budgets of the NATS-Bench paper."""

EVALUATION_CAP = 10_000_000
STALL_WINDOW = 10_000
STALL_NEW = 100
"""A simulated run ends where its clock stands once fewer than ``STALL_NEW`` of its last
``STALL_WINDOW`` results were new cells: the cache answers a repeat at no simulated time, so
an algorithm that proposes almost only cells it has evaluated (a converged policy) would
otherwise take millions of results to reach its time budget. Runs that evaluate fewer than
``STALL_WINDOW`` results in all (random search and REA at the NATS-Bench budgets) are never
ended by it."""
"""Results told per run at most: a safeguard for runs that repeat cached cells forever."""


@dataclass(frozen=True)
class SimulatedSetting:
    """How runs are simulated (see the module docstring).

    Attributes:
        time_budget: simulated seconds per run.
        workers: GPUs of the simulated cluster (at most one network per cell of the
            benchmark side by side: ``workers // train_workers <= N_CELLS``).
        mode: 'sync' (generations wait for their slowest network) or 'async'.
        signal: 'valid12' or 'valid200' (:data:`~nord.benchmarks.nasbench201.SIGNALS`).
        noise: None, or 'seed' (one training seed's accuracy per evaluation; 'valid200').
        overhead: seconds added to every evaluation.
        train_workers: workers that train each network together (1: one network each).
        scaling_efficiency: the speed-up of ``k`` workers on one network is
            ``k * scaling_efficiency`` (only used when ``train_workers > 1``).
    """

    time_budget: float
    workers: int = 1
    mode: str = "async"
    signal: str = "valid12"
    noise: Optional[str] = None
    overhead: float = 0.0
    train_workers: int = 1
    scaling_efficiency: float = 1.0

    @classmethod
    def for_dataset(cls, dataset: str, time_budget: Optional[float] = None, **settings
                    ) -> "SimulatedSetting":
        """A setting with the data set's NATS-Bench time budget unless one is given."""
        dataset = get_dataset(dataset).name
        return cls(time_budget=TIME_BUDGETS[dataset] if time_budget is None else time_budget,
                   **settings)

    def check(self, dataset: Union[str, DatasetTable]) -> "SimulatedSetting":
        """This setting, if every value is in range for ``dataset`` (a name or its
        :class:`~nord.comparisons.dataset_table.DatasetTable`).

        Raises:
            ConfigurationError: a value out of range, naming it and the fix; in particular a
                time budget too small for the slowest cell's evaluation (so that every run
                tells at least one result).
            BenchmarkError: an unknown data set, signal or noise.
        """
        table = DatasetTable.of(dataset)
        check_int(self.workers, "--workers", 1, rule="an integer >= 1 (workers=, the GPUs of "
                                                      "the simulated cluster)")
        check_int(self.train_workers, "train_workers (workers training each network)", 1)
        if self.workers % self.train_workers:
            raise ConfigurationError(
                f"workers ({self.workers}) must be a multiple of train_workers "
                f"({self.train_workers}), the size of each group that trains one network")
        if self.virtual_workers > N_CELLS:
            raise ConfigurationError(
                f"--workers (workers=) must be at most {N_CELLS * self.train_workers:,}: "
                f"{N_CELLS:,} networks trained side by side, the number of cells in "
                f"NAS-Bench-201; a worker more could never have a cell of its own to train "
                f"(each architecture is trained once); got {self.workers:,}")
        if self.mode not in MODES:
            raise ConfigurationError(
                f"--mode must be one of {', '.join(MODES)} (mode=); got {self.mode!r}")
        check_signal(self.signal, self.noise)
        if not _seconds(self.overhead) or self.overhead < 0:
            raise ConfigurationError(
                f"--overhead must be a finite number of seconds >= 0 (overhead=); got "
                f"{_shown(self.overhead)}")
        if not _seconds(self.time_budget) or self.time_budget <= 0:
            raise ConfigurationError(
                f"--time-budget must be a positive number of simulated seconds (time_budget=); "
                f"got {_shown(self.time_budget)}. Default: {TIME_BUDGETS[table.name]:,.0f} for "
                f"{table.name}")
        if not (isinstance(self.scaling_efficiency, (int, float))
                and 0 < self.scaling_efficiency <= 1):
            raise ConfigurationError(
                f"scaling_efficiency must be in (0, 1] (1: k workers train a network k times "
                f"faster); got {self.scaling_efficiency!r}")
        slowest = self.cost_scale * table.costs(self.signal).max() + self.overhead
        if self.time_budget < slowest:
            raise ConfigurationError(
                f"--time-budget {self.time_budget:g} (time_budget=, simulated seconds) is too "
                f"small for one evaluation: the slowest {table.name} cell costs {slowest:,.1f} s "
                f"with signal {self.signal!r} (overhead {self.overhead:g} s included); give at "
                f"least {math.ceil(slowest)}")
        return self

    @property
    def cost_scale(self) -> float:
        """Factor on each evaluation's training time (data-parallel speed-up)."""
        if self.train_workers == 1:
            return 1.0
        return 1.0 / (self.train_workers * self.scaling_efficiency)

    def results_per_run(self, dataset: Union[str, DatasetTable]) -> float:
        """About how many results a run tells on ``dataset`` (a name or its table): its
        workers' time over the mean cost of an evaluation (repeats, which cost nothing, make it
        more; a run that stalls, fewer)."""
        costs = DatasetTable.of(dataset).costs(self.signal)
        mean = self.cost_scale * float(np.mean(costs)) + self.overhead
        return self.virtual_workers * self.time_budget / mean

    @property
    def virtual_workers(self) -> int:
        """Networks trained side by side."""
        return self.workers // self.train_workers

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def _seconds(value: Any) -> bool:
    """Whether ``value`` is a finite real number (not a bool)."""
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and math.isfinite(value))


def _shown(value: Any) -> str:
    """``value`` as a message shows it: a finite number as ``%g`` (``0``, not ``0.0``),
    anything else as its repr."""
    return f"{value:g}" if _seconds(value) else repr(value)


def simulate(algorithm, dataset: Union[str, DatasetTable], seed: int, setting: SimulatedSetting,
             stop_at: Optional[float] = None, repeats: str = "charge") -> SimulatedRun:
    """Run ``algorithm`` (an instance over NASBench201Space) on the simulated clock, on
    ``dataset`` (a name or its :class:`~nord.comparisons.dataset_table.DatasetTable`); it is
    closed afterwards. The noise of ``setting.noise`` is seeded with ``seed``. ``stop_at``: end
    the run once the incumbent's reported accuracy reaches it (a fraction). An algorithm that
    needs a scheduler (BOHB, ASHA, Hyperband) runs under it over the table's 12- and
    200-epoch fidelities (:mod:`~nord.comparisons.fidelities`; the 12-epoch signal), each leg
    costing its share of the 200-epoch training time; the incumbent is the best result at the
    highest fidelity reached so far. ``repeats``: 'charge'
    (a repeat of a cell costs its evaluation, as the benchmark charges every query) or 'free'
    (the engine's cache answers it at no simulated time; ended by the stall rule)."""
    name = DatasetTable.of(dataset).name
    schedulers = getattr(algorithm, "schedulers", None)
    bracketed = schedulers is not None   # BOHB, ASHA, Hyperband
    scheduler = (bracket_scheduler(scheduler_for(algorithm.name, schedulers, setting.mode))
                 if bracketed else None)
    evaluator = TableFidelities(name) if bracketed else BenchmarkEvaluator(
        name, signal=setting.signal, noise=setting.noise, seed=seed if setting.noise else None)
    cost = None
    if setting.cost_scale != 1.0:
        scale, base = setting.cost_scale, evaluator.evaluation_cost
        cost = lambda result: base(result) * scale   # noqa: E731 - a one-line cost
    indices: List[int] = []
    accuracies: List[float] = []
    times: List[float] = []
    epochs: List[int] = []
    told_cells: List[int] = []
    # In async mode a candidate is told when it first pauses, so its later rungs reach the
    # incumbent from the legs themselves, as each ends; in sync mode from the results told.
    by_legs = bracketed and setting.mode == "async"

    def leg_ended(done) -> None:
        result = done.result
        if result.ok:
            indices.append(result.metrics["index"])
            accuracies.append(result.accuracy)
            times.append(done.ended)
            epochs.append(result.epochs)

    executor = SimulatedExecutor(evaluator, workers=setting.virtual_workers, cost=cost,
                                 overhead=setting.overhead, time_budget=setting.time_budget,
                                 repeats=repeats, on_complete=leg_ended if by_legs else None)
    add_index, add_accuracy, add_time = indices.append, accuracies.append, times.append
    if by_legs:
        add_index = told_cells.append
        add_accuracy = add_time = lambda value: None   # noqa: E731 - the legs trace them
    now = executor.now
    best = [-math.inf]
    # The stall rule without a window per result: fewer than STALL_NEW new cells among the
    # last STALL_WINDOW results exactly when the STALL_NEW-th latest new cell came
    # STALL_WINDOW or more results ago; so only new cells are remembered (their positions),
    # and a repeat costs a comparison.
    latest_new = deque(maxlen=STALL_NEW)   # positions (1-based) of the latest new cells
    # [results at which the run stalls, results told]; charged repeats move the clock, so
    # such a run reaches its time budget and never stalls
    stalls = repeats == "free"
    stall = [STALL_WINDOW if stalls else math.inf, 0]
    epochs_told = bracketed and not by_legs

    def told(progress) -> None:
        outcome = progress.outcome
        result = outcome.result
        add_index(outcome.key)
        add_accuracy(result.accuracy)
        add_time(now())
        if epochs_told:
            epochs.append(result.epochs)
        stall[1] += 1
        if stalls and outcome.cached_from is None:
            latest_new.append(stall[1])
            if len(latest_new) == STALL_NEW:
                stall[0] = latest_new[0] + STALL_WINDOW
        if stall[1] >= stall[0]:
            # the clock all but stands still; repeats are told without waiting for a worker,
            # so the run is ended here, as its time budget would end it
            executor.end_now()
            raise TimeBudgetSpent(setting.time_budget, now())
        if stop_at is not None and result.accuracy > best[0]:
            best[0] = result.accuracy
            if result.reported_accuracy >= stop_at:
                executor.end_now()

    try:
        run_search(algorithm, executor=executor, budget=EVALUATION_CAP, mode=setting.mode,
                   on_result=told, scheduler=scheduler)
    finally:
        algorithm.close()
    return SimulatedRun(indices, accuracies, times, executor.now(), executor.utilisation(),
                        epochs if bracketed else None, paid=executor.paid,
                        told=told_cells if by_legs else None)


def curve_on_grid(curve: Sequence[Sequence[float]], grid: np.ndarray) -> np.ndarray:
    """A run's incumbent accuracy at each time of ``grid`` (NaN before its first result)."""
    if not curve:
        return np.full(len(grid), np.nan)
    times = np.array([point[0] for point in curve])
    values = np.array([point[1] for point in curve])
    where = np.searchsorted(times, grid, side="right") - 1
    out = values[np.maximum(where, 0)]
    out[where < 0] = np.nan
    return out


def anytime_curves(curves: Sequence[Sequence[Sequence[float]]], time_budget: float,
                   points: int = 101) -> Dict[str, Any]:
    """Mean and band over seeds of the incumbent's reported accuracy (%) against simulated
    time: ``time`` (seconds, ``points`` evenly from 0 to the budget), ``mean``, ``low`` and
    ``high`` (mean -/+ one standard deviation, ddof=0) and ``runs`` (seeds with a result by
    then). Before a seed's first result it counts in none of them."""
    grid = np.linspace(0.0, float(time_budget), points)
    values = np.array([curve_on_grid(curve, grid) for curve in curves]) * 100
    have = ~np.isnan(values)
    runs = have.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.where(have, values, 0.0).sum(axis=0)
        mean = np.where(runs > 0, total / np.maximum(runs, 1), np.nan)
        spread = np.where(have, (values - mean) ** 2, 0.0).sum(axis=0)
        std = np.where(runs > 0, np.sqrt(spread / np.maximum(runs, 1)), np.nan)
    return {"time": grid.tolist(), "mean": mean.tolist(), "low": (mean - std).tolist(),
            "high": (mean + std).tolist(), "runs": runs.astype(int).tolist()}


def time_to_reach(curve: Sequence[Sequence[float]], target: float) -> float:
    """Simulated seconds until the incumbent's reported accuracy (fraction) first reaches
    ``target``; infinity when it never does."""
    for time, value in curve:
        if value >= target:
            return float(time)
    return math.inf


def write_anytime_plot(path, curves: Mapping[str, Mapping[str, Any]], title: str,
                       hours: bool = True,
                       oneshot: Optional[Mapping[str, Mapping[str, Any]]] = None,
                       caption: Optional[str] = None):
    """A PNG of anytime curves (``{algorithm: anytime_curves(...)}``): mean and band.

    ``oneshot``: curves of weight-sharing searches (``{label: curve}``, as
    :func:`~nord.comparisons.oneshot.oneshot_curves` gives them) drawn dashed on the same
    axes, whose time is measured, not simulated; ``caption``: a note under the axes saying so.
    Drawn on a figure of its own (no ``pyplot``, no change of matplotlib's backend)."""
    scale, unit = (3600.0, "h") if hours else (1.0, "s")
    oneshot = dict(oneshot or {})
    figure = new_figure(7, 5.2 if oneshot else 4.2)
    axes = figure.add_subplot()
    for style, drawn in (("-", curves), ("--", oneshot)):
        for name, curve in drawn.items():
            time = np.asarray(curve["time"]) / scale
            mean = np.asarray(curve["mean"], dtype=float)
            line, = axes.plot(time, mean, style, label=name)
            axes.fill_between(time, np.asarray(curve["low"], dtype=float),
                              np.asarray(curve["high"], dtype=float), color=line.get_color(),
                              alpha=0.2, linewidth=0)
    if oneshot:
        axes.set_xlabel(f"time ({unit}): simulated (solid), measured by the search (dashed)")
        axes.set_ylabel("200-epoch test accuracy in the table (%)")
    else:
        axes.set_xlabel(f"simulated time ({unit})")
        axes.set_ylabel("test accuracy of the incumbent (%)")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend()
    if caption:
        figure.supxlabel(caption, fontsize=7, ha="left", x=0.01)
    finite = [value for curve in curves.values() for value in curve["low"]
              if value is not None and math.isfinite(value)]
    if finite:
        top = max(value for curve in (*curves.values(), *oneshot.values())
                  for value in curve["high"] if value is not None and math.isfinite(value))
        bottom = max(min(finite), top - 6)
        below = [value for curve in oneshot.values() for value in curve["low"]
                 if value is not None and math.isfinite(value)]
        if below:   # a one-shot method far below the black-box ones stays in sight
            bottom = min(bottom, min(below) - 0.5)
        axes.set_ylim(bottom, top + 0.3)
    save_figure(figure, path)
    return path


def run_simulated_seed(algorithm: str, dataset: Union[str, DatasetTable], seed: int,
                       setting: SimulatedSetting,
                       params: Optional[Mapping[str, Any]] = None,
                       stop_at: Optional[float] = None, repeats: str = "charge"):
    """One simulated run of the algorithm named ``algorithm`` with ``seed`` on ``dataset`` (a
    name or its :class:`~nord.comparisons.dataset_table.DatasetTable`; ``params``: the
    algorithm's settings; ``stop_at``: end early once the incumbent's reported accuracy
    reaches it; ``repeats``: how a repeat of a cell is charged, see :func:`simulate`); a
    :class:`~nord.comparisons.records.SeedRun` with its simulated time, utilisation and
    incumbent curve."""
    table = DatasetTable.of(dataset)
    bound = math.ceil(setting.virtual_workers * setting.time_budget
                      / max(1e-9, setting.cost_scale * table.costs(setting.signal).min()))
    instance = make_algorithm(algorithm, NASBench201Space(), seed=seed, budget=bound,
                              **dict(params or {}))
    run = simulate(instance, table, seed, setting, stop_at, repeats)
    return SeedRun.from_simulated(seed, run, table)
