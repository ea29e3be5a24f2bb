"""NAS-Bench-201's two fidelities as a scheduler's rungs: how ``nord compare`` runs BOHB,
Hyperband and ASHA.

An algorithm that needs a scheduler (``SearchAlgorithm.schedulers``) runs on the table under
one whose two rungs are the fidelities the packaged tables hold for every data set, the
12-epoch and the 200-epoch validation accuracy: synchronous Hyperband for a budget of
evaluations or sync mode, ASHA or asynchronously promoted Hyperband in async simulated time
(:func:`scheduler_for`)::

    from nord.comparisons.fidelities import run_bracketed_seed
    run = run_bracketed_seed("bohb", "cifar10", budget=100, seed=0)   # a SeedRun

The rungs are ``eta`` apart: with ``eta = 17`` (200 / 12 = 16.7) the two fidelities are
consecutive rungs, so a bracket starts 17 candidates at 12 epochs and trains the best one on
to 200, and the other bracket trains 2 candidates to 200 from the start. A budget counts
12-epoch evaluations, as every other row of the comparison does: a run may train
``12 * budget`` epochs, a leg from 12 to 200 epochs costing 188; in simulated time
(:mod:`~nord.comparisons.anytime`) each leg costs its share of the cell's 200-epoch training
time. Details and how this differs from the NAS-Bench-201 paper's BOHB: docs/comparisons.md.
"""
from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Union

from nord.architecture.descriptor import NeuralDescriptor
from nord.benchmarks.nasbench201 import BenchmarkEvaluator, NASBench201Space
from nord.benchmarks.nasbench201.evaluator import FULL_EPOCHS
from nord.benchmarks.nasbench201.table import SEARCH_EPOCHS
from nord.comparisons.dataset_table import DatasetTable
from nord.comparisons.records import SeedRun
from nord.errors import ConfigurationError, NordError
from nord.evaluators.base import Evaluator, Leg
from nord.evaluators.result import EvaluationResult
from nord.search.algorithms.registry import make_algorithm
from nord.search.engine import run_search
from nord.search.executors import SerialExecutor
from nord.search.schedulers import Scheduler, make_scheduler

__all__ = ["ETA", "TableFidelities", "bracket_scheduler", "scheduler_for", "candidates_within",
           "run_bracketed_seed", "protocol", "BRACKETED_PROTOCOL", "ASYNC_PROTOCOL"]

ETA = 17
"""Hyperband's factor on the table: 12 * 17 >= 200, so the rungs are 12 and 200 epochs."""


class TableFidelities(Evaluator):
    """Table look-ups that "train in legs": a leg to 12 epochs answers the 12-epoch validation
    accuracy, a leg to 200 the 200-epoch one (for CIFAR-100 and ImageNet16-120 the mean over
    the costs file's training seeds); the reported figure is the 200-epoch test accuracy either
    way. Nothing is trained, so there is no checkpoint to leave or resume. Any other epoch
    count is a failed result that says which fidelities the table has."""

    trains_in_legs = True

    def __init__(self, dataset: str = "cifar10"):
        self.by_epochs = {SEARCH_EPOCHS: BenchmarkEvaluator(dataset),
                          FULL_EPOCHS: BenchmarkEvaluator(dataset, signal="valid200")}

    def describe(self):
        return {**super().describe(), "benchmark": "nasbench201",
                "dataset": self.by_epochs[SEARCH_EPOCHS].dataset,
                "fidelities": sorted(self.by_epochs)}

    def _at(self, epochs: Optional[int]) -> Optional[BenchmarkEvaluator]:
        return self.by_epochs.get(FULL_EPOCHS if epochs is None else epochs)

    def _missing(self, epochs) -> EvaluationResult:
        return EvaluationResult.failure(
            f"NAS-Bench-201's packaged tables hold the validation accuracy after "
            f"{SEARCH_EPOCHS} and {FULL_EPOCHS} epochs only, not after {epochs}")

    def evaluate_task(self, task) -> EvaluationResult:
        evaluator = self._at(task.epochs)
        if evaluator is None:
            return self._missing(task.epochs)
        result = evaluator.evaluate_task(task)
        # a promotion goes on from the 12-epoch rung: only the epochs above it are trained
        result.metrics["epochs_resumed"] = SEARCH_EPOCHS if task.resume_from else 0
        return result

    def evaluation_cost(self, result: EvaluationResult) -> float:
        """Seconds of one-GPU training a leg stands for: the cell's 200-epoch training time
        times the share of the 200 epochs the leg trained (12/200 to the first rung, as the
        other rows' 12-epoch evaluations cost; 188/200 from it to 200); what
        :class:`~nord.search.executors.SimulatedExecutor` charges."""
        if not result.ok:
            return 0.0
        full = self.by_epochs[FULL_EPOCHS]
        trained = result.epochs - int(result.metrics.get("epochs_resumed", 0))
        return full.train_cost(result.metrics["index"]) * trained / FULL_EPOCHS

    def _evaluate(self, descriptor: NeuralDescriptor, leg: Leg) -> EvaluationResult:
        evaluator = self._at(leg.epochs)
        if evaluator is None:
            return self._missing(leg.epochs)
        return evaluator.descriptor_evaluate(descriptor)


def bracket_scheduler(name: str = "hyperband") -> Scheduler:
    """The scheduler ``name`` over the table's fidelities: rungs 12 and 200 epochs."""
    return make_scheduler(name, min_epochs=SEARCH_EPOCHS, max_epochs=FULL_EPOCHS, eta=ETA)


def scheduler_for(algorithm: str, schedulers: Sequence[str], mode: str) -> str:
    """Which scheduler runs an algorithm that needs one (its ``schedulers``) in ``mode`` on
    the table: synchronous Hyperband's brackets in sync mode; in async mode ASHA where the
    algorithm names it, else Hyperband promoted asynchronously (ASHA's promotions in each
    of its two brackets: BOHB's asynchronous, promotion-based variant).

    Raises:
        ConfigurationError: an algorithm that runs under none of them in ``mode``.
    """
    if mode == "async":
        for name in ("asha", "hyperband"):
            if name in schedulers:
                return name
    elif "hyperband" in schedulers:
        return "hyperband"
    raise ConfigurationError(
        f"{algorithm} runs only under the {' or '.join(schedulers)} scheduler, which the "
        f"table's fidelities serve {'asynchronously' if mode == 'sync' else 'synchronously'} "
        "only; "
        f"got --mode {mode} (mode={mode!r}). Give --mode "
        f"{'async' if mode == 'sync' else 'sync'} (with --workers N), or leave {algorithm} out "
        "of --algorithms")


BRACKETED_PROTOCOL = (
    "ran under synchronous Hyperband over the table's 12- and 200-epoch validation accuracies "
    "(rungs 12 and 200, eta 17) and returned the best 200-epoch validation accuracy; a budget "
    "of evaluations counts 12-epoch evaluations (a 200-epoch one counts 200/12; a repeat trains "
    "in its bracket when charged, costs nothing when free), simulated time each leg's share "
    "of the 200-epoch training time (docs/comparisons.md)")
"""The protocol of an algorithm that needs a scheduler with brackets (BOHB) on the table."""


ASYNC_PROTOCOL = (
    "ran under {scheduler} over the table's 12- and 200-epoch validation accuracies (rungs 12 "
    "and 200, eta 17), was told each candidate when it first paused, and returned the best "
    "200-epoch validation accuracy reached (the incumbent: the best at the highest fidelity "
    "reached so far); each leg costs its share of the 200-epoch training time; told counts "
    "candidates (docs/comparisons.md)")
"""The protocol of such an algorithm in asynchronous simulated time."""


def protocol(schedulers: Sequence[str], mode: str) -> str:
    """What the table says of a row that ran under a scheduler in ``mode``: its protocol."""
    if mode == "sync":
        return BRACKETED_PROTOCOL
    return ASYNC_PROTOCOL.format(
        scheduler="ASHA" if "asha" in schedulers else "Hyperband promoted asynchronously "
                                                      "(ASHA's promotions in each of its two "
                                                      "brackets)")


def candidates_within(budget: int) -> int:
    """Candidates a run of ``budget`` 12-epoch evaluations can afford (``12 * budget`` epochs),
    bracket after bracket in Hyperband's order; the last bracket may be cut short. 0 when
    even one candidate trained to 200 epochs is beyond it."""
    epochs_left = SEARCH_EPOCHS * budget
    sizes = bracket_scheduler().bracket_sizes()    # [17, 2]: starting at 12, at 200
    candidates, bracket = 0, 0
    while True:
        size = sizes[bracket % len(sizes)]
        if bracket % len(sizes) == 0:               # size at 12 epochs, the best one to 200
            cost = SEARCH_EPOCHS * size + (FULL_EPOCHS - SEARCH_EPOCHS)
            affordable = min(size, (epochs_left - (FULL_EPOCHS - SEARCH_EPOCHS)) // SEARCH_EPOCHS)
        else:                                       # size at 200 epochs
            cost = FULL_EPOCHS * size
            affordable = min(size, epochs_left // FULL_EPOCHS)
        if affordable < size:
            return candidates + max(0, affordable)
        candidates += size
        epochs_left -= cost
        bracket += 1


def run_bracketed_seed(algorithm: str, dataset: Union[str, DatasetTable], budget: int, seed: int,
                       params: Optional[Mapping[str, Any]] = None,
                       repeats: str = "charge") -> SeedRun:
    """One run of ``algorithm`` under :func:`bracket_scheduler` on the table (sync mode, no
    journal). The returned architecture is the best validation accuracy at the highest
    fidelity any candidate reached (200 epochs), the first told on ties, as Hyperband returns;
    ``SeedRun.accuracy`` is its 12-epoch validation accuracy, like every other row's;
    ``evaluations`` counts 12-epoch evaluations (a 200-epoch leg counts 200/12): under
    ``repeats='charge'`` a repeat of a cell trains in the brackets as any candidate (the
    benchmark answers each query at the fidelity asked), under 'free' the cache answers it
    with the cell's first result at no epochs. ``dataset``: a name or its
    :class:`~nord.comparisons.dataset_table.DatasetTable`; ``params``: the algorithm's settings
    (default its own)."""
    table = DatasetTable.of(dataset)
    count = candidates_within(budget)
    if count == 0:
        raise ConfigurationError(
            f"--budget {budget} (budget=) allows {SEARCH_EPOCHS * budget} epochs, fewer than "
            f"the {FULL_EPOCHS} that one candidate trained to the table's highest fidelity "
            f"costs; {algorithm} needs a budget of at least {-(-FULL_EPOCHS // SEARCH_EPOCHS)}")
    told: List[tuple] = []
    executor = SerialExecutor(TableFidelities(table.name))
    executor.charges_repeats = repeats == "charge"   # this run's rule, not the class's
    summary = run_search(
        make_algorithm(algorithm, NASBench201Space(), seed=seed, **dict(params or {})),
        executor=executor, budget=count, scheduler=bracket_scheduler(), mode="sync",
        on_result=lambda progress: told.append((progress.outcome.key, progress.outcome.result.epochs,
                                                progress.outcome.result.accuracy)))
    if not told:
        raise NordError(f"the run with seed {seed} evaluated nothing; nothing to return")
    top = max(epochs for _, epochs, _ in told)
    position = max(range(len(told)), key=lambda i: (told[i][1] == top, told[i][2], -i))
    best = int(told[position][0])
    arrays, full_costs = table.arrays, table.costs("valid200")
    if repeats == "charge":   # every candidate trained its own legs
        charged = told
    else:   # each cell's legs, once: its first told result is at its highest rung
        charged = list({key: (key, epochs, accuracy) for key, epochs, accuracy
                        in reversed(told)}.values())
    paid = sum(full_costs[key] * epochs / FULL_EPOCHS for key, epochs, _ in charged)
    return SeedRun(seed=int(seed), reported_accuracy=float(arrays.reported_accuracy[best]),
                   accuracy=float(arrays.accuracy[best]), index=best, cell=table.cells[best],
                   n_params=int(arrays.n_params[best]), found_at=position + 1,
                   evaluations=round(summary.epochs_trained / SEARCH_EPOCHS),
                   unique=len({key for key, _, _ in told}), paid=float(paid),
                   repeats=len(told) - len({key for key, _, _ in told}))
