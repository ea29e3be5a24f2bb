"""Search algorithms: one ask/tell interface (:class:`SearchAlgorithm`), one module per
algorithm, and the catalogue by name (:func:`make_algorithm`, :func:`register_algorithm`).

    from nord.search.algorithms import make_algorithm
    algorithm = make_algorithm("rea", space, seed=0, population_size=20)
"""
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.algorithms.evolution import RegularizedEvolution
from nord.search.algorithms.genetic import GeneticAlgorithm
from nord.search.algorithms.local_search import LocalSearch
from nord.search.algorithms.optuna_adapter import CMAES, TPE, GaussianProcessBO
from nord.search.algorithms.pygmo_adapter import PygmoAlgorithm
from nord.search.algorithms.random_search import RandomSearch
from nord.search.algorithms.reinforce import Reinforce
from nord.search.algorithms.registry import (ALGORITHMS, get_algorithm, list_algorithms,
                                             make_algorithm, register_algorithm)

__all__ = ["Candidate", "SearchAlgorithm", "RandomSearch", "RegularizedEvolution",
           "GeneticAlgorithm", "LocalSearch", "Reinforce", "PygmoAlgorithm", "TPE",
           "GaussianProcessBO", "CMAES", "ALGORITHMS", "make_algorithm",
           "list_algorithms", "get_algorithm", "register_algorithm"]
