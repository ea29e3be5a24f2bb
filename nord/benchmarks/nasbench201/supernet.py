"""The NAS-Bench-201 supernet: the benchmark's network with every cell edge holding all five
operations, for the weight-sharing searches (imports torch).

Every cell of the benchmark's network (``network.py``: stem, three stages of cells, residual
reductions, classifier) is replaced by a cell whose six edges each hold one module per
operation. The network's weights are shared by all 15,625 cells; how an edge combines its
operations in a forward pass is said by the ``EdgeRule`` given to ``forward``::

    import torch
    from nord.benchmarks.nasbench201.supernet import Mixture, Path, Supernet

    supernet = Supernet(channels=16, cells_per_stage=5, num_classes=10)
    alphas = 1e-3 * torch.randn(6, 5, requires_grad=True)
    logits = supernet(images, Mixture(alphas.softmax(-1)))   # DARTS: every operation, weighted
    logits = supernet(images, Path((3, 3, 4, 1, 3, 1)))      # one cell: its operations only

The operations are nord's own layers, built through the layer registry from the same
operation -> layer mapping the cell codec uses, so a path through the supernet computes what
the stand-alone network of that cell computes. The cells' batch normalisation is a choice
(``affine``, ``track_running_stats``): the benchmark's weight-sharing searches use no affine
parameters, and the versions of its paper differ in whether running statistics are kept. The
stem's, the reductions' and the last batch norm are affine with running statistics whatever
the choice, as in the benchmark's supernets.
"""
from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

import torch
from torch import nn
from torch.nn import functional as F

from nord.architecture.layers import get_layer_spec
from nord.benchmarks.nasbench201.cells import (DEFAULT_CHANNELS, EDGE_NAMES, EDGES, N_EDGES,
                                               N_NODES, OPS, operation_layer, check_genome)
from nord.benchmarks.nasbench201.network import CELLS_PER_STAGE, STAGES
from nord.checks import check_int
from nord.errors import ConfigurationError


def _operation(op: str, channels: int, affine: bool, track_running_stats: bool) -> nn.Module:
    """The module of one operation on an edge of ``channels`` channels, from the registry."""
    layer_type, params = operation_layer(op, channels)
    spec = get_layer_spec(layer_type)
    kwargs = dict(params)
    if "in_channels" in spec.param_names:
        kwargs.update(in_channels=channels, affine=affine, track_running_stats=track_running_stats)
    return spec.resolve()(**kwargs)


class MixedEdge(nn.Module):
    """One edge of a supernet cell: a module for each operation, in ``OPS`` order."""

    def __init__(self, channels: int, affine: bool, track_running_stats: bool):
        super().__init__()
        self.ops = nn.ModuleList(_operation(op, channels, affine, track_running_stats)
                                 for op in OPS)


class EdgeRule:
    """How every edge of a forward pass combines its operations (one object per pass)."""

    def edge(self, edge: MixedEdge, index: int, x: torch.Tensor) -> torch.Tensor:
        """The output of ``edge`` (the ``index``-th in ``EDGES`` order) for input ``x``."""
        raise NotImplementedError


class Mixture(EdgeRule):
    """Every operation, weighted: ``weights`` is (6 edges, 5 operations), e.g. a softmax of
    DARTS's architecture parameters; gradients flow to the weights."""

    def __init__(self, weights: torch.Tensor):
        self.weights = _edge_table(weights, "weights")

    def edge(self, edge, index, x):
        row = self.weights[index]
        total = edge.ops[0](x) * row[0]
        for op, weight in zip(edge.ops[1:], row[1:]):
            total = total + op(x) * weight
        return total


class HardMixture(EdgeRule):
    """One operation per edge computed, the others carried only as their weight (GDAS).

    ``weights`` is (6, 5) and holds, in value, 1 at the chosen operation of each edge and 0
    elsewhere, while its gradient is the softmax's (a straight-through Gumbel-softmax sample);
    ``chosen`` gives each edge's operation. An operation not computed adds its weight, which is
    0 in value and passes the gradient to its probability, so that every architecture
    parameter is trained although one operation per edge runs.
    """

    def __init__(self, weights: torch.Tensor, chosen: Sequence[int]):
        self.weights = _edge_table(weights, "weights")
        self.chosen = check_genome(chosen)

    def edge(self, edge, index, x):
        row, pick = self.weights[index], self.chosen[index]
        total = edge.ops[pick](x) * row[pick]
        for other, weight in enumerate(row):
            if other != pick:
                total = total + weight
        return total


class Path(EdgeRule):
    """One cell: each edge runs only its own operation (a genome or a cell's operation indices)."""

    def __init__(self, genome: Sequence[Any]):
        self.genome = check_genome(genome)

    def edge(self, edge, index, x):
        return edge.ops[self.genome[index]](x)


def _edge_table(weights: Any, name: str) -> torch.Tensor:
    if not isinstance(weights, torch.Tensor) or tuple(weights.shape) != (N_EDGES, len(OPS)):
        shape = tuple(weights.shape) if isinstance(weights, torch.Tensor) else type(weights).__name__
        raise ConfigurationError(
            f"{name} must be a tensor of shape ({N_EDGES} edges, {len(OPS)} operations), one row "
            f"per edge in the order {EDGES}; got {shape}")
    return weights


class SearchCell(nn.Module):
    """A cell of the supernet: 4 nodes, each of the 6 edges a ``MixedEdge``."""

    def __init__(self, channels: int, affine: bool, track_running_stats: bool):
        super().__init__()
        self.edges = nn.ModuleList(MixedEdge(channels, affine, track_running_stats)
                                   for _ in EDGES)

    def forward(self, x: torch.Tensor, rule: EdgeRule) -> torch.Tensor:
        nodes = [x]
        for target in range(1, N_NODES):
            total = None
            for index, (source, edge_target) in enumerate(EDGES):
                if edge_target == target:
                    out = rule.edge(self.edges[index], index, nodes[source])
                    total = out if total is None else total + out
            nodes.append(total)
        return nodes[-1]


class Reduction(nn.Module):
    """The benchmark's residual block of stride 2 (as ``network.py`` builds it in descriptors)."""

    def __init__(self, in_channels: int, channels: int):
        super().__init__()
        conv = get_layer_spec("relu_conv_bn").resolve()
        self.conv_a = conv(in_channels, channels, 3, stride=2, padding=1)
        self.conv_b = conv(channels, channels, 3, stride=1, padding=1)
        self.shortcut = nn.Sequential(nn.AvgPool2d(kernel_size=2, stride=2, padding=0),
                                      nn.Conv2d(in_channels, channels, 1, bias=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.shortcut(x) + self.conv_b(self.conv_a(x))


def _complete(state: Dict[str, torch.Tensor], where: str, norm: nn.BatchNorm2d) -> None:
    """Add to ``state`` what an affine batch norm with running statistics holds and ``norm``
    lacks: scale 1 and shift 0, fresh statistics."""
    size = norm.num_features
    if not norm.affine:
        state.update({f"{where}.weight": torch.ones(size), f"{where}.bias": torch.zeros(size)})
    if not norm.track_running_stats:
        state.update({f"{where}.running_mean": torch.zeros(size),
                      f"{where}.running_var": torch.ones(size),
                      f"{where}.num_batches_tracked": torch.tensor(0)})


def check_image_shape(shape, where: str) -> None:
    """Refuse images the benchmark's network cannot halve twice exactly: at an odd side, a
    reduction's convolution (stride 2, padding 1) rounds up where its shortcut's pooling
    rounds down, and the two branches no longer fit."""
    shape = tuple(shape)
    if len(shape) != 3 or any(side % 4 for side in shape[1:]):
        raise ConfigurationError(
            f"{where} trains the NAS-Bench-201 network, which halves its images twice, on "
            f"images shaped (C, H, W) with H and W multiples of 4; this data set's samples have "
            f"shape {shape}: choose an image data set such as digits (8x8), mnist (28x28) or "
            "cifar10 (32x32)")


class Supernet(nn.Module):
    """The benchmark's network with a ``SearchCell`` in place of every cell.

    Args:
        channels: channels of the stem and the first stage (the benchmark: 16).
        cells_per_stage: cells in each of the three stages (the benchmark: 5).
        num_classes: outputs of the classifier.
        input_channels: channels of the images (3 for the benchmark's data sets).
        affine: whether the cells' batch norms have a learned scale and shift.
        track_running_stats: whether the cells' batch norms keep running statistics (when
            not, they normalise with the batch's own statistics in evaluation too).

    Raises:
        ConfigurationError: a size that is not a positive int, or a setting that is not a bool.
    """

    def __init__(self, channels: int = DEFAULT_CHANNELS, cells_per_stage: int = CELLS_PER_STAGE,
                 num_classes: int = 10, input_channels: int = 3, affine: bool = False,
                 track_running_stats: bool = True):
        super().__init__()
        channels = check_int(channels, "channels (of the supernet's stem and first stage)", 1)
        cells_per_stage = check_int(cells_per_stage, "cells_per_stage (cells in each stage)", 1)
        num_classes = check_int(num_classes, "num_classes", 1)
        input_channels = check_int(input_channels, "input_channels (channels of the images)", 1)
        for name, value in (("affine", affine), ("track_running_stats", track_running_stats)):
            if not isinstance(value, bool):
                raise ConfigurationError(f"{name} (of the cells' batch norms) must be true or "
                                         f"false; got {value!r}")
        self.settings = {"channels": channels, "cells_per_stage": cells_per_stage,
                         "num_classes": num_classes, "input_channels": input_channels,
                         "affine": affine, "track_running_stats": track_running_stats}
        self.stem = nn.Sequential(
            nn.Conv2d(input_channels, channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(channels))
        blocks, width = [], channels
        for stage in range(STAGES):
            if stage > 0:
                blocks.append(Reduction(width, width * 2))
                width *= 2
            blocks.extend(SearchCell(width, affine, track_running_stats)
                          for _ in range(cells_per_stage))
        self.blocks = nn.ModuleList(blocks)
        self.last_bn = nn.BatchNorm2d(width)
        self.classifier = nn.Linear(width, num_classes)

    def forward(self, x: torch.Tensor, rule: EdgeRule) -> torch.Tensor:
        """The logits of a batch, each cell's edges combined by ``rule``."""
        feature = self.stem(x)
        for block in self.blocks:
            feature = block(feature, rule) if isinstance(block, SearchCell) else block(feature)
        feature = torch.relu(self.last_bn(feature))
        return self.classifier(F.adaptive_avg_pool2d(feature, 1).flatten(1))

    def cells(self) -> Tuple[SearchCell, ...]:
        """The search cells, in network order."""
        return tuple(block for block in self.blocks if isinstance(block, SearchCell))

    def inherited_state(self, genome: Sequence[Any]) -> Dict[str, torch.Tensor]:
        """The weights a cell inherits: a state dict for the ``NeuralNet`` of
        ``network_to_descriptor(genome, channels, cells_per_stage)``, holding this supernet's
        stem, reductions, head and, on each edge, the weights of the cell's operation.

        A path through the supernet and the network loaded with this state compute the same
        logits in training mode. Batch norms without affine parameters are given scale 1 and
        shift 0, which is what they compute; running statistics are copied as they are, or
        fresh where the supernet keeps none: recalibrate them for the cell before evaluating
        it (the supernet's were gathered over many cells).
        """
        genome = check_genome(genome)
        state: Dict[str, torch.Tensor] = {}

        def take(prefix: str, module: nn.Module) -> None:
            for key, value in module.state_dict().items():
                state[f"layer_modules.{prefix}.{key}"] = value.detach().clone()
            for norm_name, norm in module.named_modules():
                if isinstance(norm, nn.BatchNorm2d):
                    _complete(state, f"layer_modules.{prefix}.{norm_name}".rstrip("."), norm)

        take("stem_conv", self.stem[0])
        take("stem_bn", self.stem[1])
        cell_number = reduction_number = 0
        for block in self.blocks:        # the names network_to_descriptor gives its layers
            if isinstance(block, SearchCell):
                cell_number += 1
                for edge, edge_name, op in zip(block.edges, EDGE_NAMES, genome):
                    if list(edge.ops[op].state_dict()):
                        take(f"cell{cell_number}_{edge_name}", edge.ops[op])
            else:
                reduction_number += 1
                take(f"reduce{reduction_number}_conv_a", block.conv_a)
                take(f"reduce{reduction_number}_conv_b", block.conv_b)
                take(f"reduce{reduction_number}_shortcut", block.shortcut[1])
        take("last_bn", self.last_bn)
        for key, value in self.classifier.state_dict().items():
            state[f"head.1.{key}"] = value.detach().clone()
        return state
