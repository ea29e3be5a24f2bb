"""Canonical labelling of vertex-coloured directed acyclic graphs.

The exact identity of an architecture rests on one function: ``canonical_order`` lists the
vertices of a coloured DAG so that two isomorphic graphs, relabelled by their lists, become
identical::

    from nord.architecture.identity import canonical_order
    colours = [0, 1, 1]                 # invariant colours (layer contents, ranked)
    successors = [[1, 2], [], []]       # vertex 0 feeds 1 and 2
    order = canonical_order(colours, successors)

Details (how it works, cheapest step first): docs/architecture.md.
"""
from __future__ import annotations

from collections import deque
from typing import Dict, Hashable, List, Optional, Sequence, Tuple


def canonical_order(colours: Sequence[Hashable], successors: Sequence[Sequence[int]]) -> List[int]:
    """The vertices of a coloured DAG in canonical order.

    Args:
        colours: one sortable colour per vertex (vertices are ``0 .. n-1``). Colours must be
            comparable between graphs: two vertices match only if their colours are equal.
        successors: ``successors[v]`` lists the vertices ``v`` has an edge to (no repeats).

    Returns:
        A permutation of ``range(n)``: relabelling ``order[i]`` as ``i`` gives the same
        coloured graph for isomorphic inputs, and different ones otherwise.

    Raises:
        ValueError: the lists differ in length, or the graph has a cycle.
    """
    n = len(colours)
    if len(successors) != n:
        raise ValueError(f"{n} colours but {len(successors)} successor lists")
    predecessors: List[List[int]] = [[] for _ in range(n)]
    for vertex, targets in enumerate(successors):
        for target in targets:
            predecessors[target].append(vertex)
    ranks = level_ranks(colours, successors, predecessors)
    order = sorted(range(n), key=ranks.__getitem__)
    if n == 0 or ranks[order[-1]] == n - 1:  # every rank distinct: the order is exact
        return order
    classes = _twin_classes(ranks, successors, predecessors)
    if len(classes) < n:
        return _order_by_twin_classes(classes, ranks, successors)
    return _Search(ranks, successors, predecessors).run()


def level_ranks(colours: Sequence[Hashable], successors: Sequence[Sequence[int]],
                predecessors: Sequence[Sequence[int]]) -> List[int]:
    """Invariant ranks ``0 .. k-1`` from colours and both directions' levels (step 1).

    A vertex's forward label is its colour and the multiset of its predecessors' forward
    labels; its backward label the same with successors. Ranks are assigned level by level
    in sorted order, so they depend on the graph's structure only.
    """
    forward = _directed_ranks(colours, successors, predecessors)
    backward = _directed_ranks(colours, predecessors, successors)
    return _rank(list(zip(forward, backward)))


def _directed_ranks(colours, successors, predecessors) -> List[int]:
    n = len(colours)
    waiting = [len(sources) for sources in predecessors]
    depth = [0] * n
    order = [v for v in range(n) if not waiting[v]]
    for vertex in order:  # Kahn's algorithm: order grows while it is read
        below = depth[vertex] + 1
        for target in successors[vertex]:
            if depth[target] < below:
                depth[target] = below
            waiting[target] -= 1
            if not waiting[target]:
                order.append(target)
    if len(order) != n:
        raise ValueError("the graph has a cycle; canonical_order takes acyclic graphs")
    levels: List[List[int]] = [[] for _ in range(max(depth, default=0) + 1)]
    for vertex in order:
        levels[depth[vertex]].append(vertex)
    rank = [0] * n
    assigned = 0
    for level in levels:
        if len(level) == 1:  # alone on its level: a rank of its own, no key to sort
            vertex = level[0]
            rank[vertex] = assigned
            assigned += 1
            continue
        groups: Dict[tuple, List[int]] = {}
        for vertex in level:
            key = (colours[vertex], tuple(sorted([rank[u] for u in predecessors[vertex]])))
            groups.setdefault(key, []).append(vertex)
        for key in sorted(groups):
            for vertex in groups[key]:
                rank[vertex] = assigned
            assigned += 1
    return rank


def _twin_classes(ranks, successors, predecessors) -> List[List[int]]:
    """Vertices grouped by rank, predecessors and successors: twins are interchangeable."""
    groups: Dict[tuple, List[int]] = {}
    for vertex, rank in enumerate(ranks):
        key = (rank, tuple(sorted(predecessors[vertex])), tuple(sorted(successors[vertex])))
        groups.setdefault(key, []).append(vertex)
    return list(groups.values())


def _order_by_twin_classes(classes, ranks, successors) -> List[int]:
    """Canonical order through the graph of twin classes.

    Any isomorphism maps twin classes onto twin classes of the same rank and size, and
    all edges between two classes are present or none are. So a canonical order of the
    class graph, coloured by (rank, size), with each class's members in a block, is a
    canonical order of the graph; k identical parallel layers cost one class.
    """
    class_of = {}
    for index, members in enumerate(classes):
        for vertex in members:
            class_of[vertex] = index
    colours = [(ranks[members[0]], len(members)) for members in classes]
    edges = [sorted({class_of[w] for w in successors[members[0]]}) for members in classes]
    return [vertex for index in canonical_order(colours, edges) for vertex in classes[index]]


def _rank(keys: Sequence) -> List[int]:
    """Dense ranks of sortable keys: equal keys share a rank, order follows the keys."""
    index = {key: i for i, key in enumerate(sorted(set(keys)))}
    return [index[key] for key in keys]


# --- partitions ---------------------------------------------------------------------------
class _Partition:
    """An ordered partition of the vertices: cells are contiguous ranges of ``lab``.

    ``cell[v]`` is the start of v's cell, ``size[s]`` the size of the cell starting at s,
    ``pos[v]`` the index of v in ``lab``. The search moves down and back up one partition:
    every change to ``cell`` and ``size`` goes on ``trail`` and ``undo`` takes it back. The
    order of vertices inside a cell is not restored; no result depends on it.
    """

    __slots__ = ("lab", "pos", "cell", "size", "cells", "trail")

    def __init__(self, ranks: Sequence[int]):
        n = len(ranks)
        self.lab = lab = sorted(range(n), key=ranks.__getitem__)
        self.pos = pos = [0] * n
        self.cell = cell = [0] * n
        self.size = size = [0] * n
        start = 0
        for i, vertex in enumerate(lab):
            pos[vertex] = i
            if i and ranks[vertex] != ranks[lab[i - 1]]:
                size[start] = i - start
                start = i
            cell[vertex] = start
        if n:
            size[start] = n - start
        self.cells = len(set(ranks))
        self.trail: List[tuple] = []

    @property
    def discrete(self) -> bool:
        return self.cells == len(self.lab)

    def starts(self) -> List[int]:
        """Cell starts in order."""
        starts, i, n = [], 0, len(self.lab)
        while i < n:
            starts.append(i)
            i += self.size[i]
        return starts

    def first_open_cell(self, start: int = 0) -> int:
        """Start of the first cell with more than one vertex, looking from the cell at
        ``start`` on (every cell before it must be a singleton)."""
        i, size = start, self.size
        while size[i] == 1:
            i += 1
        return i

    def undo(self, mark: int, cells: int) -> None:
        """Go back to the state when the trail had ``mark`` entries and ``cells`` cells."""
        trail = self.trail
        while len(trail) > mark:
            array, index, value = trail.pop()
            array[index] = value
        self.cells = cells

    def individualise(self, vertex: int) -> int:
        """Give ``vertex`` a cell of its own at the front of its cell; returns that start."""
        lab, pos, cell, size, trail = self.lab, self.pos, self.cell, self.size, self.trail
        start = cell[vertex]
        length = size[start]
        other = lab[start]
        old = pos[vertex]
        lab[start], lab[old] = vertex, other
        pos[vertex], pos[other] = start, old
        trail.append((size, start, length))
        trail.append((size, start + 1, size[start + 1]))
        size[start] = 1
        size[start + 1] = length - 1
        for i in range(start + 1, start + length):
            trail.append((cell, lab[i], start))
            cell[lab[i]] = start + 1
        self.cells += 1
        return start

    def refine(self, queue: Sequence[int], successors, predecessors) -> Tuple[int, ...]:
        """Split cells until every cell has, for every cell, one count of neighbours per
        direction (an equitable partition); returns the trace of the splits, a triple
        (start, length, pieces) per split cell.

        ``queue`` lists the cells to split by first; the partition must already be
        equitable with respect to every other cell, or to a union of cells that contains it
        together with cells in the queue.
        """
        lab, pos, cell, size, trail = self.lab, self.pos, self.cell, self.size, self.trail
        n = len(lab)
        pending = deque(queue)
        queued = set(queue)
        trace: List[int] = []
        while pending and self.cells < n:
            splitter = pending.popleft()
            queued.discard(splitter)
            members = lab[splitter:splitter + size[splitter]]
            for adjacency in (successors, predecessors):
                counts: Dict[int, int] = {}
                for vertex in members:
                    for neighbour in adjacency[vertex]:
                        counts[neighbour] = counts.get(neighbour, 0) + 1
                touched: Dict[int, List[int]] = {}
                for vertex in counts:
                    start = cell[vertex]
                    if size[start] > 1:
                        touched.setdefault(start, []).append(vertex)
                for start in sorted(touched):
                    hit = touched[start]
                    length = size[start]
                    if len(hit) == length:
                        first = counts[hit[0]]
                        if all(counts[v] == first for v in hit):
                            continue
                    end = start + length
                    boundary = end
                    for vertex in hit:  # move the touched vertices to the end of the cell
                        boundary -= 1
                        other = lab[boundary]
                        old = pos[vertex]
                        lab[boundary], lab[old] = vertex, other
                        pos[vertex], pos[other] = boundary, old
                    lab[boundary:end] = sorted(lab[boundary:end], key=counts.__getitem__)
                    pieces = [start] if boundary > start else []
                    previous = None
                    for i in range(boundary, end):
                        vertex = lab[i]
                        pos[vertex] = i
                        value = counts[vertex]
                        if value != previous:
                            pieces.append(i)
                            previous = value
                    pieces.append(end)
                    for k in range(len(pieces) - 1):
                        piece, following = pieces[k], pieces[k + 1]
                        trail.append((size, piece, size[piece]))
                        size[piece] = following - piece
                        if piece != start:
                            for i in range(piece, following):
                                vertex = lab[i]
                                trail.append((cell, vertex, cell[vertex]))
                                cell[vertex] = piece
                    pieces.pop()
                    self.cells += len(pieces) - 1
                    trace += (start, length, len(pieces))
                    if start in queued:
                        keep = start
                    else:
                        keep = max(pieces, key=size.__getitem__)  # first largest: implied
                    for piece in pieces:
                        if piece != keep:
                            pending.append(piece)
                            queued.add(piece)
        return tuple(trace)


# --- the search -------------------------------------------------------------------------
class _Leaf:
    __slots__ = ("traces", "certificate", "lab", "path")

    def __init__(self, traces, certificate, lab, path):
        self.traces, self.certificate, self.lab, self.path = traces, certificate, lab, path

    def same(self, traces, certificate) -> bool:
        return self.traces == traces and self.certificate == certificate


class _Node:
    """A node of the search tree: its place on the trail, path, and children left."""

    __slots__ = ("mark", "cells", "depth", "first_path", "target", "children", "next",
                 "explored", "orbit", "fixed", "merged")

    def __init__(self, partition: _Partition, depth: int, first_path: bool, after: int = 0):
        self.mark = len(partition.trail)
        self.cells = partition.cells
        self.depth = depth            # vertices individualised on the way here
        self.first_path = first_path  # on the path to the first leaf
        self.target = start = partition.first_open_cell(after)
        self.children = partition.lab[start:start + partition.size[start]]
        self.next = 0
        self.explored: List[int] = []
        self.orbit: Optional[Dict[int, int]] = None  # union-find over the cell, made on need
        self.fixed: Optional[set] = None
        self.merged: Optional[set] = None            # automorphisms read so far

    def _find(self, vertex: int) -> int:
        orbit = self.orbit
        while orbit[vertex] != vertex:
            orbit[vertex] = orbit[orbit[vertex]]
            vertex = orbit[vertex]
        return vertex

    def next_child(self, automorphisms: List[Dict[int, int]],
                   moving: Dict[int, List[int]], path: List[int]) -> Optional[int]:
        """The next child whose orbit (under automorphisms fixing the path) is unexplored.

        ``moving[v]`` lists the automorphisms that move v: only those that move a vertex
        of this cell can join orbits here. ``path[:depth]`` is this node's path.
        """
        if not self.explored:  # the first child needs no orbits (most nodes see only it)
            self.next = 1
            self.explored.append(self.children[0])
            return self.children[0]
        if self.orbit is None:
            self.orbit = {v: v for v in self.children}
            self.fixed = set(path[:self.depth])
            self.merged = set()
        orbit, merged = self.orbit, self.merged
        fresh = {index for v in self.children for index in moving.get(v, ())
                 if index not in merged}
        for index in sorted(fresh):
            merged.add(index)
            moved = automorphisms[index]
            if not self.fixed.isdisjoint(moved):
                continue  # moves a vertex of the path
            for vertex, image in moved.items():
                if vertex in orbit:
                    a, b = self._find(vertex), self._find(image)
                    if a != b:
                        orbit[max(a, b)] = min(a, b)
        seen = {self._find(v) for v in self.explored}
        while self.next < len(self.children):
            vertex = self.children[self.next]
            self.next += 1
            if self._find(vertex) not in seen:
                self.explored.append(vertex)
                return vertex
        return None


class _Search:
    def __init__(self, ranks: List[int], successors, predecessors):
        self.ranks = ranks
        self.successors = successors
        self.predecessors = predecessors
        self.automorphisms: List[Dict[int, int]] = []
        self.moving: Dict[int, List[int]] = {}  # vertex -> automorphisms moving it

    def _found(self, automorphism: Dict[int, int]) -> None:
        index = len(self.automorphisms)
        self.automorphisms.append(automorphism)
        for vertex in automorphism:
            self.moving.setdefault(vertex, []).append(index)

    def _swap_in_place(self, partition: _Partition, first_lab: List[int],
                       trace: Sequence[int], target: int, target_size: int) -> bool:
        """Try to find, without descending, an automorphism that maps the first child of a
        node on the first path to this sibling (whose partition ``partition`` now is).

        The first leaf and the sibling's partition hold the same sets in every cell of the
        latter; in the node's cells that the sibling's refinement split, map the first
        leaf's vertex at each singleton position to the sibling's, pair the vertices that
        two cells do not share, and fix everything else. If that permutation keeps every
        edge, it is an automorphism fixing the node's path: it is recorded and the sibling
        skipped. This settles repeated symmetric blocks (two identical branches in each of
        many cells) in one refinement per sibling instead of a descent to a leaf.
        """
        # The node's cells that were split: the widest of the nested split ranges.
        ranges = sorted([(target, target + target_size)]
                        + [(trace[k], trace[k] + trace[k + 1]) for k in range(0, len(trace), 3)])
        lab, size = partition.lab, partition.size
        mapping: Dict[int, int] = {}
        reach = -1
        for begin, end in ranges:
            if begin < reach:
                continue  # inside a range already read
            reach = end
            i = begin
            while i < end:
                length = size[i]
                if length == 1:
                    if first_lab[i] != lab[i]:
                        mapping[first_lab[i]] = lab[i]
                else:
                    old, new = first_lab[i:i + length], lab[i:i + length]
                    old_set, new_set = set(old), set(new)
                    mapping.update(zip([v for v in old if v not in new_set],
                                       [v for v in new if v not in old_set]))
                i += length
        images = set(mapping.values())
        if not mapping or len(images) != len(mapping) or images != mapping.keys():
            return False
        ranks, successors, predecessors = self.ranks, self.successors, self.predecessors
        for vertex, image in mapping.items():
            if ranks[vertex] != ranks[image]:
                return False
            for adjacency in (successors, predecessors):
                if {mapping.get(w, w) for w in adjacency[vertex]} != set(adjacency[image]):
                    return False
        self._found(mapping)
        return True

    def _certificate(self, partition: _Partition) -> tuple:
        pos, successors = partition.pos, self.successors
        return tuple(tuple(sorted([pos[w] for w in successors[v]])) for v in partition.lab)

    def run(self) -> List[int]:
        partition = _Partition(self.ranks)
        trace = partition.refine(partition.starts(), self.successors, self.predecessors)
        if partition.discrete:
            return partition.lab
        partition.trail.clear()  # the root is never undone
        first: Optional[_Leaf] = None
        best: Optional[_Leaf] = None
        path: List[int] = []         # the vertices individualised, down to the current node
        traces: List[tuple] = [trace]  # the refinement traces along the path
        stack = [_Node(partition, 0, True)]
        while stack:
            node = stack[-1]
            vertex = node.next_child(self.automorphisms, self.moving, path)
            if vertex is None:
                stack.pop()
                continue
            partition.undo(node.mark, node.cells)
            target_size = partition.size[node.target]
            start = partition.individualise(vertex)
            trace = partition.refine([start], self.successors, self.predecessors)
            del path[node.depth:], traces[node.depth + 1:]
            path.append(vertex)
            traces.append(trace)
            if best is not None and traces > best.traces[:len(traces)]:
                continue  # every leaf below has a larger key than the best one
            if (first is not None and node.first_path and traces == first.traces[:len(traces)]
                    and self._swap_in_place(partition, first.lab, trace, start, target_size)):
                continue  # this child's subtree is an image of the first child's
            if not partition.discrete:
                stack.append(_Node(partition, len(path), first is None, node.target))
                continue
            certificate = self._certificate(partition)
            if first is None:
                first = best = _Leaf(traces[:], certificate, partition.lab[:], path[:])
                continue
            for known in (first, best):
                if known.same(traces, certificate):
                    # The map known leaf -> this leaf is an automorphism fixing the common
                    # path and mapping one child of the node where the paths part to
                    # another: that child's subtree repeats an explored one.
                    self._found({a: b for a, b in zip(known.lab, partition.lab) if a != b})
                    depth = _common_prefix(path, known.path)
                    del stack[depth + 1:]
                    break
            else:
                if (traces, certificate) < (best.traces, best.certificate):
                    best = _Leaf(traces[:], certificate, partition.lab[:], path[:])
        return best.lab


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    length = 0
    for x, y in zip(a, b):
        if x != y:
            break
        length += 1
    return length
