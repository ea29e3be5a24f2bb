"""nord: neural architecture search research, from a laptop to an MPI cluster.

    from nord import NeuralDescriptor, LocalEvaluator, Digits
    d = NeuralDescriptor()
    d.add_layer_sequential('conv2d', {'out_channels': 8, 'kernel_size': 3})
    d.add_layer_sequential('relu')
    result = LocalEvaluator(curator=Digits(), epochs=2).descriptor_evaluate(d)

The pure parts (descriptors, layers, errors, results, search spaces) import eagerly and
need no torch; everything else is imported on first use, so ``import nord`` works without
mpi4py, horovod or pygmo and stays fast.
"""
from nord.architecture import NeuralDescriptor, list_layers, register_layer
from nord.errors import *  # noqa: F401,F403 - the exception hierarchy is part of the API
from nord.errors import __all__ as _ERRORS
from nord.evaluators.base import Evaluator
from nord.evaluators.result import EvaluationResult
from nord.lazy import lazy_exports
from nord.search.algorithms import SearchAlgorithm, make_algorithm, register_algorithm
from nord.search.spaces import SearchSpace
from nord.version import __version__


_LAZY = {
    "NeuralNet": "nord.nn",
    "LocalEvaluator": "nord.evaluators.local",
    "NeuralEvaluator": "nord.evaluators.local",
    "DistributedEvaluator": "nord.evaluators.distributed",
    "BenchmarkEvaluator": "nord.benchmarks.nasbench201",
    "Environment": "nord.parallel",
    "DataCurator": "nord.data",
    "Digits": "nord.data",
    "MNIST": "nord.data",
    "FashionMNIST": "nord.data",
    "CIFAR10": "nord.data",
    "TensorCurator": "nord.data",
    "Journal": "nord.journal",
    "run_search": "nord.search.engine",
    "RunInfo": "nord.search.engine",
    "RunConfig": "nord.app.settings",
}

__all__ = ["NeuralDescriptor", "list_layers", "register_layer", "Evaluator", "EvaluationResult",
           "SearchSpace", "SearchAlgorithm", "make_algorithm", "register_algorithm", *_LAZY,
           *_ERRORS, "__version__"]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
