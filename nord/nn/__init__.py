"""Torch: a descriptor made a module (:class:`NeuralNet`), its modules, training steps, and the
recipes candidates are trained with (``nord.nn.recipe``, plain data that imports no torch).

    from nord.nn import NeuralNet
    net = NeuralNet(descriptor, input_shape=(3, 32, 32), num_classes=10)

``NeuralNet`` loads torch on first use, so that a recipe can be checked without it.
"""
from nord.lazy import lazy_exports

_LAZY = {"NeuralNet": "nord.nn.network"}

__all__ = ["NeuralNet"]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
