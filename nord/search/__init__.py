"""Search: spaces (genome -> descriptor), ask/tell algorithms, and the one search loop.

    from nord.search import ConvSpace, make_algorithm, run_search
    space = ConvSpace(input_shape=(1, 8, 8))
    algorithm = make_algorithm('regularized_evolution', space, seed=0)
    summary = run_search(algorithm, evaluator, budget=50, journal='runs/rea.db')
"""
from nord.search.algorithm import Candidate, SearchAlgorithm
from nord.search.evolution import RegularizedEvolution
from nord.search.genetic import GeneticAlgorithm
from nord.search.pygmo_adapter import PygmoAlgorithm, PygmoProblem
from nord.search.random_search import RandomSearch
from nord.search.registry import get_algorithm, list_algorithms, make_algorithm, register_algorithm
from nord.search.space import SearchSpace
from nord.search.spaces import ConvSpace


def __getattr__(name):
    # the loop imports the journal (sqlite) and the executors: load on first use
    if name in ("run_search", "SearchSummary", "SerialExecutor"):
        from nord.search import loop
        return getattr(loop, name)
    if name == "MPIExecutor":
        from nord.search.dispatch import MPIExecutor
        return MPIExecutor
    raise AttributeError(f"module 'nord.search' has no attribute {name!r}")


__all__ = ["Candidate", "SearchAlgorithm", "SearchSpace", "ConvSpace", "RandomSearch",
           "RegularizedEvolution", "GeneticAlgorithm", "PygmoAlgorithm", "PygmoProblem",
           "make_algorithm", "list_algorithms", "get_algorithm", "register_algorithm",
           "run_search", "SearchSummary", "SerialExecutor", "MPIExecutor"]
