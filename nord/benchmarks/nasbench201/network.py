"""The whole NAS-Bench-201 network of a cell, as a NeuralDescriptor.

The benchmark trains one macro network per cell: a stem, three stages of cells joined by
residual reduction blocks, and a classifier. This module builds it from layers nord knows::

    from nord.benchmarks.nasbench201 import network_to_descriptor
    from nord.nn.network import NeuralNet

    descriptor = network_to_descriptor((3, 3, 4, 1, 3, 1))   # a genome or a cell string
    net = NeuralNet(descriptor, input_shape=(3, 32, 32), num_classes=10)
    net.count_parameters()     # 802426, the table's params_mb of this cell times 1e6

The descriptor ends in global average pooling; the linear classifier is NeuralNet's head, so
the data set's classes set its size. This module is pure: it does not import torch.
Details (the layers, the heads of the three data sets): docs/benchmarks.md.
"""
from __future__ import annotations

from typing import Any

from nord.architecture.descriptor import NeuralDescriptor
from nord.benchmarks.nasbench201.cells import (DEFAULT_CHANNELS, cell_to_descriptor,
                                               cell_to_genome, check_genome)
from nord.checks import check_int

CELLS_PER_STAGE = 5
"""Cells in each of the benchmark network's three stages (N in the benchmark's paper)."""

STAGES = 3
"""Stages of the network; the channels double from one stage to the next."""

INPUT_SHAPES = {"cifar10": (3, 32, 32), "cifar100": (3, 32, 32), "imagenet16": (3, 16, 16)}
"""Shape of one input sample of each of the benchmark's data sets."""


def network_to_descriptor(cell: Any, channels: int = DEFAULT_CHANNELS,
                          cells_per_stage: int = CELLS_PER_STAGE) -> NeuralDescriptor:
    """The NeuralDescriptor of the benchmark's network around a cell.

    Layers, in order (``C`` = ``channels``): ``stem_conv`` (3x3 convolution, no bias) and
    ``stem_bn``; stage 1, ``cells_per_stage`` cells at ``C`` channels; the reduction block
    ``reduce1`` to ``2C``; stage 2; ``reduce2`` to ``4C``; stage 3; ``last_bn``, ``last_relu``
    and ``global_pool`` (average, to 1x1). Cell ``k`` (counted from 1 through all stages)
    has the layers of ``cell_to_descriptor`` prefixed ``cell<k>_``. A reduction block is the
    benchmark's residual block of stride 2: ReLU-conv3x3(stride 2)-BN then ReLU-conv3x3-BN,
    summed with a shortcut of 2x2 average pooling and a 1x1 convolution without bias.

    ``NeuralNet`` adds the classifier, a linear layer from ``4C`` features to the data set's
    classes, so the data sets differ only there: with the defaults the trainable parameters
    are the table's ``params_mb`` times 1e6 for CIFAR-10 (10 classes; all but 204 cells,
    whose table figure is a mean over runs), 5,850 more for CIFAR-100 (100 classes) and
    7,150 more for ImageNet16-120 (120 classes; 16x16 inputs change no parameter, since
    the pooling is global).

    Args:
        cell: a cell string or a genome (6 operation indices).
        channels: channels of the stem and the first stage (the benchmark: 16).
        cells_per_stage: cells in each stage (the benchmark: 5).

    Raises:
        BenchmarkError: the cell string or genome is invalid.
        ConfigurationError: ``channels`` or ``cells_per_stage`` is not a positive int.
    """
    genome = cell_to_genome(cell) if isinstance(cell, str) else check_genome(cell)
    channels = check_int(channels, "channels (of the stem and the network's first stage)", 1)
    cells_per_stage = check_int(cells_per_stage, "cells_per_stage (cells in each stage)", 1)
    descriptor = NeuralDescriptor()
    descriptor.add_layer("conv2d", {"out_channels": channels, "kernel_size": 3, "padding": 1,
                                    "bias": False}, "stem_conv")
    last = descriptor.add_layer_sequential("batch_norm2d", None, "stem_bn")
    cell_number = 0
    for stage in range(STAGES):
        width = channels * 2 ** stage
        if stage > 0:
            last = _add_reduction(descriptor, last, width, f"reduce{stage}")
        for _ in range(cells_per_stage):
            cell_number += 1
            last = _add_cell(descriptor, last, cell_to_descriptor(genome, width),
                             f"cell{cell_number}_")
    descriptor.add_layer("batch_norm2d", None, "last_bn")
    descriptor.connect_layers(last, "last_bn")
    descriptor.add_layer_sequential("relu", None, "last_relu")
    descriptor.add_layer_sequential("adaptive_avg_pool2d", {"output_size": 1}, "global_pool")
    descriptor.set_output("global_pool")
    return descriptor


def _add_cell(descriptor: NeuralDescriptor, source: str, cell: NeuralDescriptor,
              prefix: str) -> str:
    """Copy ``cell`` into ``descriptor`` with prefixed names, fed by ``source``; returns its
    output layer."""
    for name, layer in cell.layers.items():
        descriptor.add_layer(layer.type, layer.params, prefix + name, merge=layer.merge)
    for from_layer, to_layer in cell.connections:
        descriptor.connect_layers(prefix + from_layer, prefix + to_layer)
    descriptor.connect_layers(source, prefix + cell.input_layer)
    (output,) = cell.output_layers
    return prefix + output


def _add_reduction(descriptor: NeuralDescriptor, source: str, channels: int, name: str) -> str:
    """The benchmark's residual block of stride 2 to ``channels``, fed by ``source``."""
    conv = {"out_channels": channels, "kernel_size": 3, "padding": 1}
    descriptor.add_layer("relu_conv_bn", {**conv, "stride": 2}, f"{name}_conv_a")
    descriptor.add_layer_sequential("relu_conv_bn", {**conv, "stride": 1}, f"{name}_conv_b")
    descriptor.add_layer("avg_pool2d", {"kernel_size": 2, "stride": 2, "padding": 0},
                         f"{name}_pool")
    descriptor.add_layer_sequential("conv2d", {"out_channels": channels, "kernel_size": 1,
                                               "bias": False}, f"{name}_shortcut")
    descriptor.add_layer("identity", None, name, merge="sum")
    descriptor.connect_layers(source, f"{name}_conv_a")
    descriptor.connect_layers(source, f"{name}_pool")
    for branch in (f"{name}_conv_b", f"{name}_shortcut"):
        descriptor.connect_layers(branch, name)
    return name
