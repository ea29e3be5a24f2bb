"""One NAS-Bench-201 data set as a comparison reads it: resolved once, then handed on.

A comparison names its data set once, and every check, run and record after that needs the
same things of it: the look-ups, the values that score a returned architecture, and the
training time behind each search signal. The name is resolved here, once, into one
:class:`DatasetTable` per data set and process, and that object is what the runners pass
down::

    from nord.comparisons.dataset_table import DatasetTable

    table = DatasetTable.of("CIFAR-100")       # BenchmarkError on an unknown data set
    table.name                                  # 'cifar100'
    table.evaluator.evaluate_genome((3, 3, 4, 1, 3, 1))   # the shared 12-epoch look-ups
    table.arrays.reported_accuracy[1], table.cells[1]     # what scores a returned cell
    table.costs("valid200").max()               # seconds behind the slowest cell's signal
"""
from __future__ import annotations

import functools
from typing import Dict, Sequence, Union

import numpy as np

from nord.benchmarks.nasbench201 import (BenchmarkArrays, BenchmarkEvaluator, get_dataset,
                                         load_table)
from nord.benchmarks.nasbench201.evaluator import signal_costs
from nord.benchmarks.nasbench201.table import Dataset

__all__ = ["DatasetTable"]


class DatasetTable:
    """What the comparisons read of one data set's table, loaded on first use.

    Get one with :meth:`of`, never by hand: there is one per data set and process, so the
    evaluator that a comparison warms up before it forks is the one its workers use, and a
    table sent to a worker process arrives as that process's own.

    Args:
        dataset: the benchmark's record of the data set (``get_dataset(name)``).
    """

    def __init__(self, dataset: Dataset):
        self.dataset = dataset
        self._costs: Dict[str, np.ndarray] = {}

    @classmethod
    def of(cls, dataset: Union[str, "DatasetTable"]) -> "DatasetTable":
        """The table of the data set named ``dataset`` ('cifar10', 'cifar100', 'imagenet16'
        or a benchmark name such as 'ImageNet16-120'); a table given is returned as it is.

        Raises:
            BenchmarkError: an unknown data set; the message lists the valid ones.
        """
        if isinstance(dataset, DatasetTable):
            return dataset
        return _table_of(get_dataset(dataset))

    def __reduce__(self):
        # by name: the receiving process answers with its own table of the data set
        return (DatasetTable.of, (self.name,))

    def __repr__(self) -> str:
        return f"DatasetTable({self.name!r})"

    @property
    def name(self) -> str:
        """'cifar10', 'cifar100' or 'imagenet16': the name results and messages use."""
        return self.dataset.name

    @functools.cached_property
    def evaluator(self) -> BenchmarkEvaluator:
        """The 12-epoch look-ups that every run on this data set shares."""
        return BenchmarkEvaluator(self.name)

    @functools.cached_property
    def arrays(self) -> BenchmarkArrays:
        """Every cell's search signal, reported accuracy and parameters, in table order."""
        return load_table().arrays(self.name)

    @property
    def cells(self) -> Sequence[str]:
        """Every cell's string, in table order."""
        return load_table().cells

    def costs(self, signal: str = "valid12") -> np.ndarray:
        """Seconds of one-GPU training behind ``signal`` for every cell, in table order
        (read-only; see :func:`~nord.benchmarks.nasbench201.evaluator.signal_costs`).

        Raises:
            BenchmarkError: an unknown signal.
        """
        costs = self._costs.get(signal)
        if costs is None:
            costs = np.asarray(signal_costs(self.name, signal), dtype=float)
            costs.setflags(write=False)
            self._costs[signal] = costs
        return costs


@functools.lru_cache(maxsize=None)
def _table_of(dataset: Dataset) -> DatasetTable:
    return DatasetTable(dataset)
