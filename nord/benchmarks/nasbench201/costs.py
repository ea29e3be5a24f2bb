"""What NAS-Bench-201 cells cost: training time, per-seed accuracies, device latencies.

A second packaged file (``data/nasbench201_costs.csv.gz``; ``data/README.md`` gives its
columns, sources and licences) holds, for the same 15,625 cells in the same index order as
the main table, what a comparison in simulated time or a hardware-aware one needs::

    from nord.benchmarks.nasbench201.costs import load_costs

    costs = load_costs()                    # read and checked once per process (~0.1 s)
    costs.train_time("cifar10")[index]      # seconds to train the cell 200 epochs on one GPU
    costs.valid_seeds("cifar100")[index]    # 200-epoch validation accuracy (%) of each seed
    costs.latency("pixel3")[index]          # inference latency in milliseconds

The file's SHA-256 is checked when it is read: a copy that differs in one byte is refused,
since every simulated time and latency would silently change with it.
"""
from __future__ import annotations

import csv
import functools
import gzip
import hashlib
import io
import logging
import os
from importlib import resources
from typing import Dict, Optional, Tuple, Union

import numpy as np

from nord.benchmarks.nasbench201.cells import N_CELLS
from nord.benchmarks.nasbench201.table import DATASETS, get_dataset
from nord.errors import BenchmarkError, CorruptDataError, MissingDataError

__all__ = ["COSTS_FILE", "COSTS_SHA256", "DEVICES", "NASBench201Costs", "load_costs",
           "read_costs", "costs_path"]

logger = logging.getLogger(__name__)

COSTS_FILE = "nasbench201_costs.csv.gz"
COSTS_SHA256 = "600375714e8f29ee30daeecf2387445a8d8f2b17956dce8c152e28296a40b3ed"
"""SHA-256 of the packaged costs file, checked at every read."""

DEVICES: Tuple[str, ...] = ("pixel3", "raspi4", "eyeriss", "fpga", "gold_6226", "titan_rtx_1",
                            "titan_rtx_256", "1080ti_1")
"""Devices with an inference latency (of the CIFAR-10 network) for every cell."""

SEEDS = 3
"""Columns of per-seed accuracies per data set; the last is empty where a cell has two."""


def _columns() -> Tuple[str, ...]:
    names = ["index"]
    for dataset in DATASETS:
        names.append(f"{dataset}_train_time_200ep_s")
        names.extend(f"{dataset}_valid_200ep_seed{seed}" for seed in range(SEEDS))
    names.extend(f"latency_ms_{device}" for device in DEVICES)
    return tuple(names)


COLUMNS = _columns()
"""The file's header, in file order."""


class NASBench201Costs:
    """The costs file's columns as read-only float64 arrays in table index order.

    Use :func:`load_costs` rather than this constructor: it reads and checks the packaged
    file once per process. Per-seed accuracies are percentages, with NaN for a missing
    third seed; times are seconds, latencies milliseconds.

    Args:
        columns: column name -> values, for every name of ``COLUMNS``.
    """

    def __init__(self, columns: Dict[str, np.ndarray]):
        self.columns: Dict[str, np.ndarray] = {}
        for name, values in columns.items():
            array = np.array(values, dtype=np.float64)
            array.flags.writeable = False
            self.columns[name] = array
        self._derived: Dict[Tuple[str, str], np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.columns["index"])

    def __repr__(self) -> str:
        return f"NASBench201Costs({len(self)} cells, devices {list(DEVICES)})"

    def train_time(self, dataset: str) -> np.ndarray:
        """Seconds to train each cell for the full 200-epoch schedule on one GPU (seed mean)."""
        return self.columns[f"{get_dataset(dataset).name}_train_time_200ep_s"]

    def valid_seeds(self, dataset: str) -> np.ndarray:
        """200-epoch validation accuracy (%) of each training seed, shape (cells, 3); NaN
        where a cell was trained with two seeds only. For CIFAR-10 the validation split is
        the benchmark's ``cifar10-valid`` one (half the training set held out)."""
        name = get_dataset(dataset).name
        key = ("valid_seeds", name)
        array = self._derived.get(key)
        if array is None:
            array = np.stack([self.columns[f"{name}_valid_200ep_seed{seed}"]
                              for seed in range(SEEDS)], axis=1)
            array.flags.writeable = False
            self._derived[key] = array
        return array

    def seed_counts(self, dataset: str) -> np.ndarray:
        """Training seeds (2 or 3) behind each cell's 200-epoch validation accuracy."""
        key = ("seed_counts", get_dataset(dataset).name)
        array = self._derived.get(key)
        if array is None:
            array = np.sum(~np.isnan(self.valid_seeds(dataset)), axis=1).astype(np.int64)
            array.flags.writeable = False
            self._derived[key] = array
        return array

    def valid_mean(self, dataset: str) -> np.ndarray:
        """200-epoch validation accuracy (%), the mean over each cell's training seeds."""
        key = ("valid_mean", get_dataset(dataset).name)
        array = self._derived.get(key)
        if array is None:
            array = np.nanmean(self.valid_seeds(dataset), axis=1)
            array.flags.writeable = False
            self._derived[key] = array
        return array

    def latency(self, device: str) -> np.ndarray:
        """Inference latency (ms) of each cell's CIFAR-10 network on ``device``.

        Raises:
            BenchmarkError: an unknown device; the message lists the valid ones.
        """
        if device not in DEVICES:
            raise BenchmarkError(
                f"NAS-Bench-201 has no latencies for device {device!r}; the devices are "
                f"{', '.join(DEVICES)}")
        return self.columns[f"latency_ms_{device}"]


def costs_path():
    """The packaged costs file, as an ``importlib.resources`` Traversable."""
    return resources.files("nord.benchmarks.nasbench201").joinpath("data").joinpath(COSTS_FILE)


def read_costs(path: Union[str, os.PathLike, None] = None,
               sha256: Optional[str] = COSTS_SHA256) -> NASBench201Costs:
    """Read and check a costs file (the packaged one by default); ``load_costs`` caches this.

    Args:
        path: a file in the packaged format; None reads nord's own copy.
        sha256: the digest the file must have (None: do not check, for a file of your own).

    Raises:
        MissingDataError: the file does not exist.
        CorruptDataError: its SHA-256 differs, or it is not a gzipped CSV of 15,625 rows with
            the expected columns.
    """
    source = costs_path() if path is None else path
    try:
        with (source.open("rb") if path is None else open(path, "rb")) as raw:
            data = raw.read()
    except (FileNotFoundError, IsADirectoryError) as error:
        raise MissingDataError(
            f"the NAS-Bench-201 costs file {str(source)!r} was not found; the packaged copy "
            f"(nord/benchmarks/nasbench201/data/{COSTS_FILE}) is installed with nord, so "
            "reinstall nord or pass the path of a copy") from error
    if sha256 is not None:
        digest = hashlib.sha256(data).hexdigest()
        if digest != sha256:
            raise CorruptDataError(
                f"the NAS-Bench-201 costs file {str(source)!r} has SHA-256 {digest}, not the "
                f"expected {sha256}: it is damaged or another version; restore it from a fresh "
                "install of nord")
    try:
        text = gzip.decompress(data).decode("utf-8")
        reader = csv.reader(io.StringIO(text, newline=""))
        header = tuple(next(reader, ()))
        rows = list(reader)
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as error:
        raise CorruptDataError(
            f"the NAS-Bench-201 costs file {str(source)!r} is not a readable gzipped CSV "
            f"({error})") from error
    if header != COLUMNS:
        raise CorruptDataError(
            f"the NAS-Bench-201 costs file {str(source)!r} has columns {list(header)}; "
            f"expected {list(COLUMNS)}")
    if len(rows) != N_CELLS or any(len(row) != len(COLUMNS) for row in rows):
        raise CorruptDataError(
            f"the NAS-Bench-201 costs file {str(source)!r} must have {N_CELLS} rows of "
            f"{len(COLUMNS)} fields")
    try:
        columns = {name: np.array([value or "nan" for value in values], dtype=np.float64)
                   for name, values in zip(COLUMNS, zip(*rows))}
    except ValueError as error:
        raise CorruptDataError(
            f"the NAS-Bench-201 costs file {str(source)!r} has a non-numeric value: "
            f"{error}") from error
    if not np.array_equal(columns["index"], np.arange(N_CELLS)):
        raise CorruptDataError(
            f"the NAS-Bench-201 costs file {str(source)!r} is not in index order")
    return NASBench201Costs(columns)


@functools.lru_cache(maxsize=None)
def _load_cached(path: Optional[str]) -> NASBench201Costs:
    costs = read_costs(path)
    logger.debug("loaded NAS-Bench-201 costs from %s", path or "the nord package")
    return costs


def load_costs(path: Union[str, os.PathLike, None] = None) -> NASBench201Costs:
    """The costs file, read and checked once per process and path, then shared.

    Args:
        path: a copy of the packaged file (it must have the same SHA-256); None (default)
            reads nord's own.
    """
    return _load_cached(None if path is None else os.path.abspath(os.fspath(path)))
