"""The exact identity of architectures: nord.architecture.identity (canonical order of coloured DAGs) and
NeuralDescriptor.canonical_form / hash / same_architecture.

The canonical order is checked against a brute-force canonical form on every small DAG,
against networkx's VF2 isomorphism test on random and highly symmetric DAGs, and on
families of non-isomorphic graphs that colour refinement (Weisfeiler-Lehman) cannot tell
apart.
"""
import itertools
import random

import networkx as nx
import pytest

from nord.architecture import identity
from nord.benchmarks.nasbench201.cells import N_CELLS, code_to_genome, genome_to_descriptor
from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import ConfigurationError, UnreachableLayerError
from nord.architecture.identity import canonical_order


# --- graphs as (colours, successors) ------------------------------------------------------
def form(colours, successors):
    """The relabelled graph: what must be equal exactly for isomorphic inputs."""
    order = canonical_order(colours, successors)
    assert sorted(order) == list(range(len(colours)))
    position = {vertex: i for i, vertex in enumerate(order)}
    return (tuple(colours[v] for v in order),
            tuple(sorted((position[v], position[w])
                         for v, targets in enumerate(successors) for w in targets)))


def shuffled(colours, successors, rng):
    """The same graph with vertices renumbered and successor lists reordered."""
    n = len(colours)
    mapping = list(range(n))
    rng.shuffle(mapping)
    new_colours = [None] * n
    new_successors = [None] * n
    for v in range(n):
        targets = [mapping[w] for w in successors[v]]
        rng.shuffle(targets)
        new_colours[mapping[v]] = colours[v]
        new_successors[mapping[v]] = targets
    return new_colours, new_successors


def to_networkx(colours, successors):
    graph = nx.DiGraph()
    for v, colour in enumerate(colours):
        graph.add_node(v, colour=colour)
    graph.add_edges_from((v, w) for v, targets in enumerate(successors) for w in targets)
    return graph


def isomorphic(a, b):
    return nx.is_isomorphic(to_networkx(*a), to_networkx(*b),
                            node_match=lambda x, y: x["colour"] == y["colour"])


def brute_force_form(colours, successors):
    """The smallest relabelled graph over every permutation (tiny graphs only)."""
    n = len(colours)
    best = None
    for perm in itertools.permutations(range(n)):
        candidate = (tuple(colours[perm.index(i)] for i in range(n)),
                     tuple(sorted((perm[v], perm[w])
                                  for v, targets in enumerate(successors) for w in targets)))
        if best is None or candidate < best:
            best = candidate
    return best


def random_dag(rng, n, colours, density):
    order = list(range(n))
    rng.shuffle(order)  # vertex numbers need not follow a topological order
    succ = [[] for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < density:
                succ[order[i]].append(order[j])
    return [rng.randrange(colours) for _ in range(n)], succ


def parallel_branches(k, length, colour_of_step=lambda step: 1 + step):
    """Source, k identical branches of ``length`` vertices, sink."""
    colours, succ = [0], [[]]
    ends = []
    for _ in range(k):
        previous = 0
        for step in range(length):
            vertex = len(colours)
            colours.append(colour_of_step(step))
            succ.append([])
            succ[previous].append(vertex)
            previous = vertex
        ends.append(previous)
    sink = len(colours)
    colours.append(99)
    succ.append([])
    for end in ends:
        succ[end].append(sink)
    return colours, succ


def stacked_blocks(blocks, width=2, length=2):
    """A chain of blocks, each ``width`` identical branches of ``length`` vertices between
    one vertex and the next: 2**blocks automorphisms when width is 2."""
    colours, succ = [0], [[]]
    top = 0
    for _ in range(blocks):
        ends = []
        for _ in range(width):
            previous = top
            for step in range(length):
                vertex = len(colours)
                colours.append(1 + step)
                succ.append([])
                succ[previous].append(vertex)
                previous = vertex
            ends.append(previous)
        top = len(colours)
        colours.append(0)
        succ.append([])
        for end in ends:
            succ[end].append(top)
    return colours, succ


def grid(rows, columns):
    """(i, j) -> (i+1, j) and (i, j+1): symmetric under transposition when square."""
    index = {(i, j): i * columns + j for i in range(rows) for j in range(columns)}
    succ = [[] for _ in index]
    for (i, j), v in index.items():
        if i + 1 < rows:
            succ[v].append(index[(i + 1, j)])
        if j + 1 < columns:
            succ[v].append(index[(i, j + 1)])
    return [0] * len(index), succ


def cycle_wiring(parts):
    """Stem -> a_0..a_{n-1} -> b_0..b_{n-1}; the a-b connections form one 2p-cycle per
    part p (each a feeds two b's, each b is fed by two a's). Every such wiring of the same
    n looks the same to colour refinement."""
    n = sum(parts)
    colours = [0] + [1] * n + [2] * n
    succ = [[1 + i for i in range(n)]] + [[] for _ in range(2 * n)]
    base = 0
    for part in parts:
        for i in range(part):
            a = base + i
            succ[1 + a].append(1 + n + a)
            succ[1 + a].append(1 + n + base + (i + 1) % part)
        base += part
    return colours, succ


def partitions(n, smallest=2):
    """Partitions of n into parts >= smallest, as non-increasing tuples."""
    if n == 0:
        yield ()
        return
    for first in range(n, smallest - 1, -1):
        for rest in partitions(n - first, smallest):
            if not rest or rest[0] <= first:
                yield (first,) + rest


def refinement_histogram(colours, successors):
    """Stable colour refinement (naive rounds): the multiset of final colours, as
    Weisfeiler-Lehman sees the graph."""
    n = len(colours)
    predecessors = [[] for _ in range(n)]
    for v, targets in enumerate(successors):
        for w in targets:
            predecessors[w].append(v)
    current = list(colours)
    for _ in range(n + 1):
        signatures = [(current[v], tuple(sorted(current[u] for u in predecessors[v])),
                       tuple(sorted(current[w] for w in successors[v]))) for v in range(n)]
        ranks = {s: i for i, s in enumerate(sorted(set(signatures)))}
        refined = [ranks[s] for s in signatures]
        if len(set(refined)) == len(set(current)):
            break
        current = refined
    return sorted(signatures)


# --- the algorithm against brute force and VF2 ----------------------------------------------
@pytest.mark.parametrize("n, n_colours", [(4, 2), (5, 1)])
def test_every_small_dag_matches_the_brute_force_canonical_form(n, n_colours):
    # Every DAG on n vertices is isomorphic to one with edges i -> j, i < j only.
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    ours, brute = {}, {}
    for mask in range(1 << len(pairs)):
        succ = [[] for _ in range(n)]
        for bit, (i, j) in enumerate(pairs):
            if mask >> bit & 1:
                succ[i].append(j)
        for colours in itertools.product(range(n_colours), repeat=n):
            graph = (list(colours), succ)
            key = (mask, colours)
            ours[key] = form(*graph)
            brute[key] = brute_force_form(*graph)
    # The same equivalence classes: equal forms exactly when brute force says isomorphic.
    pairing = {}
    for key in ours:
        assert pairing.setdefault(ours[key], brute[key]) == brute[key]
    assert len(set(ours.values())) == len(set(brute.values()))


def test_random_dags_agree_with_vf2():
    rng = random.Random(7)
    equal = different = 0
    for _ in range(600):
        n = rng.randint(1, 9)
        n_colours = rng.randint(1, 3)
        density = rng.choice([0.15, 0.3, 0.5, 0.8])
        a = random_dag(rng, n, n_colours, density)
        assert form(*a) == form(*shuffled(*a, rng))
        b = random_dag(rng, n, n_colours, density)
        same = form(*a) == form(*b)
        assert same == isomorphic(a, b), (a, b)
        equal += same
        different += not same
    assert equal > 20 and different > 20  # both outcomes were exercised


def symmetric_graphs():
    yield "twins", parallel_branches(6, 1)
    yield "branches of 3", parallel_branches(5, 3)
    yield "branches of 2, repeated colours", parallel_branches(4, 2, lambda step: 1)
    yield "stacked blocks", stacked_blocks(6)
    yield "stacked blocks of 3", stacked_blocks(3, width=3, length=3)
    yield "square grid", grid(4, 4)
    yield "grid", grid(3, 5)
    for parts in [(8,), (4, 4), (3, 3, 2), (2, 2, 2, 2)]:
        yield f"wiring {parts}", cycle_wiring(parts)
    # nested symmetry: k copies of a diamond under one stem, each diamond with twins
    colours, succ = [0], [[]]
    for _ in range(4):
        top = len(colours)
        colours += [1, 2, 2, 3]
        succ += [[top + 1, top + 2], [top + 3], [top + 3], []]
        succ[0].append(top)
    yield "diamonds", (colours, succ)


@pytest.mark.parametrize("name, graph", list(symmetric_graphs()), ids=lambda x: str(x)[:30])
def test_symmetric_graphs_equal_their_shuffled_copies(name, graph):
    rng = random.Random(name)
    expected = form(*graph)
    for _ in range(8):
        assert form(*shuffled(*graph, rng)) == expected


@pytest.mark.parametrize("name, graph", list(symmetric_graphs()), ids=lambda x: str(x)[:30])
def test_one_edge_moved_in_a_symmetric_graph_agrees_with_vf2(name, graph):
    rng = random.Random(name)
    colours, succ = graph
    edges = [(v, w) for v, targets in enumerate(succ) for w in targets]
    for _ in range(10):
        v, w = rng.choice(edges)
        candidates = [u for u in range(len(colours)) if u not in succ[v] and u != v
                      and not nx.has_path(to_networkx(colours, succ), u, v)]
        if not candidates:
            continue
        moved = [list(targets) for targets in succ]
        moved[v].remove(w)
        moved[v].append(rng.choice(candidates))
        changed = (colours, moved)
        assert (form(*graph) == form(*changed)) == isomorphic(graph, changed)


def test_cycle_wirings_that_refinement_cannot_separate_are_told_apart():
    for n in range(4, 11):
        graphs = {parts: cycle_wiring(parts) for parts in partitions(n)}
        assert len(graphs) >= 2
        histograms = {tuple(refinement_histogram(*g)) for g in graphs.values()}
        assert len(histograms) == 1  # Weisfeiler-Lehman sees one graph
        forms = {parts: form(*g) for parts, g in graphs.items()}
        assert len(set(forms.values())) == len(graphs), n
        rng = random.Random(n)
        for parts, g in graphs.items():
            assert form(*shuffled(*g, rng)) == forms[parts]


def random_regular_wiring(rng, n, degree):
    """Stem -> a_i -> b_j with every a feeding ``degree`` b's and every b fed by ``degree``;
    returns the graph and its set of (a, b) pairs."""
    while True:
        slots = [b for b in range(n) for _ in range(degree)]
        rng.shuffle(slots)
        pairs = {(a, slots[a * degree + k]) for a in range(n) for k in range(degree)}
        if len(pairs) == n * degree:  # no repeated connection
            break
    colours = [0] + [1] * n + [2] * n
    succ = [[1 + a for a in range(n)]] + [[] for _ in range(2 * n)]
    for a, b in sorted(pairs):
        succ[1 + a].append(1 + n + b)
    return (colours, succ), pairs


def wirings_isomorphic(n, first, second):
    """Brute force over the a's: some renumbering of a's makes the b's neighbourhoods
    (as sets of a's) the same multiset. (VF2 takes minutes on regular graphs.)"""
    def b_sides(pairs, perm):
        sides = [[] for _ in range(n)]
        for a, b in pairs:
            sides[b].append(perm[a])
        return sorted(tuple(sorted(side)) for side in sides)

    target = b_sides(second, range(n))
    return any(b_sides(first, perm) == target for perm in itertools.permutations(range(n)))


@pytest.mark.slow
def test_random_regular_wirings_agree_with_brute_force():
    # All regular wirings of one size and degree look alike to colour refinement, so
    # every pair here is told apart (or matched) by the search alone.
    rng = random.Random(3)
    outcomes = set()
    for n, degree in [(5, 2), (6, 2), (6, 3), (7, 2), (7, 3)]:
        wirings = [random_regular_wiring(rng, n, degree) for _ in range(10)]
        forms = [form(*graph) for graph, _ in wirings]
        for i, j in itertools.combinations(range(len(wirings)), 2):
            same = forms[i] == forms[j]
            assert same == wirings_isomorphic(n, wirings[i][1], wirings[j][1])
            outcomes.add(same)
        for (graph, _), f in zip(wirings, forms):
            assert form(*shuffled(*graph, rng)) == f
    assert outcomes == {True, False}


def test_every_automorphism_the_search_records_is_one():
    # Pruning is sound only if each recorded permutation keeps every edge and colour,
    # including those guessed without descending to a leaf.
    rng = random.Random(5)
    graphs = [random_regular_wiring(rng, n, degree)[0]
              for n, degree in [(6, 2), (7, 3), (8, 3), (9, 3), (10, 3), (12, 4)]
              for _ in range(25)]
    graphs += [random_dag(rng, rng.randint(3, 12), rng.randint(1, 2), rng.choice([0.2, 0.5]))
               for _ in range(300)]
    graphs += [graph for _, graph in symmetric_graphs()]
    recorded = 0
    for colours, succ in graphs:
        n = len(colours)
        predecessors = [[] for _ in range(n)]
        for v, targets in enumerate(succ):
            for w in targets:
                predecessors[w].append(v)
        search = identity._Search(identity.level_ranks(colours, succ, predecessors),
                                  succ, predecessors)
        search.run()
        edges = {(v, w) for v, targets in enumerate(succ) for w in targets}
        for moved in search.automorphisms:
            assert {(moved.get(v, v), moved.get(w, w)) for v, w in edges} == edges
            assert all(colours[v] == colours[image] for v, image in moved.items())
            recorded += 1
    assert recorded > 100


def test_refinement_yields_the_coarsest_equitable_partition():
    rng = random.Random(11)
    for _ in range(200):
        n = rng.randint(2, 14)
        colours, succ = random_dag(rng, n, rng.randint(1, 3), rng.choice([0.2, 0.4]))
        predecessors = [[] for _ in range(n)]
        for v, targets in enumerate(succ):
            for w in targets:
                predecessors[w].append(v)
        partition = identity._Partition(identity._rank(colours))
        partition.refine(partition.starts(), succ, predecessors)
        cells = [frozenset(partition.lab[s:s + partition.size[s]]) for s in partition.starts()]
        for s in partition.starts():
            assert all(partition.cell[v] == s for v in partition.lab[s:s + partition.size[s]])
        # equitable: within a cell, the same count of neighbours in every cell, both ways
        for cell in cells:
            for other in cells:
                for adjacency in (succ, predecessors):
                    assert len({sum(w in other for w in adjacency[v]) for v in cell}) == 1
        # coarsest: the same cells as naive colour refinement from the same colours
        naive = list(colours)
        for _ in range(n + 1):
            naive = identity._rank([(naive[v], tuple(sorted(naive[u] for u in predecessors[v])),
                                     tuple(sorted(naive[w] for w in succ[v])))
                                    for v in range(n)])
        naive_cells = {frozenset(v for v in range(n) if naive[v] == c) for c in set(naive)}
        assert set(cells) == naive_cells


def test_chains_and_twins_need_no_search(monkeypatch):
    # A guard on the linear path: level ranks settle a chain, and identical parallel
    # layers collapse into one class, without the search tree.
    def no_search(*args):
        raise AssertionError("the search tree was entered")

    monkeypatch.setattr(identity._Search, "__init__", no_search)
    chain = ([i % 3 for i in range(5000)], [[i + 1] for i in range(4999)] + [[]])
    order = canonical_order(*chain)
    assert order == list(range(5000))
    form(*parallel_branches(500, 1))


def test_identical_branches_cost_a_quadratic_number_of_search_nodes(monkeypatch):
    created = []
    limit = [0]
    original = identity._Node.__init__

    def counting(self, *args):
        created.append(1)
        # without automorphism pruning this would be about k! nodes: stop early
        assert len(created) <= limit[0], "too many search nodes"
        original(self, *args)

    monkeypatch.setattr(identity._Node, "__init__", counting)
    for k in (4, 8, 16):
        created.clear()
        limit[0] = k * k
        form(*parallel_branches(k, 3))
        assert created


def test_stacked_symmetric_blocks_cost_a_linear_number_of_search_nodes(monkeypatch):
    # Each block's swap is found in place, without descending to a leaf: one node per
    # block on the first path, however many blocks are stacked.
    created = []
    original = identity._Node.__init__

    def counting(self, *args):
        created.append(1)
        assert len(created) <= 2 * blocks + 2, "too many search nodes"
        original(self, *args)

    monkeypatch.setattr(identity._Node, "__init__", counting)
    for blocks in (10, 100, 400):
        created.clear()
        form(*stacked_blocks(blocks))
        assert created


def test_canonical_order_rejects_a_cycle_and_mismatched_lengths():
    with pytest.raises(ValueError, match="cycle"):
        canonical_order([0, 0], [[1], [0]])
    with pytest.raises(ValueError, match="2 colours"):
        canonical_order([0, 0], [[1]])


def test_empty_and_single_vertex_graphs():
    assert canonical_order([], []) == []
    assert canonical_order(["x"], [[]]) == [0]


# --- descriptors ----------------------------------------------------------------------------
CONV = {"out_channels": 8, "kernel_size": 3}


def wired(pairs, n=4):
    """A stem feeding conv a0..a{n-1}, a_i feeding conv b_j for each (i, j) in pairs."""
    d = NeuralDescriptor()
    d.add_layer("conv2d", CONV, "stem")
    for i in range(n):
        d.add_layer("conv2d", CONV, f"a{i}")
        d.connect_layers("stem", f"a{i}")
    for j in range(n):
        d.add_layer("conv2d", CONV, f"b{j}")
    for i, j in pairs:
        d.connect_layers(f"a{i}", f"b{j}")
    return d


def shuffled_descriptor(d, rng):
    """The same graph, every layer renamed, layers and connections added in random order."""
    data = d.to_dict()
    layers = data["layers"]
    fresh = [f"x{i}" for i in range(len(layers))]
    rng.shuffle(fresh)
    rename = {layer["name"]: name for layer, name in zip(layers, fresh)}
    rng.shuffle(layers)
    copy = NeuralDescriptor()
    for layer in layers:
        copy.add_layer(layer["type"], layer["params"], rename[layer["name"]], layer["merge"])
    connections = data["connections"]
    rng.shuffle(connections)
    for source, target in connections:
        copy.connect_layers(rename[source], rename[target])
    if data["input"] is not None:
        copy.set_input(rename[data["input"]])
    if data["output"] is not None:
        copy.set_output(rename[data["output"]])
    return copy


EIGHT_CYCLE = [(0, 0), (1, 0), (1, 1), (2, 1), (2, 2), (3, 2), (3, 3), (0, 3)]
TWO_FOUR_CYCLES = [(0, 0), (1, 0), (1, 1), (0, 1), (2, 2), (3, 2), (3, 3), (2, 3)]


def test_one_8_cycle_and_two_4_cycles_are_different_architectures():
    one, two = wired(EIGHT_CYCLE), wired(TWO_FOUR_CYCLES)
    assert one.canonical_form() != two.canonical_form()
    assert one.hash != two.hash
    assert not one.same_architecture(two)


def test_the_pair_is_equal_to_its_shuffled_copies():
    rng = random.Random(0)
    for pairs in (EIGHT_CYCLE, TWO_FOUR_CYCLES):
        d = wired(pairs)
        for _ in range(5):
            copy = shuffled_descriptor(d, rng)
            assert copy.canonical_form() == d.canonical_form() and copy.hash == d.hash
            assert copy.same_architecture(d) and copy != d  # names differ: not ==


def test_descriptor_wirings_of_every_cycle_structure_are_distinct():
    for n in (5, 6, 7, 8):
        forms = set()
        for parts in partitions(n):
            pairs = []
            base = 0
            for part in parts:
                pairs += [(base + i, base + i) for i in range(part)]
                pairs += [(base + i, base + (i + 1) % part) for i in range(part)]
                base += part
            forms.add(wired(pairs, n).canonical_form())
        assert len(forms) == len(list(partitions(n)))


def test_canonical_form_is_json_listing_labels_and_connections():
    import json
    d = NeuralDescriptor()
    d.add_layer("conv2d", CONV, "c")
    d.add_layer("relu", None, "r")
    d.connect_layers("c", "r")
    data = json.loads(d.canonical_form())
    assert data["format"] == "nord.architecture/1"
    assert [layer[0] for layer in data["layers"]] == ["conv2d", "relu"]
    assert data["layers"][0][3] == "in" and data["layers"][1][3] == "out"
    assert data["edges"] == [[0, 1]]
    assert len(d.hash) == 64 and int(d.hash, 16) >= 0


def test_canonical_form_is_cached_and_forgotten_on_every_edit():
    d = wired(EIGHT_CYCLE)
    form_before = d.canonical_form()
    assert d.canonical_form() is form_before
    d.disconnect_layers("a0", "b3")
    d.connect_layers("a0", "b1")
    assert d.canonical_form() != form_before
    d.disconnect_layers("a2", "b1")
    d.connect_layers("a2", "b3")
    assert d.canonical_form() == wired(TWO_FOUR_CYCLES).canonical_form()


def test_same_architecture_needs_a_descriptor():
    with pytest.raises(ConfigurationError) as caught:
        wired(EIGHT_CYCLE).same_architecture("stem -> a0")
    assert "NeuralDescriptor" in str(caught.value) and "str" in str(caught.value)


def test_same_architecture_validates():
    d = wired(EIGHT_CYCLE)
    d.add_layer("relu", None, "island")
    with pytest.raises(UnreachableLayerError):
        d.same_architecture(wired(EIGHT_CYCLE))


def test_the_input_layer_may_be_added_last():
    first = NeuralDescriptor()
    first.add_layer("conv2d", CONV, "stem")
    first.add_layer_sequential("relu", None, "act")
    last = NeuralDescriptor()
    last.add_layer("relu", None, "act")
    last.add_layer("conv2d", CONV, "stem")
    last.connect_layers("stem", "act")
    assert last.input_layer == "stem"
    assert last.validate() is last
    assert last.hash == first.hash and last == NeuralDescriptor.from_json(last.to_json())


@pytest.mark.slow
def test_every_nasbench201_cell_is_distinct_and_equal_to_its_shuffled_copy():
    rng = random.Random(201)
    forms = set()
    for code in range(N_CELLS):
        d = genome_to_descriptor(code_to_genome(code))
        forms.add(d.canonical_form())
        copy = shuffled_descriptor(d, rng)
        assert copy.canonical_form() == d.canonical_form(), code_to_genome(code)
    assert len(forms) == N_CELLS


# --- networks -------------------------------------------------------------------------------
def test_building_a_network_computes_no_identity(monkeypatch):
    import nord.nn.network
    from nord.nn.network import NeuralNet

    calls = []
    real = nord.nn.network.architecture_form

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(nord.nn.network, "architecture_form", counted)
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", CONV)
    d.add_layer_sequential("relu")
    net = NeuralNet(d, input_shape=(3, 8, 8), num_classes=2)
    assert calls == []
    assert net.descriptor_hash == d.hash and calls == [1]
    net.descriptor_hash
    assert calls == [1]
