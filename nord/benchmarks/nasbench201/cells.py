"""The NAS-Bench-201 cell: genome <-> cell string <-> NeuralDescriptor.

A cell is a 4-node DAG; each of its 6 edges carries one of 5 operations. The same cell
has three equivalent forms, and every function here converts between them exactly::

    from nord.benchmarks.nasbench201.cells import (cell_to_descriptor, cell_to_genome,
                                                   descriptor_to_cell, genome_to_cell)
    genome = (3, 3, 4, 1, 3, 1)          # one operation index per edge, in EDGES order
    cell = genome_to_cell(genome)
    cell_to_genome(cell) == genome
    descriptor = cell_to_descriptor(cell, channels=16)   # buildable with nord.nn.network.NeuralNet
    descriptor_to_cell(descriptor) == cell

This module is pure: it does not import torch.
Details (edge order, codes, the descriptor's layers): docs/benchmarks.md.
"""
from __future__ import annotations

import functools
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from nord.architecture.descriptor import NeuralDescriptor, canonical_params
from nord.checks import check_int
from nord.errors import BenchmarkError

OPS: Tuple[str, ...] = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")
"""The operations, in the order of genome values 0..4."""

EDGES: Tuple[Tuple[int, int], ...] = ((0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3))
"""The edges ``(source, target)``, in genome order and cell-string order."""

N_NODES = 4
N_OPS = len(OPS)
N_EDGES = len(EDGES)
N_CELLS = N_OPS ** N_EDGES  # 15,625
DEFAULT_CHANNELS = 16
"""Channels of the first stage of the benchmark's network (its cells use 16, 32 and 64)."""

CELL_FORMAT = "|op~0|+|op~0|op~1|+|op~0|op~1|op~2|"
"""The shape of a cell string; ``op`` is one of ``OPS``."""

NODE_NAMES: Tuple[str, ...] = tuple(f"node{i}" for i in range(N_NODES))
EDGE_NAMES: Tuple[str, ...] = tuple(f"edge_{j}_{i}" for j, i in EDGES)

_OP_INDEX: Dict[str, int] = {op: index for index, op in enumerate(OPS)}
_FORMAT_HELP = (f"a NAS-Bench-201 cell string looks like '{CELL_FORMAT}': three groups "
                "separated by '+' for nodes 1, 2 and 3, group i holding one 'op~j' per source "
                f"node j = 0..i-1 in that order, with op one of {', '.join(OPS)}")


def in_benchmark_order(names: Iterable[str], order: Sequence[str]) -> List[str]:
    """``names`` (of edges or operations) in the benchmark's ``order`` (``EDGE_NAMES``,
    ``OPS``), any it does not name after them, sorted: a journal's JSON keeps them sorted."""
    return sorted(set(names), key=lambda name: (order.index(name), "") if name in order
                  else (len(order), name))


# --- genome <-> code <-> cell string ------------------------------------------------------
def _op_value(value: Any, position: int, genome: Any) -> int:
    """One genome value as an int in 0..4 (numpy integers and integral floats accepted)."""
    if value.__class__ is not int:
        if isinstance(value, (bool, np.bool_)) or not isinstance(
                value, (int, float, np.integer, np.floating)):
            raise BenchmarkError(
                f"genome value {position} must be an operation index 0..{N_OPS - 1}; got "
                f"{type(value).__name__} {value!r} in {genome!r}")
        as_int = int(value)
        if as_int != value:
            raise BenchmarkError(
                f"genome value {position} = {value!r} is not a whole number; round real-valued "
                f"genomes first, e.g. with NASBench201Space().normalise(genome)")
        value = as_int
    if not 0 <= value < N_OPS:
        raise BenchmarkError(
            f"genome value {position} = {value} is not an operation index 0..{N_OPS - 1} "
            f"({', '.join(f'{i}={op}' for i, op in enumerate(OPS))}); got genome {genome!r}")
    return value


def check_genome(genome: Sequence[Any]) -> Tuple[int, ...]:
    """The genome as a tuple of 6 ints in 0..4.

    Raises:
        BenchmarkError: wrong length, a value that is not a whole number, or out of range.
    """
    if isinstance(genome, str):
        raise BenchmarkError(
            f"expected a genome of {N_EDGES} operation indices; got the string {genome!r} "
            "(convert a cell string with cell_to_genome(cell))")
    try:
        values = tuple(genome)
    except TypeError:
        raise BenchmarkError(
            f"a NAS-Bench-201 genome is a sequence of {N_EDGES} operation indices (one per "
            f"edge {EDGES}); got {type(genome).__name__} {genome!r}") from None
    if len(values) != N_EDGES:
        raise BenchmarkError(
            f"a NAS-Bench-201 genome has {N_EDGES} values, one per edge {EDGES}; got "
            f"{len(values)}: {list(values)}")
    return tuple(_op_value(value, position, genome) for position, value in enumerate(values))


def genome_to_code(genome: Sequence[Any]) -> int:
    """The genome's base-5 code in ``range(N_CELLS)`` (the first edge is the most significant).

    This is the fast, validated key the benchmark table is indexed by (well under a
    microsecond for a tuple or list of ints).

    Raises:
        BenchmarkError: the genome is invalid (see ``check_genome``).
    """
    try:
        a, b, c, d, e, f = genome
    except (TypeError, ValueError):
        check_genome(genome)  # raises with the full explanation
        raise  # pragma: no cover - check_genome always raises here
    if (a.__class__ is int and b.__class__ is int and c.__class__ is int
            and d.__class__ is int and e.__class__ is int and f.__class__ is int
            and 0 <= a < N_OPS and 0 <= b < N_OPS and 0 <= c < N_OPS and 0 <= d < N_OPS
            and 0 <= e < N_OPS and 0 <= f < N_OPS):
        return ((((a * N_OPS + b) * N_OPS + c) * N_OPS + d) * N_OPS + e) * N_OPS + f
    # numpy integers, whole floats, or an error: check_genome converts or raises
    a, b, c, d, e, f = check_genome(genome)
    return ((((a * N_OPS + b) * N_OPS + c) * N_OPS + d) * N_OPS + e) * N_OPS + f


def code_to_genome(code: int) -> Tuple[int, ...]:
    """The genome whose base-5 code is ``code``."""
    if (isinstance(code, (bool, np.bool_)) or not isinstance(code, (int, np.integer))
            or not 0 <= code < N_CELLS):
        raise BenchmarkError(f"a cell code is an int in 0..{N_CELLS - 1}; got {code!r}")
    code = int(code)
    digits = []
    for _ in range(N_EDGES):
        code, digit = divmod(code, N_OPS)
        digits.append(digit)
    return tuple(reversed(digits))


def genome_to_cell(genome: Sequence[Any]) -> str:
    """The benchmark's cell string of a genome."""
    a, b, c, d, e, f = (OPS[value] for value in check_genome(genome))
    return f"|{a}~0|+|{b}~0|{c}~1|+|{d}~0|{e}~1|{f}~2|"


def cell_to_genome(cell: str) -> Tuple[int, ...]:
    """The genome of a cell string.

    Raises:
        BenchmarkError: the string is not a NAS-Bench-201 cell; the message says which part
            is wrong and shows the expected format.
    """
    if not isinstance(cell, str):
        raise BenchmarkError(f"expected a cell string; got {type(cell).__name__} {cell!r}. "
                             + _FORMAT_HELP)
    groups = cell.split("+")
    if len(groups) != N_NODES - 1:
        raise BenchmarkError(
            f"invalid cell string {cell!r}: it has {len(groups)} group(s) separated by '+', "
            f"expected {N_NODES - 1}; " + _FORMAT_HELP)
    genome = []
    for node, group in enumerate(groups, start=1):
        if len(group) < 2 or not (group.startswith("|") and group.endswith("|")):
            raise BenchmarkError(
                f"invalid cell string {cell!r}: group {node} {group!r} must start and end "
                "with '|'; " + _FORMAT_HELP)
        tokens = group[1:-1].split("|")
        if len(tokens) != node:
            raise BenchmarkError(
                f"invalid cell string {cell!r}: group {node} (node {node}) has {len(tokens)} "
                f"edge(s) {tokens}, expected {node} (one from each node 0..{node - 1}); "
                + _FORMAT_HELP)
        for source, token in enumerate(tokens):
            op, separator, index = token.partition("~")
            if not separator:
                raise BenchmarkError(
                    f"invalid cell string {cell!r}: edge {token!r} of node {node} is not of the "
                    "form 'op~j'; " + _FORMAT_HELP)
            if op not in _OP_INDEX:
                raise BenchmarkError(
                    f"invalid cell string {cell!r}: unknown operation {op!r} on the edge from "
                    f"node {source} to node {node}; valid operations are {', '.join(OPS)}. "
                    + _FORMAT_HELP)
            if index != str(source):
                raise BenchmarkError(
                    f"invalid cell string {cell!r}: edge {token!r} of node {node} has source "
                    f"index {index!r}, expected {source} (edges of node {node} come from nodes "
                    f"0..{node - 1} in order); " + _FORMAT_HELP)
            genome.append(_OP_INDEX[op])
    return tuple(genome)


def is_connected(genome: Sequence[Any]) -> bool:
    """Whether some path of non-'none' edges joins node 0 to node 3.

    A disconnected cell outputs zeros whatever its input; NAS-Bench-201 still has a row for
    each of the 341 such cells, at chance accuracy.
    """
    ops = dict(zip(EDGES, check_genome(genome)))
    reached = {0}
    for target in range(1, N_NODES):
        if any(source in reached and ops[(source, target)] != 0 for source in range(target)):
            reached.add(target)
    return N_NODES - 1 in reached


# --- path encoding ------------------------------------------------------------------------
INPUT_OUTPUT_PATHS: Tuple[Tuple[int, ...], ...] = ((3,), (0, 4), (1, 5), (0, 2, 5))
"""Every path from node 0 to node 3, as the genome positions of its edges: 0-3, 0-1-3, 0-2-3
and 0-1-2-3."""

PATH_OPS = N_OPS - 1
"""Operations a path can carry: every one but 'none', which cuts the path."""

N_PATH_FEATURES = PATH_OPS + PATH_OPS ** 2 + PATH_OPS ** 3   # 4 + 16 + 64 = 84
"""Possible paths: sequences of 1, 2 or 3 operations other than 'none'."""


def cell_paths(genome: Sequence[Any]) -> Tuple[Tuple[str, ...], ...]:
    """The operations along each input-to-output path of the cell, in
    :data:`INPUT_OUTPUT_PATHS` order, leaving out the paths through a 'none' edge."""
    values = check_genome(genome)
    return tuple(tuple(OPS[values[edge]] for edge in path) for path in INPUT_OUTPUT_PATHS
                 if all(values[edge] for edge in path))


@functools.lru_cache(maxsize=N_CELLS)
def _path_features(code: int) -> Tuple[int, ...]:
    values = code_to_genome(code)
    features = set()
    for path in INPUT_OUTPUT_PATHS:
        if all(values[edge] for edge in path):
            # paths of length L come after the shorter ones, numbered in base PATH_OPS
            index = sum(PATH_OPS ** length for length in range(1, len(path)))
            for position, edge in enumerate(path):
                index += (values[edge] - 1) * PATH_OPS ** position
            features.add(index)
    return tuple(sorted(features))


def path_encoding(genome: Sequence[Any]) -> np.ndarray:
    """The path encoding of BANANAS (White, Neiswanger and Savani, AAAI 2021): one 0/1
    feature per possible sequence of operations from the input node to the output node
    (:data:`N_PATH_FEATURES` of them), set when the cell has such a path.

    A path through a 'none' edge carries nothing and sets no feature, so a disconnected cell
    encodes as zeros. Paths are sequences of operations, not of edges: cells that differ only
    by which of the two two-edge paths carries a sequence encode alike.

    Raises:
        BenchmarkError: the genome is invalid (see ``check_genome``).
    """
    encoding = np.zeros(N_PATH_FEATURES)
    encoding[list(_path_features(genome_to_code(genome)))] = 1.0
    return encoding


# --- cell <-> descriptor ------------------------------------------------------------------
def operation_layer(op: str, channels: int) -> Tuple[str, Dict[str, Any]]:
    """Registry type and parameters of the layer of one operation on a cell of ``channels``."""
    if op == "none":
        return "zero", {}
    if op == "skip_connect":
        return "identity", {}
    if op == "nor_conv_1x1":
        return "relu_conv_bn", {"out_channels": channels, "kernel_size": 1, "stride": 1,
                                "padding": 0}
    if op == "nor_conv_3x3":
        return "relu_conv_bn", {"out_channels": channels, "kernel_size": 3, "stride": 1,
                                "padding": 1}
    if op == "avg_pool_3x3":
        return "avg_pool2d", {"kernel_size": 3, "stride": 1, "padding": 1,
                              "count_include_pad": False}
    raise BenchmarkError(f"unknown operation {op!r}; valid operations are {', '.join(OPS)}")



def cell_to_descriptor(cell: Any, channels: int = DEFAULT_CHANNELS) -> NeuralDescriptor:
    """The NeuralDescriptor of a cell given as a cell string or a genome.

    Args:
        cell: a cell string or a genome (6 operation indices).
        channels: output channels of the convolution operations; the benchmark's network
            uses 16, 32 and 64 in its three stages.

    Raises:
        BenchmarkError: the cell string or genome is invalid.
        ConfigurationError: ``channels`` is not a positive int.
    """
    genome = cell_to_genome(cell) if isinstance(cell, str) else check_genome(cell)
    channels = check_int(channels, "channels (output channels of the cell's convolutions)", 1)
    descriptor = NeuralDescriptor()
    descriptor.add_layer("identity", None, NODE_NAMES[0])
    incoming = []
    # EDGES lists the edges into node 1, then node 2, then node 3, sources in order: once
    # the edge from source target-1 is added, the node and its input sum can follow.
    for (source, target), edge_name, op_index in zip(EDGES, EDGE_NAMES, genome):
        layer_type, params = operation_layer(OPS[op_index], channels)
        descriptor.add_layer(layer_type, params, edge_name)
        descriptor.connect_layers(NODE_NAMES[source], edge_name)
        incoming.append(edge_name)
        if source == target - 1:
            descriptor.add_layer("identity", None, NODE_NAMES[target], merge="sum")
            for edge in incoming:
                descriptor.connect_layers(edge, NODE_NAMES[target])
            incoming = []
    descriptor.set_output(NODE_NAMES[-1])
    return descriptor


def genome_to_descriptor(genome: Sequence[Any], channels: int = DEFAULT_CHANNELS
                         ) -> NeuralDescriptor:
    """The NeuralDescriptor of a genome (see ``cell_to_descriptor``)."""
    return cell_to_descriptor(check_genome(genome), channels)


@functools.lru_cache(maxsize=None)
def _reference_params() -> Dict[str, Tuple[str, Dict[str, Any]]]:
    """Canonical parameters of each operation's layer, with out_channels left out."""
    reference = {}
    for op in OPS:
        layer_type, params = operation_layer(op, DEFAULT_CHANNELS)
        scratch = NeuralDescriptor()
        scratch.add_layer(layer_type, params, "op")
        canonical = canonical_params(scratch.layers["op"])
        canonical.pop("out_channels", None)
        reference[op] = (layer_type, canonical)
    return reference


_OPS_HELP = ("none = zero, skip_connect = identity, nor_conv_1x1 = relu_conv_bn(out_channels=C, "
             "kernel_size=1, stride=1, padding=0), nor_conv_3x3 = relu_conv_bn(out_channels=C, "
             "kernel_size=3, stride=1, padding=1), avg_pool_3x3 = avg_pool2d(kernel_size=3, "
             "stride=1, padding=1, count_include_pad=False)")


def _edge_op(layer) -> Optional[str]:
    """The operation an edge layer performs, or None if it is none of the cell's."""
    canonical = canonical_params(layer)
    channels = canonical.pop("out_channels", None)
    for op, (layer_type, params) in _reference_params().items():
        if layer.type == layer_type and canonical == params:
            if layer_type == "relu_conv_bn" and (
                    isinstance(channels, bool) or not isinstance(channels, int) or channels < 1):
                return None
            return op
    return None


def descriptor_to_genome(descriptor: NeuralDescriptor) -> Tuple[int, ...]:
    """The genome of a descriptor made by ``cell_to_descriptor`` (also after JSON).

    The descriptor is read by its layer names (``node0``..``node3``, ``edge_<j>_<i>``),
    connections, input and output, and each edge's layer type and parameters; the
    convolutions' ``out_channels`` may be any positive int.

    Raises:
        BenchmarkError: the descriptor is not a NAS-Bench-201 cell; the message says what
            differs from one.
    """
    if not isinstance(descriptor, NeuralDescriptor):
        raise BenchmarkError(
            f"expected a NeuralDescriptor of a NAS-Bench-201 cell; got "
            f"{type(descriptor).__name__}")
    hint = ("; NAS-Bench-201 cell descriptors are made by "
            "nord.benchmarks.cell_to_descriptor(cell)")
    names = set(descriptor.layer_names)
    expected = set(NODE_NAMES) | set(EDGE_NAMES)
    if names != expected:
        raise BenchmarkError(
            f"not a NAS-Bench-201 cell: expected the layers {sorted(expected)}; missing "
            f"{sorted(expected - names)}, unexpected {sorted(names - expected)}" + hint)
    connections = set(descriptor.connections)
    wanted = ({(NODE_NAMES[j], name) for (j, _), name in zip(EDGES, EDGE_NAMES)} |
             {(name, NODE_NAMES[i]) for (_, i), name in zip(EDGES, EDGE_NAMES)})
    if connections != wanted:
        raise BenchmarkError(
            f"not a NAS-Bench-201 cell: connections missing {sorted(wanted - connections)}, "
            f"unexpected {sorted(connections - wanted)}" + hint)
    if descriptor.input_layer != NODE_NAMES[0] or descriptor.output_layers != [NODE_NAMES[-1]]:
        raise BenchmarkError(
            f"not a NAS-Bench-201 cell: the input must be '{NODE_NAMES[0]}' and the output "
            f"'{NODE_NAMES[-1]}'; got input {descriptor.input_layer!r}, outputs "
            f"{descriptor.output_layers}" + hint)
    layers = descriptor.layers
    for node in NODE_NAMES:
        layer = layers[node]
        if layer.type != "identity" or (len(descriptor.inputs_of(node)) > 1
                                        and layer.merge != "sum"):
            raise BenchmarkError(
                f"not a NAS-Bench-201 cell: node layer '{node}' must be an 'identity' that sums "
                f"its inputs; got {layer.type!r} with merge={layer.merge!r}" + hint)
    genome = []
    for name in EDGE_NAMES:
        op = _edge_op(layers[name])
        if op is None:
            raise BenchmarkError(
                f"not a NAS-Bench-201 cell: edge layer '{name}' is {layers[name].type}"
                f"({layers[name].params}), which is none of the cell's operations: {_OPS_HELP}"
                + hint)
        genome.append(_OP_INDEX[op])
    return tuple(genome)


def descriptor_to_cell(descriptor: NeuralDescriptor) -> str:
    """The cell string of a descriptor made by ``cell_to_descriptor`` (see
    ``descriptor_to_genome``)."""
    return genome_to_cell(descriptor_to_genome(descriptor))
