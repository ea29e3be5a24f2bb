"""The 2018 ``neural_nets`` package, built on nord.

    from neural_nets import NeuralDescriptor, NeuralEvaluator, NeuralNet   # after `import nord.legacy`
    from neural_nets.distributed import Environment, DistributedNeuralEvaluator
    import neural_nets.layers.layer_types                                # Flatten and the layer groups

See :mod:`nord.legacy` for what differs from the rest of nord.
"""
from .layers import *  # noqa: F401,F403 - 2018 exported parameters, types and find_layer_type here
from .local.data_curator import get_cifar10
from .distributed.data_curator import get_cifar10_distributed
from .neural_builder import NeuralNet
from .local.neural_evaluator import NeuralEvaluator
from .distributed.neural_evaluator import DistributedNeuralEvaluator
from .neural_descriptor import NeuralDescriptor
from . import layers

__all__ = ["layers", "NeuralNet", "NeuralEvaluator", "NeuralDescriptor",
           "DistributedNeuralEvaluator", "get_cifar10", "get_cifar10_distributed"]
