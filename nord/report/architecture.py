"""Architectures drawn as layered graphs with matplotlib (no graphviz needed).

    from nord.report.architecture import draw_descriptor, layered_layout

    layout = layered_layout(descriptor)      # pure: boxes and edge routes, in inches
    layout.nodes["conv0"].level              # longest path from the input, 'input' is level 0
    draw_descriptor(descriptor, "best.png", title="best of run ga-seed0")

Details (the layered layout, what a box shows): docs/report.md.
"""
from __future__ import annotations

import logging
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import MissingDependencyError

__all__ = ["NodeBox", "Layout", "layered_layout", "draw_descriptor", "layer_label",
           "layer_colour"]

logger = logging.getLogger(__name__)

INPUT, OUTPUT = "__input__", "__output__"

# Sizes in inches (the drawing is made at one data unit per inch), for 8-point text.
FONT_SIZE = 8
LINE_HEIGHT = 0.15
CHAR_WIDTH = 0.064
BOX_PAD_X, BOX_PAD_Y = 0.22, 0.14
MIN_BOX_WIDTH = 0.9
WAYPOINT_WIDTH = 0.18
H_GAP = 0.3
V_GAP = 0.42
WRAP = 30
MAX_PIXELS = 5000


@dataclass
class NodeBox:
    """One drawn node.

    Attributes:
        name: the layer name (``'__input__'``, ``'__output__'`` for the virtual ends; the
            waypoints of long edges are not nodes).
        kind: 'layer', 'input' or 'output'.
        lines: the text in the box.
        level: longest-path distance from the input (top = 0).
        order: position within its level, from the left.
        x, y: centre of the box, in inches (y grows upwards, so deeper levels have lower y).
        width, height: size in inches.
        layer_type: the registry type of the layer ('' for the virtual ends).
    """

    name: str
    kind: str
    lines: List[str]
    level: int
    order: int = 0
    x: float = 0.0
    y: float = 0.0
    width: float = MIN_BOX_WIDTH
    height: float = 0.3
    layer_type: str = ""


@dataclass
class Layout:
    """A computed drawing.

    Attributes:
        nodes: name -> :class:`NodeBox`, for the layers and the virtual input and output.
        edges: ``(source, target, route)`` for every connection (input and output arrows
            included); ``route`` is the list of ``(x, y)`` points from the bottom of the
            source box to the top of the target box; long edges run straight down through
            each level they cross, in a slot of their own, and bend only between levels.
        levels: the number of levels.
        crossings: edge crossings between adjacent levels in the chosen order.
        bounds: ``(xmin, xmax, ymin, ymax)`` of all boxes, in inches.
    """

    nodes: Dict[str, NodeBox]
    edges: List[Tuple[str, str, List[Tuple[float, float]]]]
    levels: int
    crossings: int
    bounds: Tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)


def _format_value(value) -> str:
    if isinstance(value, float):
        text = f"{value:g}"
    elif isinstance(value, (list, tuple)):
        text = "(" + ", ".join(_format_value(v) for v in value) + ")"
    else:
        text = str(value)
    return text if len(text) <= 24 else text[:21] + "..."


def layer_label(name: str, layer_type: str, params: Dict, merge: Optional[str] = None,
                wrap: int = WRAP) -> List[str]:
    """The lines shown in a layer's box: name, type, parameters, merge rule."""
    lines = [name if len(name) <= wrap else name[:wrap - 3] + "...", layer_type]
    shown = ", ".join(f"{key}={_format_value(value)}" for key, value in params.items())
    if shown:
        lines += textwrap.wrap(shown, wrap, break_long_words=True) or [shown]
    if merge:
        lines.append(f"merge: {merge}")
    return lines


def _box_size(lines: Sequence[str]) -> Tuple[float, float]:
    width = max(MIN_BOX_WIDTH, max(len(line) for line in lines) * CHAR_WIDTH + 2 * BOX_PAD_X)
    return width, len(lines) * LINE_HEIGHT + 2 * BOX_PAD_Y


def _count_crossings(levels: List[List[str]], successors: Dict[str, List[str]]) -> int:
    total = 0
    for upper, lower in zip(levels, levels[1:]):
        position = {name: index for index, name in enumerate(lower)}
        pairs = [(i, position[t]) for i, name in enumerate(upper)
                 for t in successors.get(name, []) if t in position]
        total += sum(1 for a in range(len(pairs)) for b in range(a + 1, len(pairs))
                     if (pairs[a][0] - pairs[b][0]) * (pairs[a][1] - pairs[b][1]) < 0)
    return total


def layered_layout(descriptor: NeuralDescriptor, sweeps: int = 6) -> Layout:
    """Compute a top-down layered drawing of ``descriptor`` (see the module docstring).

    Args:
        descriptor: the architecture; it need not have been validated, but must be acyclic
            (every NeuralDescriptor is).
        sweeps: barycentre sweeps (each one down and one up) when ordering the levels.

    Returns:
        A :class:`Layout` in inches.
    """
    layers = descriptor.layers
    order = descriptor.topological_order()
    edges: List[Tuple[str, str]] = []
    if descriptor.input_layer is not None:
        edges.append((INPUT, descriptor.input_layer))
    # by inputs_of, which every descriptor has alike (2018's of nord.legacy included)
    edges += [(source, name) for name in descriptor.layer_names
              for source in descriptor.inputs_of(name)]
    edges += [(name, OUTPUT) for name in descriptor.output_layers]
    predecessors: Dict[str, List[str]] = {}
    for source, target in edges:
        predecessors.setdefault(target, []).append(source)

    nodes: Dict[str, NodeBox] = {INPUT: NodeBox(INPUT, "input", ["input"], 0)}
    for name in order:
        level = 1 + max((nodes[p].level for p in predecessors.get(name, []) if p in nodes),
                        default=0)
        layer = layers[name]
        merge = layer.merge if len(descriptor.inputs_of(name)) > 1 else None
        nodes[name] = NodeBox(name, "layer", layer_label(name, layer.type, layer.params, merge),
                              level, layer_type=layer.type)
    last = max((nodes[p].level for p in predecessors.get(OUTPUT, []) if p in nodes), default=0)
    nodes[OUTPUT] = NodeBox(OUTPUT, "output", ["output"], last + 1)
    for node in nodes.values():
        node.width, node.height = _box_size(node.lines)
        if node.kind != "layer":
            node.width = max(node.width, 1.0)

    # Split long edges into unit steps through waypoints.
    successors: Dict[str, List[str]] = {}
    routes: List[Tuple[str, str, List[str]]] = []
    waypoint_level: Dict[str, int] = {}
    for source, target in edges:
        chain = [source]
        for level in range(nodes[source].level + 1, nodes[target].level):
            waypoint = f"\0{source}\0{target}\0{level}"
            waypoint_level[waypoint] = level
            chain.append(waypoint)
        chain.append(target)
        for a, b in zip(chain, chain[1:]):
            successors.setdefault(a, []).append(b)
        routes.append((source, target, chain))
    above: Dict[str, List[str]] = {}
    for source, targets in successors.items():
        for target in targets:
            above.setdefault(target, []).append(source)

    n_levels = nodes[OUTPUT].level + 1
    levels: List[List[str]] = [[] for _ in range(n_levels)]
    for name, node in nodes.items():
        levels[node.level].append(name)
    for waypoint, level in waypoint_level.items():
        levels[level].append(waypoint)

    def sort_by(neighbours: Dict[str, List[str]], reference: List[str], level: List[str]) -> None:
        position = {name: index for index, name in enumerate(reference)}
        keys = {}
        for index, name in enumerate(level):
            linked = [position[n] for n in neighbours.get(name, []) if n in position]
            keys[name] = sum(linked) / len(linked) if linked else float(index)
        level.sort(key=lambda name: keys[name])

    best = [list(level) for level in levels]
    best_crossings = _count_crossings(best, successors)
    for _ in range(sweeps):
        if best_crossings == 0:
            break
        for index in range(1, n_levels):
            sort_by(above, levels[index - 1], levels[index])
        for index in range(n_levels - 2, -1, -1):
            sort_by(successors, levels[index + 1], levels[index])
        crossings = _count_crossings(levels, successors)
        if crossings < best_crossings:
            best, best_crossings = [list(level) for level in levels], crossings
    levels = best

    width = {name: nodes[name].width if name in nodes else WAYPOINT_WIDTH
             for level in levels for name in level}
    x: Dict[str, float] = {}
    for level in levels:
        total = sum(width[name] for name in level) + H_GAP * (len(level) - 1)
        left = -total / 2
        for name in level:
            x[name] = left + width[name] / 2
            left += width[name] + H_GAP

    def settle(level: List[str], neighbours: Dict[str, List[str]]) -> None:
        """Move a level towards its neighbours' mean x, keeping order and gaps."""
        wanted = []
        for name in level:
            linked = [x[n] for n in neighbours.get(name, []) if n in x]
            wanted.append(sum(linked) / len(linked) if linked else x[name])
        placed: List[float] = []
        for index, name in enumerate(level):
            value = wanted[index]
            if placed:
                previous = level[index - 1]
                value = max(value, placed[-1] + (width[previous] + width[name]) / 2 + H_GAP)
            placed.append(value)
        shift = sum(w - p for w, p in zip(wanted, placed)) / len(level)
        for name, value in zip(level, placed):
            x[name] = value + shift

    for _ in range(3):
        for index in range(1, n_levels):
            settle(levels[index], above)
        for index in range(n_levels - 2, -1, -1):
            settle(levels[index], successors)
    for index in range(1, n_levels):  # a last pass down, so arrows from the input run straight
        settle(levels[index], above)

    y_top, level_y, level_height = 0.0, [], []
    for level in levels:
        height = max((nodes[name].height for name in level if name in nodes), default=0.2)
        level_y.append(y_top - height / 2)
        level_height.append(height)
        y_top -= height + V_GAP
    for index, level in enumerate(levels):
        for position, name in enumerate(level):
            if name in nodes:
                nodes[name].order = position
                nodes[name].x, nodes[name].y = x[name], level_y[index]

    # Spread the arrows that leave or enter one box along its edge, in left-to-right order.
    def ports(name: str, others: List[str]) -> Dict[str, float]:
        node = nodes[name]
        others = sorted(others, key=lambda other: x[other])
        step = min(0.18, node.width / (len(others) + 1))
        return {other: node.x + (i - (len(others) - 1) / 2) * step for i, other in enumerate(others)}

    out_ports = {name: ports(name, successors.get(name, [])) for name in nodes}
    in_ports = {name: ports(name, above.get(name, [])) for name in nodes}
    routed = []
    for source, target, chain in routes:
        src, dst = nodes[source], nodes[target]
        points = [(out_ports[source][chain[1]], src.y - src.height / 2)]
        for waypoint in chain[1:-1]:
            # Straight down through the level's band, where the boxes are: an edge bends only
            # in the gaps between levels, so it never crosses a box.
            level = waypoint_level[waypoint]
            points.append((x[waypoint], level_y[level] + level_height[level] / 2))
            points.append((x[waypoint], level_y[level] - level_height[level] / 2))
        points.append((in_ports[target][chain[-2]], dst.y + dst.height / 2))
        routed.append((source, target, points))

    boxes = list(nodes.values())
    bounds = (min(b.x - b.width / 2 for b in boxes), max(b.x + b.width / 2 for b in boxes),
              min(b.y - b.height / 2 for b in boxes), max(b.y + b.height / 2 for b in boxes))
    xs = [p[0] for _, _, route in routed for p in route]
    if xs:
        bounds = (min(bounds[0], min(xs)), max(bounds[1], max(xs)), bounds[2], bounds[3])
    return Layout(nodes=nodes, edges=routed, levels=n_levels, crossings=best_crossings,
                  bounds=bounds)


_COLOURS = (
    (("conv",), "#cfe2f3"),
    (("pool",), "#d9ead3"),
    (("relu", "sigmoid", "tanh", "elu", "gelu", "softmax", "activation", "leaky"), "#fce5cd"),
    (("linear", "dense"), "#e6d9f2"),
    (("norm", "dropout"), "#fff2cc"),
    (("identity", "zero", "skip", "flatten"), "#eeeeee"),
)


def layer_colour(layer_type: str) -> str:
    """The fill of a layer's box, by its type (the live view draws boxes in the same colours)."""
    lowered = layer_type.lower()
    for words, colour in _COLOURS:
        if any(word in lowered for word in words):
            return colour
    return "#f4f4f4"


def _matplotlib():
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:  # pragma: no cover - matplotlib is a dependency of nord
        raise MissingDependencyError(
            "drawing reports needs matplotlib; install it with `pip install matplotlib`") from error
    return Figure, FigureCanvasAgg


def draw_descriptor(descriptor: NeuralDescriptor, path: Union[str, os.PathLike],
                    title: Optional[str] = None, dpi: int = 110) -> Path:
    """Draw ``descriptor`` as a layered graph into a PNG file.

    Args:
        descriptor: the architecture.
        path: the PNG file to write (its folder is created).
        title: a line above the graph (e.g. the run and the accuracy).
        dpi: resolution; lowered for very large graphs so neither side exceeds 5000 pixels.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
    from matplotlib.path import Path as MplPath

    Figure, FigureCanvasAgg = _matplotlib()
    layout = layered_layout(descriptor)
    xmin, xmax, ymin, ymax = layout.bounds
    margin = 0.25
    title_lines = textwrap.wrap(title, 70) if title else []
    title_height = 0.22 * len(title_lines) + (0.15 if title_lines else 0.0)
    title_width = 0.09 * max((len(line) for line in title_lines), default=0) + 2 * margin
    width_in = max(2.5, xmax - xmin + 2 * margin, title_width)
    height_in = ymax - ymin + 2 * margin + title_height
    dpi = max(30, min(dpi, int(MAX_PIXELS / max(width_in, height_in))))
    figure = Figure(figsize=(width_in, height_in), dpi=dpi)
    FigureCanvasAgg(figure)
    axes = figure.add_axes((0, 0, 1, 1))
    centre = (xmin + xmax) / 2
    axes.set_xlim(centre - width_in / 2, centre + width_in / 2)
    axes.set_ylim(ymin - margin, ymax + margin + title_height)
    axes.axis("off")
    if title_lines:
        axes.text(centre, ymax + margin / 2 + title_height, "\n".join(title_lines), ha="center",
                  va="top", fontsize=FONT_SIZE + 1.5, fontweight="bold")

    for source, target, route in layout.edges:
        codes = [MplPath.MOVETO] + [MplPath.LINETO] * (len(route) - 1)
        axes.add_patch(FancyArrowPatch(path=MplPath(route, codes), arrowstyle="-|>",
                                       mutation_scale=9, color="#555555", linewidth=0.9,
                                       shrinkA=0, shrinkB=0, zorder=1))
    for node in layout.nodes.values():
        left, bottom = node.x - node.width / 2, node.y - node.height / 2
        if node.kind == "layer":
            style, face = "round,pad=0,rounding_size=0.06", layer_colour(node.layer_type)
        else:
            style, face = "round,pad=0,rounding_size=0.15", "#ffffff"
        axes.add_patch(FancyBboxPatch((left, bottom), node.width, node.height, boxstyle=style,
                                      facecolor=face, edgecolor="#333333", linewidth=0.8,
                                      zorder=2))
        if node.kind == "layer":
            axes.text(node.x, node.y + node.height / 2 - BOX_PAD_Y, node.lines[0], ha="center",
                      va="top", fontsize=FONT_SIZE, fontweight="bold", zorder=3)
            if len(node.lines) > 1:
                axes.text(node.x, node.y + node.height / 2 - BOX_PAD_Y - LINE_HEIGHT,
                          "\n".join(node.lines[1:]), ha="center", va="top", fontsize=FONT_SIZE,
                          linespacing=1.3, zorder=3)
        else:
            axes.text(node.x, node.y, node.lines[0], ha="center", va="center",
                      fontsize=FONT_SIZE, fontstyle="italic", zorder=3)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=dpi, facecolor="white")
    return path
