"""NAS-Bench-201, built in: the cell codec, the packaged table, its search space and evaluator.

nord ships a compact table of the benchmark (all 15,625 cells; ``data/README.md`` gives its
columns, sources and licences), so evaluating an architecture is a look-up that works
offline::

    from nord.benchmarks.nasbench201 import (BenchmarkEvaluator, NASBench201Space,
                                             benchmark_arrays, load_table)

    evaluator = BenchmarkEvaluator(dataset="cifar10")
    result = evaluator.evaluate_genome((3, 3, 4, 1, 3, 1))
    result.accuracy            # search signal: 12-epoch validation accuracy, a fraction
    result.reported_accuracy   # 200-epoch test accuracy: reported, never shown to the search
    table = load_table()       # read once per process (about 0.1-0.2 s), then cached
    table.index((3, 3, 4, 1, 3, 1))       # by genome, cell string, descriptor or index

A second packaged file holds what each cell costs: its training time, the 200-epoch
validation accuracy of each training seed and its inference latency on eight devices::

    costs = load_costs()                   # checked by SHA-256, read once per process
    costs.train_time("cifar10")            # seconds of 200-epoch training, every cell

Modules, each building on the ones before: :mod:`~.cells` (genome <-> cell string <->
descriptor, pure), :mod:`~.table` (the table and its data sets), :mod:`~.costs` (training
times, per-seed accuracies, latencies), :mod:`~.space` (the search space, whose key of a
genome is its table row) and :mod:`~.evaluator` (look-ups, with a choice of signal and
noise).

The protocol is that of the published comparisons: search algorithms see only the cheap
12-epoch validation accuracy; the architecture they return is judged by its 200-epoch test
accuracy. The table's accuracies are percentages; nord's results hold fractions in [0, 1].
"""
from nord.benchmarks.nasbench201.cells import (CELL_FORMAT, EDGES, N_CELLS, OPS, cell_to_descriptor,
                                               cell_to_genome, check_genome, code_to_genome,
                                               descriptor_to_cell, descriptor_to_genome,
                                               genome_to_cell, genome_to_code,
                                               genome_to_descriptor, is_connected)
from nord.benchmarks.nasbench201.costs import DEVICES, NASBench201Costs, load_costs
from nord.benchmarks.nasbench201.evaluator import SIGNALS, BenchmarkEvaluator
from nord.benchmarks.nasbench201.space import NASBench201Space
from nord.benchmarks.nasbench201.table import (DATASETS, SEARCH_EPOCHS, BenchmarkArrays,
                                               NASBench201Table, benchmark_arrays, get_dataset,
                                               load_table, table_path)

__all__ = ["BenchmarkArrays", "BenchmarkEvaluator", "CELL_FORMAT", "DATASETS", "DEVICES", "EDGES",
           "NASBench201Costs", "NASBench201Space", "NASBench201Table", "N_CELLS", "OPS",
           "SEARCH_EPOCHS", "SIGNALS", "load_costs",
           "benchmark_arrays", "cell_to_descriptor", "cell_to_genome", "check_genome",
           "code_to_genome", "descriptor_to_cell", "descriptor_to_genome", "genome_to_cell",
           "genome_to_code", "genome_to_descriptor", "get_dataset", "is_connected", "load_table",
           "table_path"]
