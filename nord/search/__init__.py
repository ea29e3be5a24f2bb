"""Search: spaces (genome -> descriptor), ask/tell algorithms, executors and the one engine.

    from nord.search import ConvSpace, make_algorithm, run_search
    space = ConvSpace(input_shape=(1, 8, 8))
    algorithm = make_algorithm('regularized_evolution', space, seed=0)
    summary = run_search(algorithm, evaluator, budget=50, journal='runs/rea.db')

Modules: :mod:`~nord.search.space` and :mod:`~nord.search.spaces` (search spaces),
:mod:`~nord.search.algorithm` (the ask/tell interface) and one module per algorithm,
:mod:`~nord.search.registry` (algorithms by name), :mod:`~nord.search.engine` (the loop),
:mod:`~nord.search.replay` (resuming), :mod:`~nord.search.executors` (where evaluations run).
"""
from nord.search.algorithm import Candidate, SearchAlgorithm
from nord.search.evolution import RegularizedEvolution
from nord.search.genetic import GeneticAlgorithm
from nord.search.local_search import LocalSearch
from nord.search.pygmo_adapter import PygmoAlgorithm
from nord.search.random_search import RandomSearch
from nord.search.registry import (ALGORITHMS, get_algorithm, list_algorithms, make_algorithm,
                                  register_algorithm)
from nord.search.space import SearchSpace
from nord.search.spaces import SPACES, ConvSpace, make_space

_LAZY = {  # the engine imports the journal (sqlite) and the executors: load on first use
    "run_search": "nord.search.engine",
    "RunInfo": "nord.search.engine",
    "SearchSummary": "nord.search.engine",
    "SearchProgress": "nord.search.engine",
    "SerialExecutor": "nord.search.executors",
    "MPIExecutor": "nord.search.executors",
    "ProcessPool": "nord.search.executors",
}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nord.search' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(module), name)


__all__ = ["Candidate", "SearchAlgorithm", "SearchSpace", "ConvSpace", "SPACES", "make_space",
           "RandomSearch", "RegularizedEvolution", "GeneticAlgorithm", "LocalSearch",
           "PygmoAlgorithm", "ALGORITHMS", "make_algorithm", "list_algorithms", "get_algorithm",
           "register_algorithm", *_LAZY]
