"""Tabular benchmarks built into nord, and comparisons of search algorithms on them.

Comparing search algorithms by training networks costs GPU-months; a tabular benchmark
answers each evaluation by look-up. nord packages NAS-Bench-201 (:mod:`nord.benchmarks.
nasbench201`), and compares algorithms on it through the same search engine that runs real
searches (:mod:`nord.comparisons.compare`, :mod:`nord.comparisons.multiobjective`)::

    from nord.benchmarks import BenchmarkEvaluator, NASBench201Space
    from nord.comparisons.compare import run_comparison

    result = run_comparison(dataset="cifar10", algorithms="random,rea", budget=100, seeds=500)
    print(result.table())

Nothing here imports torch.
"""
from nord.benchmarks.nasbench201 import *  # noqa: F401,F403 - the benchmark is the package's API
from nord.benchmarks.nasbench201 import __all__
