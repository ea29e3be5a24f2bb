"""Search: spaces (genome -> descriptor), ask/tell algorithms, executors and the one engine.

    from nord.search import ConvSpace, make_algorithm, make_scheduler, run_search
    space = ConvSpace(input_shape=(1, 8, 8))
    algorithm = make_algorithm('regularized_evolution', space, seed=0)
    summary = run_search(algorithm, evaluator, budget=50, journal='runs/rea.db')
    scheduler = make_scheduler('asha', min_epochs=1, max_epochs=9)   # early stopping

Rooms: :mod:`~nord.search.spaces`, :mod:`~nord.search.algorithms`,
:mod:`~nord.search.schedulers` (early stopping), :mod:`~nord.search.executors` (where
evaluations run) and :mod:`~nord.search.engine` (the loop, resuming, legs of training).
"""
from nord.lazy import lazy_exports
from nord.search.algorithms import (ALGORITHMS, Candidate, GeneticAlgorithm, LocalSearch,
                                    PygmoAlgorithm, RandomSearch, RegularizedEvolution,
                                    SearchAlgorithm, get_algorithm, list_algorithms,
                                    make_algorithm, register_algorithm)
from nord.search.schedulers import list_schedulers, make_scheduler, register_scheduler
from nord.search.spaces import (SPACES, ConvSpace, SearchSpace, list_spaces, make_space,
                                register_space)

_LAZY = {  # the engine imports the journal (sqlite) and the executors: load on first use
    "run_search": "nord.search.engine",
    "Limits": "nord.search.engine",
    "Training": "nord.search.engine",
    "Reporting": "nord.search.engine",
    "RunInfo": "nord.search.engine",
    "SearchSummary": "nord.search.engine",
    "SearchProgress": "nord.search.engine",
    "SerialExecutor": "nord.search.executors",
    "MPIExecutor": "nord.search.executors",
    "ProcessExecutor": "nord.search.executors",
    "ProcessPool": "nord.search.executors",
}

__all__ = ["Candidate", "SearchAlgorithm", "SearchSpace", "ConvSpace", "SPACES", "make_space",
           "list_spaces", "register_space",
           "RandomSearch", "RegularizedEvolution", "GeneticAlgorithm", "LocalSearch",
           "PygmoAlgorithm", "ALGORITHMS", "make_algorithm", "list_algorithms", "get_algorithm",
           "register_algorithm", "make_scheduler", "list_schedulers", "register_scheduler",
           *_LAZY]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
