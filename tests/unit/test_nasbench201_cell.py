"""The NAS-Bench-201 cell codec (genome <-> cell string <-> descriptor) and its search space."""
import numpy as np
import pytest

from nord.benchmarks.nasbench201.cells import (CELL_FORMAT, EDGE_NAMES, N_CELLS, NODE_NAMES, OPS,
                                        cell_to_descriptor, cell_to_genome,
                                        check_genome, code_to_genome, descriptor_to_cell,
                                        descriptor_to_genome, genome_to_cell, genome_to_code,
                                        genome_to_descriptor, is_connected)
from nord.benchmarks.nasbench201 import NASBench201Space, load_table
from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import BenchmarkError, ConfigurationError, SearchSpaceError

# row 1 of the benchmark table
KNOWN_CELL = ("|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+"
              "|skip_connect~0|nor_conv_3x3~1|skip_connect~2|")
KNOWN_GENOME = (3, 3, 4, 1, 3, 1)
ALL_GENOMES = [code_to_genome(code) for code in range(N_CELLS)]


# --- genome <-> code <-> string ---------------------------------------------------------------
def test_genome_to_cell_writes_the_benchmark_string():
    assert genome_to_cell(KNOWN_GENOME) == KNOWN_CELL


def test_cell_to_genome_reads_the_benchmark_string():
    assert cell_to_genome(KNOWN_CELL) == KNOWN_GENOME


def test_genome_codes_cover_every_cell_once():
    assert len(set(ALL_GENOMES)) == N_CELLS == 5 ** 6


def test_every_genome_round_trips_through_code_and_string():
    for code, genome in enumerate(ALL_GENOMES):
        assert genome_to_code(genome) == code
        assert cell_to_genome(genome_to_cell(genome)) == genome


def test_code_is_base_five_with_first_edge_most_significant():
    assert genome_to_code((1, 0, 0, 0, 0, 2)) == 5 ** 5 + 2


@pytest.mark.parametrize("genome", [np.array(KNOWN_GENOME), [3.0, 3.0, 4.0, 1.0, 3.0, 1.0],
                                    tuple(np.int64(v) for v in KNOWN_GENOME)])
def test_genome_accepts_numpy_and_whole_floats(genome):
    assert genome_to_code(genome) == genome_to_code(KNOWN_GENOME)
    assert check_genome(genome) == KNOWN_GENOME


@pytest.mark.parametrize("genome, fragment", [
    ((0, 1, 2, 3, 4), "has 6 values"),
    ((0, 1, 2, 3, 4, 0, 1), "has 6 values"),
    ((0, 1, 2, 3, 4, 5), "not an operation index"),
    ((0, 1, 2, 3, 4, -1), "not an operation index"),
    ((0, 1, 2, 3, 4, 0.5), "not a whole number"),
    ((0, 1, 2, 3, 4, True), "operation index"),
    ((0, 1, 2, 3, 4, "1"), "operation index"),
    (KNOWN_CELL, "cell_to_genome"),
    (7, "sequence of 6"),
])
def test_invalid_genome_is_a_benchmark_error(genome, fragment):
    with pytest.raises(BenchmarkError, match=fragment):
        genome_to_code(genome)
    with pytest.raises(BenchmarkError, match=fragment):
        genome_to_cell(genome)


@pytest.mark.parametrize("code", [-1, N_CELLS, 2.0, True])
def test_invalid_code_is_a_benchmark_error(code):
    with pytest.raises(BenchmarkError, match="cell code"):
        code_to_genome(code)


# --- invalid cell strings ---------------------------------------------------------------
@pytest.mark.parametrize("cell, fragment", [
    ("|conv_5x5~0|+|none~0|none~1|+|none~0|none~1|none~2|", "unknown operation 'conv_5x5'"),
    ("|none~0|+|none~0|none~1|", "2 group"),
    ("|none~0|+|none~0|none~1|+|none~0|none~1|none~2|+|none~0|", "4 group"),
    ("|none~1|+|none~0|none~1|+|none~0|none~1|none~2|", "source index '1', expected 0"),
    ("|none~0|+|none~1|none~0|+|none~0|none~1|none~2|", "source index '1', expected 0"),
    ("|none~0|+|none~0|none~x|+|none~0|none~1|none~2|", "source index 'x', expected 1"),
    ("|none~0|+|none~0|+|none~0|none~1|none~2|", "group 2 .* has 1 edge"),
    ("|none~0|+|none~0|none~1|+|none~0|none~1|none~2|none~3|", "has 4 edge"),
    ("none~0|+|none~0|none~1|+|none~0|none~1|none~2|", "must start and end with '\\|'"),
    ("|none|+|none~0|none~1|+|none~0|none~1|none~2|", "not of the form 'op~j'"),
    ("garbage", "1 group"),
    ("", "1 group"),
    (KNOWN_CELL.replace("nor_conv_3x3", "NOR_CONV_3X3"), "unknown operation"),
    (" " + KNOWN_CELL, "must start and end"),
])
def test_invalid_cell_string_names_the_problem(cell, fragment):
    with pytest.raises(BenchmarkError, match=fragment):
        cell_to_genome(cell)


def test_invalid_cell_string_error_shows_expected_format():
    with pytest.raises(BenchmarkError) as error:
        cell_to_genome("garbage")
    assert CELL_FORMAT in str(error.value)
    assert all(op in str(error.value) for op in OPS)


def test_cell_that_is_not_a_string_is_a_benchmark_error():
    with pytest.raises(BenchmarkError, match="expected a cell string"):
        cell_to_genome(12)


# --- descriptors --------------------------------------------------------------------------
def test_descriptor_has_canonical_layer_names():
    descriptor = cell_to_descriptor(KNOWN_CELL)
    assert set(descriptor.layer_names) == set(NODE_NAMES) | set(EDGE_NAMES)
    assert EDGE_NAMES == ("edge_0_1", "edge_0_2", "edge_1_2", "edge_0_3", "edge_1_3", "edge_2_3")


def test_descriptor_input_is_node0_and_output_node3():
    descriptor = cell_to_descriptor(KNOWN_CELL)
    assert descriptor.input_layer == "node0"
    assert descriptor.output_layers == ["node3"]


def test_descriptor_nodes_sum_their_incoming_edges():
    descriptor = cell_to_descriptor(KNOWN_CELL)
    assert sorted(descriptor.inputs_of("node3")) == ["edge_0_3", "edge_1_3", "edge_2_3"]
    assert sorted(descriptor.inputs_of("node2")) == ["edge_0_2", "edge_1_2"]
    assert descriptor.inputs_of("edge_1_3") == ["node1"]
    assert all(descriptor.layers[node].type == "identity"
               and descriptor.layers[node].merge == "sum" for node in NODE_NAMES)


@pytest.mark.parametrize("op, layer_type, params", [
    ("none", "zero", {}),
    ("skip_connect", "identity", {}),
    ("nor_conv_1x1", "relu_conv_bn",
     {"out_channels": 24, "kernel_size": 1, "stride": 1, "padding": 0}),
    ("nor_conv_3x3", "relu_conv_bn",
     {"out_channels": 24, "kernel_size": 3, "stride": 1, "padding": 1}),
    ("avg_pool_3x3", "avg_pool2d",
     {"kernel_size": 3, "stride": 1, "padding": 1, "count_include_pad": False}),
])
def test_each_operation_becomes_its_layer(op, layer_type, params):
    genome = (OPS.index(op),) * 6
    layer = cell_to_descriptor(genome, channels=24).layers["edge_1_3"]
    assert (layer.type, layer.params) == (layer_type, params)


def test_descriptor_of_disconnected_cell_is_valid():
    descriptor = cell_to_descriptor((0,) * 6)
    descriptor.validate()
    assert len(descriptor) == 10


@pytest.mark.slow
def test_every_cell_round_trips_through_descriptor_and_json():
    for genome in ALL_GENOMES:
        cell = genome_to_cell(genome)
        descriptor = cell_to_descriptor(cell)
        assert descriptor_to_cell(descriptor) == cell
        assert descriptor_to_cell(NeuralDescriptor.from_json(descriptor.to_json())) == cell


@pytest.mark.slow
def test_every_cell_has_its_own_descriptor_hash():
    """BenchmarkEvaluator memoises descriptor hash -> cell, so no two cells may share one."""
    hashes = {genome_to_descriptor(genome).hash for genome in ALL_GENOMES}
    assert len(hashes) == N_CELLS


def test_descriptor_hash_survives_json():
    descriptor = cell_to_descriptor(KNOWN_CELL)
    assert NeuralDescriptor.from_json(descriptor.to_json()).hash == descriptor.hash


def test_decode_accepts_any_channel_count():
    assert descriptor_to_genome(cell_to_descriptor(KNOWN_CELL, channels=64)) == KNOWN_GENOME


@pytest.mark.parametrize("channels", [0, -16, 1.5, "16", True])
def test_invalid_channels_is_a_configuration_error(channels):
    with pytest.raises(ConfigurationError, match="channels"):
        cell_to_descriptor(KNOWN_CELL, channels=channels)


def _edited(edit):
    data = cell_to_descriptor(KNOWN_CELL).to_dict()
    edit(data)
    return NeuralDescriptor.from_dict(data)


def _set_params(name, params):
    def edit(data):
        layer = next(layer for layer in data["layers"] if layer["name"] == name)
        layer["params"] = params
    return edit


def _rename(old, new):
    def edit(data):
        for layer in data["layers"]:
            if layer["name"] == old:
                layer["name"] = new
        data["connections"] = [[new if s == old else s, new if t == old else t]
                               for s, t in data["connections"]]
    return edit


def _set_type(name, layer_type, params):
    def edit(data):
        layer = next(layer for layer in data["layers"] if layer["name"] == name)
        layer["type"], layer["params"] = layer_type, params
    return edit


@pytest.mark.parametrize("edit, fragment", [
    (_set_params("edge_0_1", {"out_channels": 16, "kernel_size": 5, "padding": 2}),
     "edge layer 'edge_0_1'"),
    (_set_params("edge_1_2", {"kernel_size": 3, "stride": 1, "padding": 1}), "edge layer 'edge_1_2'"),
    (_set_type("edge_2_3", "relu", {}), "edge layer 'edge_2_3'"),
    (_set_type("node1", "relu", {}), "node layer 'node1'"),
    (_rename("edge_0_1", "e01"), "missing \\['edge_0_1'\\]"),
    (lambda data: data["connections"].append(["node0", "edge_1_3"]), "unexpected"),
    (lambda data: data.update(output=None) or data["layers"].append(
        {"name": "extra", "type": "relu", "params": {}, "merge": "sum"})
     or data["connections"].append(["node3", "extra"]), "unexpected \\['extra'\\]"),
])
def test_descriptor_that_is_not_a_cell_is_a_benchmark_error(edit, fragment):
    with pytest.raises(BenchmarkError, match=fragment):
        descriptor_to_cell(_edited(edit))


def test_plain_network_is_not_a_cell():
    descriptor = NeuralDescriptor()
    descriptor.add_layer_sequential("conv2d", {"out_channels": 8, "kernel_size": 3})
    descriptor.add_layer_sequential("relu")
    with pytest.raises(BenchmarkError, match="not a NAS-Bench-201 cell"):
        descriptor_to_genome(descriptor)


def test_non_descriptor_is_a_benchmark_error():
    with pytest.raises(BenchmarkError, match="expected a NeuralDescriptor"):
        descriptor_to_genome(KNOWN_CELL)


# --- connectivity -------------------------------------------------------------------------
@pytest.mark.parametrize("genome, connected", [
    ((0, 0, 0, 0, 0, 0), False),
    ((0, 0, 0, 1, 0, 0), True),          # 0 -> 3 directly
    ((3, 0, 0, 0, 3, 0), True),          # 0 -> 1 -> 3
    ((0, 0, 3, 0, 3, 3), False),         # node 1 is never reached from node 0
    ((3, 0, 3, 0, 0, 3), True),          # 0 -> 1 -> 2 -> 3
])
def test_is_connected(genome, connected):
    assert is_connected(genome) is connected


def test_341_cells_are_disconnected():
    assert sum(not is_connected(genome) for genome in ALL_GENOMES) == 341


# --- the search space ---------------------------------------------------------------------
def test_space_bounds_are_six_integer_genes_in_0_4():
    space = NASBench201Space()
    assert space.bounds() == ((0,) * 6, (4,) * 6)
    assert space.integer_mask == (True,) * 6


def test_space_decode_is_the_cell_descriptor():
    assert (NASBench201Space(channels=32).decode(KNOWN_GENOME) ==
        cell_to_descriptor(KNOWN_CELL, channels=32))


def test_space_samples_decode_to_cells():
    space = NASBench201Space()
    rng = np.random.default_rng(0)
    for _ in range(20):
        genome = space.sample(rng)
        assert descriptor_to_genome(space.decode(genome)) == genome


def test_space_to_descriptor_rounds_real_genomes():
    space = NASBench201Space()
    assert (descriptor_to_genome(space.to_descriptor([2.6, 3.2, 4.0, 0.9, 3.4, 1.1])) ==
        KNOWN_GENOME)


def test_space_rejects_out_of_bounds_genome():
    with pytest.raises(SearchSpaceError, match="outside its bounds"):
        NASBench201Space().to_descriptor((0, 0, 0, 0, 0, 5))


def test_space_cell_and_genome_helpers_are_inverse():
    space = NASBench201Space()
    assert space.cell(KNOWN_GENOME) == KNOWN_CELL
    assert space.genome(KNOWN_CELL) == KNOWN_GENOME


def test_space_index_and_genome_of_index_agree_with_table():
    space = NASBench201Space()
    assert space.index(KNOWN_GENOME) == 1
    assert space.genome(1) == KNOWN_GENOME


def test_space_describe_names_benchmark_and_channels():
    description = NASBench201Space(channels=32).describe()
    assert description["benchmark"] == "nasbench201"
    assert description["channels"] == 32


def test_space_normalises_and_identifies_every_genome_as_the_general_rules_do():
    space, table = NASBench201Space(), load_table()
    for code, genome in enumerate(ALL_GENOMES):
        assert space.normalise(genome) == genome
        assert space.identify(genome) == (table.index_by_code[code], None)
    for given in [(3.0, 3, 4, 1, 3, 1), tuple(np.array(KNOWN_GENOME)), (3, 3, 4, True, 3, 1),
                  [3, 3, 4, 1, 3, 1], (2.6, 3.2, 4.0, 0.9, 3.4, 1.1)]:
        normal = space.normalise(given)
        assert normal == KNOWN_GENOME and all(type(value) is int for value in normal)
        assert space.identify(normal) == (1, None)


def test_space_refuses_what_is_not_one_of_its_genomes_with_the_rule():
    space = NASBench201Space()
    with pytest.raises(SearchSpaceError, match="outside its bounds"):
        space.normalise((0, 0, 0, 0, 0, 5))
    with pytest.raises(SearchSpaceError, match="have 6 values; got 5"):
        space.normalise((0, 0, 0, 0, 0))
    with pytest.raises(BenchmarkError, match="has 6 values"):
        space.identify((0, 0, 0, 0, 0))
    with pytest.raises(BenchmarkError):
        space.identify((0, 0, 0, 0, 0, 5))
    space.identify(KNOWN_GENOME)        # the look-up is filled: bools are still refused
    with pytest.raises(BenchmarkError):
        space.identify((3, 3, 4, True, 3, 1))


def test_space_identifies_what_it_normalised_by_one_look_up_and_anything_else_by_the_rules():
    space = NASBench201Space()
    space.identify(KNOWN_GENOME)
    normal = space.normalise((3, 3, 4, 1, 3, 1))
    assert space.normalise(normal) is normal          # the look-up's own tuple
    assert space.identify(normal) == space.identify(tuple(KNOWN_GENOME)) == (1, None)
    assert space.identify(np.array(KNOWN_GENOME)) == (1, None)
