"""The packaged table of nord's data-free zero-cost proxies of NAS-Bench-201 cells.

    from nord.benchmarks.nasbench201.proxy_table import load_proxies

    proxies = load_proxies()
    proxies.score("cifar10", "synflow")     # one value per cell, in table index order
    proxies.seconds("cifar10")              # what each synflow evaluation took (CPU seconds)
    proxies.computed                        # cells the table holds (NaN rows elsewhere)

The file is made by ``scripts/nasbench201_proxies.py`` with ``nord.nn.proxies`` (seed 0): the
values a ``ZeroCostEvaluator`` gives for each cell's benchmark network. A table that holds
only part of the space (the script was stopped) has NaN for the other cells; the cells it
holds are a uniform sample, since the script takes them in a seeded random order.
Details (how it was made, its agreement with published scores): docs/proxies.md.
"""
from __future__ import annotations

import csv
import functools
import gzip
import io
import os
from importlib import resources
from typing import Dict, Union

import numpy as np

from nord.benchmarks.nasbench201.cells import N_CELLS
from nord.benchmarks.nasbench201.table import DATASETS, get_dataset
from nord.errors import BenchmarkError, CorruptDataError, MissingDataError

PROXY_TABLE_FILE = "nasbench201_proxies.csv.gz"
TABLE_PROXIES = ("synflow", "params", "flops")
"""The proxies the table holds: the data-free ones (a data-dependent proxy depends on the
images of the batch, which nord does not ship)."""
COLUMNS = ("index",) + tuple(f"{dataset}_{column}" for dataset in DATASETS
                             for column in TABLE_PROXIES + ("synflow_seconds",))
"""The file's header, in file order."""


class NASBench201Proxies:
    """The proxy table's columns as read-only float64 arrays of all 15,625 cells in table
    index order, NaN for cells it does not hold. Use :func:`load_proxies`.

    Args:
        columns: column name -> values (every name of ``COLUMNS`` but 'index'), full length.
    """

    def __init__(self, columns: Dict[str, np.ndarray]):
        self.columns = {}
        for name, values in columns.items():
            array = np.array(values, dtype=np.float64)
            array.flags.writeable = False
            self.columns[name] = array
        computed = ~np.isnan(self.columns[COLUMNS[1]])
        computed.flags.writeable = False
        self.computed = computed

    def __len__(self) -> int:
        """Cells the table holds."""
        return int(self.computed.sum())

    def __repr__(self) -> str:
        return f"NASBench201Proxies({len(self)} of {N_CELLS} cells, {list(TABLE_PROXIES)})"

    def score(self, dataset: str, proxy: str) -> np.ndarray:
        """The proxy's score of each cell's network for ``dataset`` (NaN where not computed).

        Raises:
            BenchmarkError: an unknown data set, or a proxy the table does not hold.
        """
        if proxy not in TABLE_PROXIES:
            raise BenchmarkError(
                f"the NAS-Bench-201 proxy table holds {', '.join(TABLE_PROXIES)}, not "
                f"{proxy!r}; a proxy that needs data is computed by ZeroCostEvaluator on your "
                "own images")
        return self.columns[f"{get_dataset(dataset).name}_{proxy}"]

    def seconds(self, dataset: str) -> np.ndarray:
        """Seconds that building each cell's network and scoring it with synflow took, on
        the machine that made the table (docs/proxies.md says which)."""
        return self.columns[f"{get_dataset(dataset).name}_synflow_seconds"]


def proxy_table_path():
    """The packaged proxy table, as an ``importlib.resources`` Traversable."""
    return (resources.files("nord.benchmarks.nasbench201").joinpath("data")
            .joinpath(PROXY_TABLE_FILE))


def read_proxies(path: Union[str, os.PathLike, None] = None) -> NASBench201Proxies:
    """Read a proxy table (the packaged one by default); ``load_proxies`` caches this.

    Raises:
        MissingDataError: the file does not exist.
        CorruptDataError: not a gzipped CSV with the expected columns and cell indices.
    """
    source = proxy_table_path() if path is None else path
    try:
        with (source.open("rb") if path is None else open(path, "rb")) as raw:
            data = raw.read()
    except (FileNotFoundError, IsADirectoryError) as error:
        raise MissingDataError(
            f"the NAS-Bench-201 proxy table {str(source)!r} was not found; make it with "
            "scripts/nasbench201_proxies.py, or reinstall nord") from error
    try:
        reader = csv.reader(io.StringIO(gzip.decompress(data).decode("utf-8"), newline=""))
        header = tuple(next(reader, ()))
        rows = list(reader)
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as error:
        raise CorruptDataError(
            f"the NAS-Bench-201 proxy table {str(source)!r} is not a readable gzipped CSV "
            f"({error})") from error
    if header != COLUMNS or any(len(row) != len(COLUMNS) for row in rows):
        raise CorruptDataError(
            f"the NAS-Bench-201 proxy table {str(source)!r} must have the columns "
            f"{list(COLUMNS)} in every row; its header is {list(header)}")
    try:
        values = np.array(rows, dtype=np.float64).reshape(len(rows), len(COLUMNS))
    except ValueError as error:
        raise CorruptDataError(
            f"the NAS-Bench-201 proxy table {str(source)!r} has a non-numeric value: "
            f"{error}") from error
    indices = values[:, 0].astype(np.int64)
    if (len(np.unique(indices)) != len(indices) or (indices < 0).any()
            or (indices >= N_CELLS).any()):
        raise CorruptDataError(
            f"the NAS-Bench-201 proxy table {str(source)!r} must hold each cell index in "
            f"[0, {N_CELLS - 1}] at most once")
    columns = {}
    for position, name in enumerate(COLUMNS[1:], 1):
        column = np.full(N_CELLS, np.nan)
        column[indices] = values[:, position]
        columns[name] = column
    return NASBench201Proxies(columns)


@functools.lru_cache(maxsize=None)
def _load_cached(path):
    return read_proxies(path)


def load_proxies(path: Union[str, os.PathLike, None] = None) -> NASBench201Proxies:
    """The proxy table, read once per process and path, then shared.

    Args:
        path: a file in the packaged format; None (default) reads nord's own.
    """
    return _load_cached(None if path is None else os.path.abspath(os.fspath(path)))
