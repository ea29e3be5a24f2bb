"""The architecture model: descriptors, their exact identity, and the layer registry (no torch).

    from nord.architecture import NeuralDescriptor, register_layer
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", {"out_channels": 8, "kernel_size": 3})
    d.canonical_hash()      # equal for isomorphic networks
"""
from nord.architecture.descriptor import NeuralDescriptor
from nord.architecture.identity import canonical_order
from nord.architecture.layers import LayerSpec, get_layer_spec, list_layers, register_layer

__all__ = ["NeuralDescriptor", "canonical_order", "LayerSpec", "get_layer_spec", "list_layers",
           "register_layer"]
