"""BenchmarkEvaluator: NAS-Bench-201 cells evaluated by look-up in the packaged tables.

    evaluator = BenchmarkEvaluator(dataset="cifar10")
    result = evaluator.evaluate_genome((3, 3, 4, 1, 3, 1))
    result.accuracy            # search signal: 12-epoch validation accuracy, a fraction
    result.reported_accuracy   # 200-epoch test accuracy: reported, never shown to the search

    noisy = BenchmarkEvaluator("cifar100", signal="valid200", noise="seed", seed=7)
    noisy.evaluate_genome((3, 3, 4, 1, 3, 1)).accuracy   # one training seed's accuracy
    noisy.train_cost(1)                                   # seconds that signal cost to train
    noisy.latency(1, "pixel3")                            # milliseconds on a Pixel 3

Details (signals, noise, costs): docs/benchmarks.md.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from nord.benchmarks.nasbench201.cells import descriptor_to_genome, genome_to_code
from nord.benchmarks.nasbench201.costs import load_costs
from nord.benchmarks.nasbench201.space import NASBench201Space
from nord.benchmarks.nasbench201.table import (SEARCH_EPOCHS, NASBench201Table, get_dataset,
                                               load_table)
from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import BenchmarkError
from nord.evaluators.base import Evaluator
from nord.evaluators.result import EvaluationResult

__all__ = ["BenchmarkEvaluator", "SIGNALS", "NOISES", "FULL_EPOCHS", "check_signal",
           "signal_costs"]

FULL_EPOCHS = 200
"""Epochs of the benchmark's full training schedule."""

SIGNALS: Dict[str, str] = {
    "valid12": f"validation accuracy after {SEARCH_EPOCHS} epochs",
    "valid200": f"validation accuracy after {FULL_EPOCHS} epochs, mean over training seeds",
}
"""Search signals the evaluator can answer with, and what each is."""

NOISES = (None, "seed")
"""``None``: the signal itself; ``'seed'``: one training seed's value, drawn per evaluation."""

_DRAWS = 4096   # uniform draws fetched from the noise stream at a time
_NOISE_STREAM = 201


def check_signal(signal: Any, noise: Any = None) -> str:
    """``signal`` when it is one of ``SIGNALS`` and can carry ``noise``.

    Raises:
        BenchmarkError: an unknown signal or noise, or seed noise on the 12-epoch signal.
    """
    if signal not in SIGNALS:
        raise BenchmarkError(
            f"unknown NAS-Bench-201 search signal {signal!r}; valid signals are "
            + "; ".join(f"{name!r} ({text})" for name, text in SIGNALS.items()))
    if noise not in NOISES:
        raise BenchmarkError(
            f"unknown noise {noise!r}; valid values are None (the signal itself) and 'seed' "
            "(one training seed's accuracy per evaluation)")
    if noise == "seed" and signal == "valid12":
        raise BenchmarkError(
            "noise='seed' (nord compare --noise seed) needs per-seed accuracies, which "
            "NAS-Bench-201's packaged tables have for the 200-epoch validation accuracy only "
            "(the 12-epoch signal is one value per cell); use signal='valid200' (--signal "
            "valid200) with it, or no noise")
    return signal


@functools.lru_cache(maxsize=None)
def _packaged_signal(dataset: str, signal: str) -> Tuple[Tuple[float, ...], Tuple[float, ...]]:
    """The packaged tables' (signal of each cell, training seconds of that signal)."""
    costs = load_costs()
    full = costs.train_time(dataset)
    if signal == "valid12":
        values = load_table().arrays(dataset).accuracy
        seconds = full * (SEARCH_EPOCHS / FULL_EPOCHS)
    else:
        values = np.round(costs.valid_mean(dataset) / 100.0, 10)
        seconds = full
    return tuple(values.tolist()), tuple(seconds.tolist())


def signal_costs(dataset: str, signal: str = "valid12") -> Tuple[float, ...]:
    """Seconds of one-GPU training behind ``signal`` for every cell, in table index order
    (the 12-epoch signal: 12/200 of the 200-epoch time, an approximation)."""
    return _packaged_signal(get_dataset(dataset).name, check_signal(signal))[1]


@functools.lru_cache(maxsize=None)
def _packaged_seeds(dataset: str) -> Tuple[Tuple[float, ...], ...]:
    """Each cell's per-seed 200-epoch validation accuracies (fractions), 2 or 3 of them."""
    seeds = np.round(load_costs().valid_seeds(dataset) / 100.0, 10)
    return tuple(tuple(value for value in row if value == value) for row in seeds.tolist())


class BenchmarkEvaluator(Evaluator):
    """Evaluates NAS-Bench-201 cells by table look-up.

    ``descriptor_evaluate(descriptor)`` takes descriptors made by ``cell_to_descriptor`` /
    ``NASBench201Space.decode`` (any other descriptor comes back as a failed result whose
    error says why). ``query`` and ``evaluate_genome`` answer the same without building a
    descriptor: several hundred thousand look-ups per second.

    Each ``EvaluationResult`` holds:

    * ``accuracy``: the search signal (fraction; see the module docstring);
    * ``reported_accuracy``: the 200-epoch test accuracy (fraction, seed mean), which search
      algorithms must not read;
    * ``n_params``: trainable parameters of the benchmark's network for the data set
      (the table's ``params_mb`` times 10^6, plus the larger classifier of CIFAR-100 and
      ImageNet16-120: ``Dataset.params_offset``);
    * ``epochs``: 12 or 200, the signal's; ``train_time`` = ``eval_time`` = 0, since nothing
      is trained here (``train_cost`` says what the benchmark's training took);
    * ``metrics``: the benchmark index, cell string, data set and the 12-epoch test
      accuracy (fraction); with seed noise, ``training_seed``, the seed that answered;
    * ``descriptor_hash``: set by ``descriptor_evaluate``; empty from the fast paths.

    In a search over :class:`NASBench201Space` the engine hands the evaluator the cell's
    table row (the space's key), so no descriptor is ever built. An evaluator pickles small
    (for sending to MPI ranks): the packaged tables are loaded again by each process.

    Args:
        dataset: 'cifar10', 'cifar100' or 'imagenet16' (ImageNet16-120).
        table: a ``NASBench201Table``; None (default) uses the packaged one, loaded on
            first use. Signals other than 'valid12', noise and costs need the packaged one.
        signal: 'valid12' (default) or 'valid200' (``SIGNALS``).
        noise: None (default) or 'seed' (with 'valid200' only).
        seed: seeds the noise's choice of training seed (None: unpredictable).

    Raises:
        BenchmarkError: an unknown data set, signal or noise, or seed noise on 'valid12';
            the message lists the valid choices.
    """

    def __init__(self, dataset: str = "cifar10", table: Optional[NASBench201Table] = None,
                 signal: str = "valid12", noise: Optional[str] = None,
                 seed: Optional[int] = None):
        self.dataset = get_dataset(dataset).name
        self.signal = check_signal(signal, noise)
        self.noise = noise
        self.seed = seed
        self.table = table
        self._packaged = table is None
        if not self._packaged and (signal != "valid12" or noise is not None):
            raise BenchmarkError(
                f"signal={signal!r} and noise={noise!r} read nord's packaged costs file, which "
                "matches the packaged table only; leave table=None")
        self._records: Optional[List[Tuple[float, float, int, float, str]]] = None
        self._index_by_code: Tuple[int, ...] = ()
        self._signal: Optional[Tuple[float, ...]] = None
        self._seeds: Optional[Tuple[Tuple[float, ...], ...]] = None
        self._costs: Optional[Tuple[float, ...]] = None
        self._rng = (np.random.default_rng((_NOISE_STREAM, seed)) if seed is not None
            else np.random.default_rng())
        self._draws: List[float] = []

    def __repr__(self) -> str:
        extra = "" if self.signal == "valid12" else f", signal={self.signal!r}"
        extra += "" if self.noise is None else f", noise={self.noise!r}, seed={self.seed!r}"
        return f"BenchmarkEvaluator(dataset={self.dataset!r}{extra})"

    def __getstate__(self) -> Dict[str, Any]:
        # Sent to MPI ranks by pickle: leave the packaged tables behind (each process
        # loads its own copy) rather than ship megabytes per evaluator.
        state = dict(self.__dict__)
        state.update(_records=None, _index_by_code=(), _signal=None, _seeds=None, _costs=None)
        if self._packaged:
            state["table"] = None
        return state

    def _prepare(self) -> None:
        """Load the tables (once per process) and this data set's records, on first use."""
        if self.table is None:
            self.table = load_table()
        self._records = self.table.records(self.dataset)
        self._index_by_code = self.table.index_by_code
        if self.signal != "valid12":
            self._signal = _packaged_signal(self.dataset, self.signal)[0]
        if self.noise == "seed":
            self._seeds = _packaged_seeds(self.dataset)

    def query(self, key: Any) -> EvaluationResult:
        """The result of a cell given by index, cell string, genome or descriptor.

        Raises:
            BenchmarkError: the key is not a cell (the message says what is wrong).
        """
        if self._records is None:
            self._prepare()
        return self._result_at(self.table.index(key))

    def evaluate_genome(self, genome: Sequence[Any]) -> EvaluationResult:
        """The result of a genome (6 operation indices), without building a descriptor.

        Raises:
            BenchmarkError: the genome is invalid.
        """
        if self._records is None:
            self._prepare()
        return self._result_at(self._index_by_code[genome_to_code(genome)])

    def _result_at(self, index: int) -> EvaluationResult:
        """The result of table row ``index`` (after ``_prepare``)."""
        accuracy, reported, n_params, test_12, cell = self._records[index]
        metrics = {"benchmark": "nasbench201", "dataset": self.dataset, "index": index,
                   "cell": cell, "test_accuracy_12ep": test_12}
        epochs = SEARCH_EPOCHS
        if self._signal is not None:
            epochs = FULL_EPOCHS
            if self._seeds is None:
                accuracy = self._signal[index]
            else:
                seeds = self._seeds[index]
                if not self._draws:
                    self._draws = self._rng.random(_DRAWS).tolist()
                    self._draws.reverse()
                chosen = int(self._draws.pop() * len(seeds))
                accuracy = seeds[chosen]
                metrics["training_seed"] = chosen
        # the fields in their order (accuracy, loss, train_time, eval_time, n_params, epochs,
        # status, error, descriptor_hash, reported_accuracy, metrics): a third cheaper than
        # keywords, and a comparison builds one per cell it trains
        return EvaluationResult(accuracy, math.nan, 0.0, 0.0, n_params, epochs, "ok", "", "",
                                reported, metrics)

    def evaluate_task(self, task) -> EvaluationResult:
        """A search engine's task: looked up by its key when it is a NAS-Bench-201 cell (the
        key is the cell's table row), else by its descriptor."""
        if isinstance(task.space, NASBench201Space):
            if self._records is None:
                self._prepare()
            return self._result_at(task.key)
        return super().evaluate_task(task)

    # --- costs ----------------------------------------------------------------------------
    def train_cost(self, key: Any) -> float:
        """Seconds of one-GPU training behind this evaluator's signal for a cell (index,
        cell string, genome or descriptor): the 200-epoch time, times 12/200 for 'valid12'
        (an approximation; see the module docstring)."""
        if self._records is None:
            self._prepare()
        index = key if type(key) is int else self.table.index(key)
        return _packaged_signal(self.dataset, self.signal)[1][index]

    def evaluation_cost(self, result: EvaluationResult) -> float:
        """Seconds the evaluation that gave ``result`` stands for (its cell's ``train_cost``);
        what :class:`~nord.search.executors.SimulatedExecutor` charges by default."""
        costs = self._costs
        if costs is None:
            costs = self._costs = _packaged_signal(self.dataset, self.signal)[1]
        return costs[result.metrics["index"]]

    def latency(self, key: Any, device: str) -> float:
        """Inference latency (ms) of a cell's CIFAR-10 network on ``device`` (one of
        :data:`~nord.benchmarks.nasbench201.costs.DEVICES`)."""
        if self._records is None:
            self._prepare()
        return float(load_costs().latency(device)[self.table.index(key)])

    def describe(self) -> Dict[str, Any]:
        description = {**super().describe(), "benchmark": "nasbench201", "dataset": self.dataset,
                       "signal": SIGNALS[self.signal],
                       "reported": "test accuracy after 200 epochs"}
        if self.signal != "valid12":
            description["signal_name"] = self.signal
        if self.noise is not None:
            description.update(noise=self.noise, noise_seed=self.seed)
        return description

    def _evaluate(self, descriptor: NeuralDescriptor) -> EvaluationResult:
        if self._records is None:
            self._prepare()
        return self._result_at(self._index_by_code[genome_to_code(descriptor_to_genome(descriptor))])
