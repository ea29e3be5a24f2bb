"""NAS-Bench-201, built in: the cell codec, the packaged table, its search space and evaluator.

nord ships a compact table of the benchmark (all 15,625 cells), so evaluating an
architecture is a look-up that works offline::

    from nord.benchmarks.nasbench201 import BenchmarkEvaluator, load_table

    evaluator = BenchmarkEvaluator(dataset="cifar10")
    result = evaluator.evaluate_genome((3, 3, 4, 1, 3, 1))
    result.accuracy            # search signal: 12-epoch validation accuracy, a fraction
    result.reported_accuracy   # 200-epoch test accuracy: reported, never shown to the search

``network_to_descriptor(genome)`` is the benchmark's whole network around a cell, for nord
to build and train (``nord.nn.network.NeuralNet``).

Details (the modules, the protocol, costs): docs/benchmarks.md.
"""
from nord.benchmarks.nasbench201.cells import (CELL_FORMAT, EDGES, N_CELLS, OPS, cell_to_descriptor,
                                               cell_to_genome, check_genome, code_to_genome,
                                               descriptor_to_cell, descriptor_to_genome,
                                               genome_to_cell, genome_to_code,
                                               genome_to_descriptor, is_connected)
from nord.benchmarks.nasbench201.costs import DEVICES, NASBench201Costs, load_costs
from nord.benchmarks.nasbench201.evaluator import SIGNALS, BenchmarkEvaluator
from nord.benchmarks.nasbench201.network import (CELLS_PER_STAGE, INPUT_SHAPES,
                                                 network_to_descriptor)
from nord.benchmarks.nasbench201.space import NASBench201Space
from nord.benchmarks.nasbench201.table import (DATASETS, SEARCH_EPOCHS, BenchmarkArrays,
                                               NASBench201Table, benchmark_arrays, get_dataset,
                                               load_table, table_path)

__all__ = ["BenchmarkArrays", "BenchmarkEvaluator", "CELL_FORMAT", "CELLS_PER_STAGE", "DATASETS",
           "DEVICES", "EDGES",
           "NASBench201Costs", "NASBench201Space", "NASBench201Table", "N_CELLS", "OPS",
           "SEARCH_EPOCHS", "SIGNALS", "load_costs",
           "benchmark_arrays", "cell_to_descriptor", "cell_to_genome", "check_genome",
           "code_to_genome", "descriptor_to_cell", "descriptor_to_genome", "genome_to_cell",
           "genome_to_code", "genome_to_descriptor", "get_dataset", "INPUT_SHAPES", "is_connected",
           "load_table", "network_to_descriptor", "table_path"]
