"""The 2018 ``neural_nets.distributed`` package: ``Environment`` and ``DistributedNeuralEvaluator``."""
from .environment import Environment
from .neural_evaluator import DistributedNeuralEvaluator

__all__ = ["Environment", "DistributedNeuralEvaluator"]
