"""The 2018 ``NeuralDescriptor``: nord's, whose building methods keep the 2018 signatures.

    d = NeuralDescriptor()
    d.add_layer(torch.nn.Conv2d, [3, 10, 5], 'conv')       # class, positional parameters, name
    d.add_layer_sequential(torch.nn.ReLU6, [])             # connected to the previous layer
    d.connect_layers('conv', 'relu6_1')

Where nord is stricter or different than 2018: a repeated layer name or connection, a
connection to a missing layer and a cycle raise a ``DescriptorError`` at once (2018
accepted them silently); generated names are ``<type>_<n>`` (2018: ``<n>_Layer``); a
layer with several inputs sums them (2018 kept only one of them); and every layer without
outgoing connections is an output (2018 used the last layer added).
"""
from nord.architecture.descriptor import NeuralDescriptor

__all__ = ["NeuralDescriptor"]
