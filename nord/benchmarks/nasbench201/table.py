"""The NAS-Bench-201 table, built in: every cell's accuracies and parameters, offline.

    from nord.benchmarks import benchmark_arrays, load_table

    table = load_table()       # read once per process (about 0.1-0.2 s), then cached
    table.index((3, 3, 4, 1, 3, 1))       # 1: by genome, cell string, descriptor or index
    table.row(0)               # every column of a row, in the table's units (percent, millions)
    arrays = benchmark_arrays("cifar100")  # accuracy, reported_accuracy, n_params of all cells

The table's accuracies are percentages; nord's results hold fractions in [0, 1].
Details (the protocol, disconnected cells): docs/benchmarks.md.
"""
from __future__ import annotations

import csv
import functools
import gzip
import io
import itertools
import logging
import os
from dataclasses import dataclass
from importlib import resources
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from nord.benchmarks.nasbench201.cells import (N_CELLS, N_EDGES, OPS, cell_to_genome, code_to_genome,
                                               descriptor_to_genome, genome_to_code)
from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import BenchmarkError, CorruptDataError, MissingDataError
from nord.registry import Registry

logger = logging.getLogger(__name__)

TABLE_FILE = "nasbench201_compact.csv.gz"
COLUMNS = ("index", "arch", "params_mb",
           "cifar10_valid_12ep", "cifar10_test_12ep", "cifar10_valid_200ep", "cifar10_test_200ep",
           "cifar100_valid_12ep", "cifar100_test_12ep", "cifar100_test_200ep",
           "imagenet16_valid_12ep", "imagenet16_test_12ep", "imagenet16_test_200ep")
"""The table's header, in file order."""

SEARCH_EPOCHS = 12
"""Training epochs behind the search signal."""


@dataclass(frozen=True)
class Dataset:
    """What the table holds for one of the benchmark's data sets.

    Attributes:
        name: 'cifar10', 'cifar100' or 'imagenet16' (ImageNet16-120).
        valid_column: 12-epoch validation accuracy (%), the search signal.
        test_12ep_column: 12-epoch test accuracy (%).
        test_200ep_column: 200-epoch test accuracy (%), the reported figure.
        num_classes: classes of the data set (sets the size of the network's classifier).
    """

    name: str
    valid_column: str
    test_12ep_column: str
    test_200ep_column: str
    num_classes: int

    @property
    def params_offset(self) -> int:
        """Parameters to add to the table's CIFAR-10 count for this data set.

        The benchmark's networks differ between data sets only in the classifier,
        ``Linear(64, num_classes)``: (64 + 1) parameters per class.
        """
        return 65 * (self.num_classes - 10)


DATASETS: Dict[str, Dataset] = {
    name: Dataset(name, f"{name}_valid_12ep", f"{name}_test_12ep", f"{name}_test_200ep", classes)
    for name, classes in (("cifar10", 10), ("cifar100", 100), ("imagenet16", 120))
}


# the names NAS-Bench-201 and NATS-Bench use. 'cifar10-valid' is the benchmark's split whose
# validation accuracy is the search signal here; its architecture's reported figure is the
# test accuracy of the network trained on the whole training set ('cifar10'), the protocol
# of the published comparisons
DATASET_NAMES: Registry[Dataset] = Registry("NAS-Bench-201 data set")
for _name, _aliases in (("cifar10", ("cifar-10", "cifar10-valid")), ("cifar100", ("cifar-100",)),
                        ("imagenet16", ("ImageNet16-120",))):
    DATASET_NAMES.register(_name, DATASETS[_name], aliases=_aliases)


def get_dataset(name: str) -> Dataset:
    """The data set called ``name`` or one of its benchmark names (``ImageNet16-120``,
    ``cifar10-valid``); case, ``-`` and ``_`` do not matter.

    Raises:
        BenchmarkError: an unknown name; the message lists the valid ones.
    """
    entry = DATASET_NAMES.find(name) if isinstance(name, str) else None
    if entry is None:
        raise BenchmarkError(
            f"unknown NAS-Bench-201 data set {name!r}; valid data sets are "
            f"{', '.join(DATASET_NAMES.choices())}")
    return entry.value


class BenchmarkArrays(NamedTuple):
    """One data set's values for every cell, in table index order (read-only arrays).

    Attributes:
        accuracy: 12-epoch validation accuracy, a fraction (the search signal).
        reported_accuracy: 200-epoch test accuracy, a fraction (the reported figure).
        n_params: trainable parameters of the benchmark's network for this data set.
    """

    accuracy: np.ndarray
    reported_accuracy: np.ndarray
    n_params: np.ndarray


# --- the table ----------------------------------------------------------------------------
class NASBench201Table:
    """The benchmark table: one row per cell, addressable by index, cell string or genome.

    Use ``load_table()`` rather than this constructor: it reads the packaged file once per
    process. Columns hold the file's values and units (accuracies in percent, parameters in
    millions) as read-only float64 arrays in the benchmark's index order.

    Args:
        cells: the cell string of each row, in index order.
        columns: column name -> array of values (every column of ``COLUMNS`` but 'arch').

    Raises:
        CorruptDataError: the rows are not exactly the 15,625 cells, once each.
    """

    def __init__(self, cells: Sequence[str], columns: Mapping[str, np.ndarray]):
        self.cells: Tuple[str, ...] = tuple(cells)
        self.columns: Dict[str, np.ndarray] = {}
        for name, values in columns.items():
            array = np.array(values, dtype=np.float64)
            array.flags.writeable = False
            self.columns[name] = array
        self._index_of_cell = {cell: index for index, cell in enumerate(self.cells)}
        self.index_by_code: Tuple[int, ...] = self._code_index()
        """Row index of each genome code (see ``cells.genome_to_code``)."""
        self._records: Dict[str, List[Tuple[float, float, int, float, str]]] = {}
        self._arrays: Dict[str, BenchmarkArrays] = {}

    def _code_index(self) -> Tuple[int, ...]:
        """Genome code -> row index; checks the table holds every cell exactly once."""
        if len(self.cells) != N_CELLS or len(self._index_of_cell) != N_CELLS:
            raise CorruptDataError(
                f"the NAS-Bench-201 table must hold {N_CELLS} distinct cells; it has "
                f"{len(self.cells)} rows with {len(self._index_of_cell)} distinct cells")
        index_of_code = []
        # itertools.product counts in base 5 with the first edge most significant, which
        # is the order of genome codes
        for a, b, c, d, e, f in itertools.product(OPS, repeat=N_EDGES):
            cell = f"|{a}~0|+|{b}~0|{c}~1|+|{d}~0|{e}~1|{f}~2|"
            index = self._index_of_cell.get(cell)
            if index is None:
                raise CorruptDataError(f"the NAS-Bench-201 table has no row for cell {cell!r}")
            index_of_code.append(index)
        return tuple(index_of_code)

    def __len__(self) -> int:
        return len(self.cells)

    def __repr__(self) -> str:
        return f"NASBench201Table({len(self)} cells, columns {list(self.columns)})"

    # --- addressing ---------------------------------------------------------------------
    def index(self, key: Any) -> int:
        """The row index of a cell given as index, cell string, genome or descriptor.

        Raises:
            BenchmarkError: the key is none of these, or invalid (the message says why).
        """
        if isinstance(key, str):
            return self.index_of_cell(key)
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            return self.check_index(key)
        if isinstance(key, NeuralDescriptor):
            return self.index_by_code[genome_to_code(descriptor_to_genome(key))]
        if isinstance(key, (Sequence, np.ndarray)):
            return self.index_of_genome(key)
        raise BenchmarkError(
            f"a NAS-Bench-201 cell is given by its index (int), cell string, genome "
            f"({N_EDGES} operation indices) or NeuralDescriptor; got {type(key).__name__} "
            f"{key!r}")

    def index_of_cell(self, cell: str) -> int:
        """The row index of a cell string (raises BenchmarkError naming what is wrong)."""
        index = self._index_of_cell.get(cell)
        if index is None:
            return self.index_by_code[genome_to_code(cell_to_genome(cell))]
        return index

    def index_of_genome(self, genome: Sequence[Any]) -> int:
        """The row index of a genome (raises BenchmarkError naming what is wrong)."""
        return self.index_by_code[genome_to_code(genome)]

    def check_index(self, index: Any) -> int:
        """``index`` as an int, if it is a row index."""
        if (isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer))
                or not 0 <= index < len(self.cells)):
            raise BenchmarkError(
                f"a NAS-Bench-201 index is an int in 0..{len(self.cells) - 1}; got {index!r}")
        return int(index)

    def cell(self, key: Any) -> str:
        """The cell string of a row (key: as for ``index``)."""
        return self.cells[self.index(key)]

    def genome(self, key: Any) -> Tuple[int, ...]:
        """The genome of a row (key: as for ``index``)."""
        return cell_to_genome(self.cells[self.index(key)])

    @functools.cached_property
    def genomes(self) -> np.ndarray:
        """All genomes, shape (15625, 6), in index order (read-only)."""
        genomes = np.zeros((len(self.cells), N_EDGES), dtype=np.int8)
        for code, index in enumerate(self.index_by_code):
            genomes[index] = code_to_genome(code)
        genomes.flags.writeable = False
        return genomes

    # --- values -------------------------------------------------------------------------
    def column(self, name: str) -> np.ndarray:
        """One column in the file's units (read-only array, index order)."""
        if name not in self.columns:
            raise BenchmarkError(
                f"the NAS-Bench-201 table has no column {name!r}; its columns are "
                f"{', '.join(self.columns)}")
        return self.columns[name]

    def row(self, key: Any) -> Dict[str, Any]:
        """Every column of one row, in the file's units, with its cell string as 'arch'."""
        index = self.index(key)
        row = {"index": index, "arch": self.cells[index]}
        row.update((name, float(values[index])) for name, values in self.columns.items()
                   if name != "index")
        return row

    def arrays(self, dataset: str) -> BenchmarkArrays:
        """One data set's search signal, reported accuracy and parameters, for all cells.

        Accuracies are fractions; parameter counts are those of the data set's network
        (the table's CIFAR-10 count plus ``Dataset.params_offset``).
        """
        spec = get_dataset(dataset)
        arrays = self._arrays.get(spec.name)
        if arrays is None:
            n_params = (np.rint(self.columns["params_mb"] * 1e6).astype(np.int64)
                + spec.params_offset)
            arrays = BenchmarkArrays(_fraction(self.columns[spec.valid_column]),
                                     _fraction(self.columns[spec.test_200ep_column]), n_params)
            for array in arrays:
                array.flags.writeable = False
            self._arrays[spec.name] = arrays
        return arrays

    def records(self, dataset: str) -> List[Tuple[float, float, int, float, str]]:
        """Per row, as plain Python values for fast scalar look-ups: (12-epoch validation
        accuracy, 200-epoch test accuracy, parameters, 12-epoch test accuracy, cell string),
        accuracies as fractions. Built once per data set."""
        spec = get_dataset(dataset)
        records = self._records.get(spec.name)
        if records is None:
            arrays = self.arrays(spec.name)
            records = list(zip(arrays.accuracy.tolist(), arrays.reported_accuracy.tolist(),
                               arrays.n_params.tolist(),
                               _fraction(self.columns[spec.test_12ep_column]).tolist(),
                               self.cells))
            self._records[spec.name] = records
        return records


def _fraction(percent: np.ndarray) -> np.ndarray:
    """Percentages -> fractions, rounded so that 82.834 % reads 0.82834 rather than
    0.8283400000000001 (the table has at most 4 decimals)."""
    return np.round(percent / 100.0, 10)


def table_path():
    """The packaged table file, as an ``importlib.resources`` Traversable (a path on disk
    for ordinary installs; open it with ``.open('rb')``)."""
    return resources.files("nord.benchmarks.nasbench201").joinpath("data").joinpath(TABLE_FILE)


def read_table(path: Union[str, os.PathLike, None] = None) -> NASBench201Table:
    """Read a table file (the packaged one by default); ``load_table`` caches this.

    Raises:
        MissingDataError: the file does not exist.
        CorruptDataError: the file is not a gzipped CSV with the expected columns and rows.
    """
    source = table_path() if path is None else path
    try:
        opened = source.open("rb") if path is None else open(path, "rb")
    except (FileNotFoundError, IsADirectoryError) as error:
        raise MissingDataError(
            f"the NAS-Bench-201 table {str(source)!r} was not found; the packaged copy "
            f"(nord/benchmarks/nasbench201/data/{TABLE_FILE}) is installed with nord, so reinstall nord "
            "or pass the path of a copy") from error
    try:
        with opened as raw, gzip.GzipFile(fileobj=raw) as unzipped:
            reader = csv.reader(io.TextIOWrapper(unzipped, encoding="utf-8", newline=""))
            header = tuple(next(reader, ()))
            rows = list(reader)
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as error:
        raise CorruptDataError(
            f"the NAS-Bench-201 table {str(source)!r} is not a readable gzipped CSV "
            f"({error}); restore it from a fresh install of nord") from error
    if header != COLUMNS:
        raise CorruptDataError(
            f"the NAS-Bench-201 table {str(source)!r} has columns {list(header)}; expected "
            f"{list(COLUMNS)}")
    if any(len(row) != len(COLUMNS) for row in rows):
        bad = next(number for number, row in enumerate(rows, 2) if len(row) != len(COLUMNS))
        raise CorruptDataError(
            f"the NAS-Bench-201 table {str(source)!r}: line {bad} does not have "
            f"{len(COLUMNS)} fields")
    values = list(zip(*rows)) if rows else [()] * len(COLUMNS)
    arch = COLUMNS.index("arch")
    try:
        columns = {name: np.array(values[position], dtype=np.float64)
                   for position, name in enumerate(COLUMNS) if position != arch}
    except ValueError as error:
        raise CorruptDataError(
            f"the NAS-Bench-201 table {str(source)!r} has a non-numeric value: {error}") from error
    if not np.array_equal(columns["index"], np.arange(len(rows))):
        raise CorruptDataError(
            f"the NAS-Bench-201 table {str(source)!r} is not in index order 0..{len(rows) - 1}")
    return NASBench201Table(values[arch], columns)


@functools.lru_cache(maxsize=None)
def _load_cached(path: Optional[str]) -> NASBench201Table:
    table = read_table(path)
    logger.debug("loaded NAS-Bench-201 table from %s", path or "the nord package")
    return table


def load_table(path: Union[str, os.PathLike, None] = None) -> NASBench201Table:
    """The benchmark table, read once per process and path and then shared.

    Args:
        path: a table file in the packaged format; None (default) reads nord's own copy.
    """
    return _load_cached(None if path is None else os.path.abspath(os.fspath(path)))


def benchmark_arrays(dataset: str = "cifar10") -> BenchmarkArrays:
    """The search signal, reported accuracy and parameter count of all 15,625 cells.

    For vectorised work (exact Pareto fronts, algorithm comparisons): index ``i`` of each
    array is the cell ``load_table().cells[i]``. Accuracies are fractions.
    """
    return load_table().arrays(dataset)


__all__ = ["BenchmarkArrays", "COLUMNS", "DATASETS", "Dataset", "NASBench201Table",
           "SEARCH_EPOCHS", "benchmark_arrays", "get_dataset", "load_table", "read_table",
           "table_path"]
