"""Comparisons: many seeded runs of search algorithms on a benchmark, by evaluations or in
simulated time, single- or multi-objective, summarised as tables, curves and fronts.

    from nord.comparisons import run_comparison
    result = run_comparison("cifar10", ["random", "rea"], budget=100, seeds=20)
    print(result.table())
"""
from nord.comparisons.compare import ComparisonResult, run_comparison
from nord.comparisons.multiobjective import run_nsga2
from nord.comparisons.anytime import SimulatedSetting

__all__ = ["run_comparison", "ComparisonResult", "SimulatedSetting", "run_nsga2"]
