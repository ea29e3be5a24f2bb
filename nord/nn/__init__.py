"""Torch: a descriptor made a module (:class:`NeuralNet`), its modules, and training steps.

    from nord.nn import NeuralNet
    net = NeuralNet(descriptor, input_shape=(3, 32, 32), num_classes=10)
"""
from nord.nn.network import NeuralNet

__all__ = ["NeuralNet"]
