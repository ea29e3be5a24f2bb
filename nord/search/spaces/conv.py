"""ConvSpace: the paper's search space, a chain of convolutions sized by the genome.

Each of ``layers`` convolutional layers has two genes, its output channels and its
kernel size; every convolution is followed by an activation (ReLU), and ``NeuralNet``
adds the classification head::

    space = ConvSpace(input_shape=(1, 8, 8))          # Digits; (3, 32, 32) for CIFAR-10
    genome = space.sample(np.random.default_rng(0))   # (c1, k1, c2, k2)
    descriptor = space.to_descriptor(genome)          # conv2d -> relu -> conv2d -> relu

The paper's defaults: two layers, each with 1..50 channels and a 1..50 kernel. A kernel
larger than the feature map it slides over is clipped by ``decode`` (``repair``), unless
``repair=False``.

Details (the paper's setting, the repair rule): docs/search.md.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from nord.architecture.descriptor import NeuralDescriptor
from nord.checks import check_bool, check_int, given
from nord.errors import ConfigurationError
from nord.architecture.layers import get_layer_spec
from nord.search.spaces.base import Genome, SearchSpace

PAPER_LAYERS = 2
"""Depth searched in the paper (its pygmo problem was built with two layers)."""
MAX_LAYERS = 100
"""The deepest chain the space builds. Its networks are plain chains (no residual connections,
no normalisation), which already train worse than shallower ones at a few dozen layers (He et
al., 2016, "Deep Residual Learning for Image Recognition", Fig. 1); and their cost grows
faster than their depth: on Digits, one training step of a 64-sample batch took 0.16 s at
100 layers, 1.2 s at 300 and 4.7 s at 1000 (one CPU thread), so a search of such networks
showed nothing for minutes."""


class ConvSpace(SearchSpace):
    """``layers`` convolutions, each with a searched channel count and kernel size.

    Genomes are ``(c1, k1, c2, k2, ...)``: integers, ``c`` in ``channels`` and ``k`` in
    ``kernel_size`` (inclusive bounds).

    Args:
        input_shape: one input sample, ``(channels, height, width)``: (1, 8, 8) for
            Digits, (3, 32, 32) for CIFAR-10 (the paper's data set, the default).
        layers: number of convolutional layers (the paper: 2; at most ``MAX_LAYERS``).
        channels: inclusive ``(low, high)`` bounds of each layer's output channels.
        kernel_size: inclusive ``(low, high)`` bounds of each layer's (square) kernel.
        activation: registry name of the layer after each convolution ('relu'; the
            2018 code used 'relu6'), or None for none.
        repair: True (default) clips each kernel to the spatial size entering its layer,
            so every genome decodes to a network that builds; False decodes genomes as
            given, and an oversized kernel becomes a failed evaluation (``ShapeError``).

    Raises:
        ConfigurationError: a bound, the depth or the input shape is invalid.
        UnknownLayerError: the activation is not a registered layer.
    """

    def __init__(self, input_shape: Sequence[int] = (3, 32, 32), layers: int = PAPER_LAYERS,
                 channels: Tuple[int, int] = (1, 50), kernel_size: Tuple[int, int] = (1, 50),
                 activation: Optional[str] = "relu", repair: bool = True):
        shape = tuple(input_shape) if isinstance(input_shape, (list, tuple)) else ()
        if len(shape) != 3:
            raise ConfigurationError(
                "ConvSpace needs input_shape=(channels, height, width) of positive integers, "
                f"e.g. (1, 8, 8) for Digits; got {input_shape!r}")
        shape = tuple(check_int(value, f"each of input_shape={input_shape!r}", 1)
                      for value in shape)
        layers = check_int(layers, "layers", 1, MAX_LAYERS, rule=(
            f"an integer in [1, {MAX_LAYERS}]: the space builds plain chains of convolutions, "
            f"which train worse and take ever longer beyond that depth (the paper: "
            f"{PAPER_LAYERS}); a deeper space needs residual connections, as a space of your "
            "own (--plugin)"))
        channels = _check_bounds("channels", channels)
        kernel_size = _check_bounds("kernel_size", kernel_size)
        if activation is not None:
            if not isinstance(activation, str):
                raise ConfigurationError(
                    f"activation takes a layer type's name such as 'relu' (nord layers lists "
                    f"them) or None (no activation); got {given(activation)}")
            activation = get_layer_spec(activation).name
        check_bool(repair, "repair")
        self.input_shape = shape
        self.layers = layers
        self.channels = channels
        self.kernel_size = kernel_size
        self.activation = activation
        self.repair = bool(repair)
        self.lower = (channels[0], kernel_size[0]) * layers
        self.upper = (channels[1], kernel_size[1]) * layers
        self.integer = True

    def repaired(self, genome: Sequence[int]) -> Genome:
        """The genome with each kernel clipped to the spatial size that reaches it.

        Layer ``i`` receives an ``h x w`` feature map (``input_shape`` for the first layer;
        a stride-1, unpadded convolution with kernel ``k`` turns ``h`` into ``h - k + 1``).
        Its kernel becomes ``min(k, h, w)``. Channels are never changed. A genome that
        needs no repair is returned unchanged.
        """
        genome = self.normalise(genome)
        height, width = self.input_shape[1:]
        fixed: List[int] = []
        for channels, kernel in zip(genome[0::2], genome[1::2]):
            kernel = min(kernel, height, width)
            height, width = height - kernel + 1, width - kernel + 1
            fixed.extend((channels, kernel))
        return tuple(fixed)

    def feasible(self, genome: Sequence[int]) -> bool:
        """True when no kernel is larger than the feature map it is applied to."""
        genome = self.normalise(genome)
        return self.repaired(genome) == genome

    def output_size(self, genome: Sequence[int]) -> Tuple[int, int]:
        """Height and width after the last convolution of the (repaired) genome."""
        height, width = self.input_shape[1:]
        for kernel in self.repaired(genome)[1::2]:
            height, width = height - kernel + 1, width - kernel + 1
        return height, width

    def path_encoding(self, genome: Sequence[int]) -> np.ndarray:
        """The genome as the 0/1 features BANANAS's predictors read (see docs/search.md).

        A chain has one path from input to output, through every layer, so encoding whole
        paths would give each genome a feature of its own and a predictor nothing to
        generalise from. The path is encoded layer by layer instead: each layer's channel
        count and (repaired) kernel size in unary, feature ``j`` of a gene set when its value
        exceeds the lower bound by at least ``j``. Unary keeps 3 channels nearer to 4 than to
        40, which one feature per value would not; genomes that decode alike encode alike.
        ``layers * (channel range + kernel range)`` features: 196 with the paper's bounds.
        """
        genome = self.repaired(genome) if self.repair else self.normalise(genome)
        parts = []
        for value, (low, high) in zip(genome, (self.channels, self.kernel_size) * self.layers):
            parts.append(np.arange(low + 1, high + 1) <= value)
        return np.concatenate(parts).astype(np.float64)

    def decode(self, genome: Genome) -> NeuralDescriptor:
        """A chain ``conv2d -> activation`` per layer; ``in_channels`` is left to NeuralNet.

        With ``repair`` on, the repaired genome is decoded, so genomes that differ only in
        an oversized kernel give the same descriptor (same hash: trained once).
        """
        if self.repair:
            genome = self.repaired(genome)
        descriptor = NeuralDescriptor()
        for index, (channels, kernel) in enumerate(zip(genome[0::2], genome[1::2])):
            descriptor.add_layer_sequential(
                "conv2d", {"out_channels": int(channels), "kernel_size": int(kernel)},
                name=f"conv{index}")
            if self.activation is not None:
                descriptor.add_layer_sequential(self.activation, name=f"{self.activation}{index}")
        return descriptor

    def describe(self) -> dict:
        info = super().describe()
        info.update(input_shape=list(self.input_shape), layers=self.layers,
                    channels=list(self.channels), kernel_size=list(self.kernel_size),
                    activation=self.activation, repair=self.repair)
        return info


def _check_bounds(what: str, bounds: Sequence[int]) -> Tuple[int, int]:
    try:
        low, high = (int(v) for v in bounds)
        exact = all(float(v) == int(v) for v in bounds)
    except (TypeError, ValueError):
        exact, low, high = False, 0, 0
    if not exact or not 1 <= low <= high:
        raise ConfigurationError(
            f"{what} must be inclusive integer bounds (low, high) with 1 <= low <= high, "
            f"e.g. (1, 50); got {bounds!r}")
    return low, high
