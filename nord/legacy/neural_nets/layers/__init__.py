"""The 2018 ``neural_nets.layers`` package: parameter tables, layer groups, ``find_layer_type``.

    from neural_nets import layers
    layers.types['pooling']                  # the pooling classes
    layers.parameters['pooling']['stride']   # int
    layers.find_layer_type(torch.nn.Linear)  # 'linear'
"""
from .layer_parameters import layer_parameters as parameters
from .layer_types import find_layer_type
from .layer_types import layer_types as types

__all__ = ["parameters", "types", "find_layer_type"]
