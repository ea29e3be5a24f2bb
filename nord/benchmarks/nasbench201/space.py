"""NASBench201Space: the NAS-Bench-201 cell as a search space, identified by its table row.

    space = NASBench201Space()
    genome = space.sample(np.random.default_rng(0))    # 6 operation indices
    key, _ = space.identify(genome)                    # the table's row: no descriptor built
    descriptor = space.decode(genome)                  # for real training of the cell

The space registers itself as ``'nasbench201'`` (``make_space('nasbench201')``, ``nord run
--space nasbench201``); setup.py's ``nord.spaces`` entry point lets the catalogue find it
without this module being imported first.
"""
from __future__ import annotations

from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple

import numpy as np

from nord.benchmarks.nasbench201.cells import (DEFAULT_CHANNELS, N_EDGES, N_OPS, cell_to_descriptor,
                                               cell_to_genome, check_genome, code_to_genome,
                                               genome_to_cell, genome_to_code, path_encoding)
from nord.benchmarks.nasbench201.table import load_table
from nord.architecture.descriptor import NeuralDescriptor
from nord.checks import check_int
from nord.search.spaces.base import SearchSpace
from nord.search.spaces.registry import register_space

__all__ = ["NASBench201Space"]


_ROWS: List[Tuple[int, ...]] = []


def _rows() -> Tuple[int, ...]:
    """The packaged table's row of each genome code, kept at module level (a space that
    travels to another process carries no copy)."""
    if not _ROWS:
        _ROWS.append(load_table().index_by_code)
    return _ROWS[0]


_GENOMES: Dict[Tuple[int, ...], Tuple[Tuple[int, ...], int]] = {}
"""Each genome of the space -> (itself, its table row), filled when a genome is first
identified: then one look-up normalises a genome and another identifies the very tuple that
normalising returned, where a search asks for both every time."""


def _genomes() -> Dict[Tuple[int, ...], Tuple[Tuple[int, ...], int]]:
    if not _GENOMES:
        for code, row in enumerate(_rows()):
            genome = code_to_genome(code)
            _GENOMES[genome] = (genome, row)
    return _GENOMES


class NASBench201Space(SearchSpace):
    """The NAS-Bench-201 cell space: 6 integer genes in 0..4, one operation per edge.

    Args:
        channels: output channels of the convolutions in decoded descriptors.
    """

    lower = (0,) * N_EDGES
    upper = (N_OPS - 1,) * N_EDGES
    integer = True
    categorical = True   # an edge's operation: the indices have no order

    def __init__(self, channels: int = DEFAULT_CHANNELS):
        self.channels = check_int(channels, "channels (the cell's width)", 1)

    def decode(self, genome: Sequence[Any]) -> NeuralDescriptor:
        """The cell's descriptor (see ``cell_to_descriptor``)."""
        return cell_to_descriptor(check_genome(genome), self.channels)

    def cell(self, genome: Sequence[Any]) -> str:
        """The benchmark's cell string of a genome."""
        return genome_to_cell(genome)

    def genome(self, cell_or_index: Any) -> Tuple[int, ...]:
        """The genome of a cell string or of a row index of the benchmark table."""
        if isinstance(cell_or_index, str):
            return cell_to_genome(cell_or_index)
        return load_table().genome(cell_or_index)

    def index(self, genome: Sequence[Any]) -> int:
        """The benchmark table's row index of a genome, without building a descriptor."""
        return load_table().index_by_code[genome_to_code(genome)]

    def normalise(self, genome: Sequence[Any]) -> Tuple[int, ...]:
        """The genome as a tuple of ints (a value equal to an int, such as ``2.0``, is that
        int); other values are rounded and checked as for any space of integer genes."""
        try:
            return _GENOMES[genome][0]
        except (KeyError, TypeError):   # not identified yet, not a genome as given, or a list
            return super().normalise(genome)

    def identify(self, genome: Sequence[Any]) -> Tuple[Hashable, Optional[NeuralDescriptor]]:
        """The cell's row in the benchmark table: its exact identity, found without decoding.

        Raises:
            BenchmarkError: not a genome of 6 operation indices (the message says why).
        """
        try:
            normal, row = (_GENOMES or _genomes())[genome]
            if normal is genome:   # what normalise returned: no value to check
                return row, None
        except (KeyError, TypeError):
            pass
        return _rows()[genome_to_code(genome)], None

    def path_encoding(self, genome: Sequence[Any]) -> np.ndarray:
        """The cell's paths from input to output, one 0/1 feature per possible sequence of
        operations (84; see :func:`~nord.benchmarks.nasbench201.cells.path_encoding`): what
        BANANAS's predictors read."""
        return path_encoding(genome)

    def describe(self) -> dict:
        description = super().describe()
        description.update(benchmark="nasbench201", channels=self.channels)
        return description


register_space("nasbench201", NASBench201Space, aliases=("nas-bench-201", "nats-tss"),
               description="the NAS-Bench-201 cell (table look-ups, no training)")
