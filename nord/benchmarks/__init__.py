"""Tabular benchmarks built into nord: NAS-Bench-201, offline, in-process.

Comparing search algorithms by training networks costs GPU-months; a tabular benchmark
answers each evaluation by look-up. nord packages the NAS-Bench-201 table (see
``nord/benchmarks/data/README.md`` for its sources and licences)::

    import numpy as np
    from nord.benchmarks import BenchmarkEvaluator, NASBench201Space

    space = NASBench201Space()
    evaluator = BenchmarkEvaluator(dataset="cifar10")
    genome = space.sample(np.random.default_rng(seed=0))
    result = evaluator.descriptor_evaluate(space.decode(genome))   # as for real training
    result = evaluator.evaluate_genome(genome)                     # the same, much faster

Modules: ``cell_space`` (genome <-> cell string <-> NeuralDescriptor, and the search space),
``nasbench201`` (the table, ``BenchmarkEvaluator``). Neither imports torch.
"""
from nord.benchmarks.cell_space import (CELL_FORMAT, EDGES, N_CELLS, OPS, NASBench201Space,
                                        cell_to_descriptor, cell_to_genome, check_genome,
                                        code_to_genome, descriptor_to_cell, descriptor_to_genome,
                                        genome_to_cell, genome_to_code, genome_to_descriptor,
                                        is_connected)
from nord.benchmarks.nasbench201 import (DATASETS, BenchmarkArrays, BenchmarkEvaluator,
                                         NASBench201Table, benchmark_arrays, get_dataset,
                                         load_table, table_path)

__all__ = ["BenchmarkArrays", "BenchmarkEvaluator", "CELL_FORMAT", "DATASETS", "EDGES",
           "NASBench201Space", "NASBench201Table", "N_CELLS", "OPS", "benchmark_arrays",
           "cell_to_descriptor", "cell_to_genome", "check_genome", "code_to_genome",
           "descriptor_to_cell", "descriptor_to_genome", "genome_to_cell", "genome_to_code",
           "genome_to_descriptor", "get_dataset", "is_connected", "load_table", "table_path"]
