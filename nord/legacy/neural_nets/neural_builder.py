"""The 2018 ``NeuralNet(descriptor, num_classes, sample)``: nord's network, shaped by a sample.

    sample = torch.Tensor(evaluator.get_sample()).transpose(2, 0).unsqueeze(0)   # (1, C, H, W)
    net = NeuralNet(descriptor, 10, sample)
    logits = net(images)                                                          # (batch, 10)

As in 2018, the network ends with a classification layer ``Linear(features, num_classes)``
after the descriptor's output. It is nord's ``NeuralNet`` otherwise (shape inference, merges
of several inputs, a ``ShapeError`` that names the layer when the sample does not fit).
"""
from __future__ import annotations

from nord.errors import ConfigurationError
from nord.nn.network import NeuralNet as _NordNeuralNet

__all__ = ["NeuralNet", "sample_shape"]


def sample_shape(sample):
    """The shape of one example from a batch of examples (tensor or array), e.g. (3, 32, 32).

    Networks take images ``(C, H, W)`` or feature vectors ``(F,)``, so a batch has four
    dimensions or two.
    """
    shape = getattr(sample, "shape", None)
    if shape is None or len(shape) not in (2, 4):
        raise ConfigurationError(
            "sample must be a batch holding one example: (1, channels, height, width) for "
            "images, (1, features) for vectors; got "
            f"{type(sample).__name__} of shape {None if shape is None else tuple(shape)}. "
            "Add the batch dimension with sample.unsqueeze(0), as 2018 programs did")
    return tuple(int(d) for d in shape[1:])


class NeuralNet(_NordNeuralNet):
    """The torch module of a descriptor, for inputs shaped like ``sample``.

    Args:
        net_descriptor: the NeuralDescriptor (never modified).
        num_classes: outputs of the classification layer.
        sample: a batch of one example, ``(1, C, H, W)`` for images; only its shape is used.
        sort: accepted for 2018 code and ignored (layers run in topological order).
    """

    def __init__(self, net_descriptor, num_classes, sample, sort=False):
        super().__init__(net_descriptor, input_shape=sample_shape(sample), num_classes=num_classes)
