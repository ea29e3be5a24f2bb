"""NeuralDescriptor (nord.architecture.descriptor): the paper's API, graph rules and their errors,
purity, JSON, the canonical hash, DOT, editing."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from torch.nn import Conv2d, MaxPool2d, ReLU

from nord.architecture.descriptor import MERGE_RULES, NeuralDescriptor
from nord.errors import (CycleError, DanglingConnectionError, DescriptorError,
                         DuplicateLayerError, EmptyDescriptorError, LayerParameterError,
                         UnknownLayerError, UnreachableLayerError)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def paper_descriptor():
    d = NeuralDescriptor()
    d.add_layer(Conv2d, [3, 10, 5], "convolution")
    d.add_layer(MaxPool2d, {"kernel_size": 2}, "max_pool1")
    d.add_layer(MaxPool2d, [2, 2], "max_pool2")
    d.connect_layers("convolution", "max_pool1")
    d.connect_layers("convolution", "max_pool2")
    return d


def chain(*types):
    d = NeuralDescriptor()
    for index, layer_type in enumerate(types):
        d.add_layer_sequential(layer_type, None, f"l{index}")
    return d


def fork():
    """a -> b, a -> c, b -> m, c -> m: a layer with two inputs."""
    d = NeuralDescriptor()
    d.add_layer("conv2d", {"out_channels": 4, "kernel_size": 3}, "a")
    d.add_layer("relu", None, "b")
    d.add_layer("tanh", None, "c")
    d.add_layer("identity", None, "m")
    for source, target in (("a", "b"), ("a", "c"), ("b", "m"), ("c", "m")):
        d.connect_layers(source, target)
    return d


# --- the paper's API ----------------------------------------------------------------------
def test_paper_example_positional_parameters_are_named_by_the_constructor_order():
    d = paper_descriptor()
    assert d.layers["convolution"].params == {"in_channels": 3, "out_channels": 10,
                                              "kernel_size": 5}
    assert d.layers["max_pool2"].params == {"kernel_size": 2, "stride": 2}


def test_paper_example_keyword_parameters_are_kept():
    assert paper_descriptor().layers["max_pool1"].params == {"kernel_size": 2}


def test_paper_example_torch_classes_map_to_registry_names():
    d = paper_descriptor()
    assert [d.layers[n].type for n in d.layer_names] == ["conv2d", "max_pool2d", "max_pool2d"]


def test_paper_example_graph():
    d = paper_descriptor()
    assert d.connections == [("convolution", "max_pool1"), ("convolution", "max_pool2")]
    assert d.input_layer == "convolution"
    assert d.output_layers == ["max_pool1", "max_pool2"]
    assert d.validate() is d


def test_add_layer_returns_the_name():
    d = NeuralDescriptor()
    assert d.add_layer("relu", None, "act") == "act"


def test_add_layer_sequential_names_and_connects():
    s = NeuralDescriptor()
    first = s.add_layer_sequential(Conv2d, (3, 16, 3))
    second = s.add_layer_sequential(ReLU, [])
    assert first.startswith("conv2d") and second.startswith("relu") and first != second
    assert s.connections == [(first, second)]
    assert s.layers[first].params == {"in_channels": 3, "out_channels": 16, "kernel_size": 3}
    assert s.layers[second].params == {}


def test_generated_names_skip_taken_ones():
    d = NeuralDescriptor()
    d.add_layer("relu", None, "relu_1")
    generated = d.add_layer_sequential("relu")
    assert generated != "relu_1" and len(d) == 2


def test_inputs_of_lists_sources_in_connection_order():
    d = fork()
    assert d.inputs_of("m") == ["b", "c"]
    assert d.outputs_of("a") == ["b", "c"]


def test_topological_order_puts_every_layer_after_its_inputs():
    d = fork()
    order = d.topological_order()
    assert sorted(order) == sorted(d.layer_names)
    for source, target in d.connections:
        assert order.index(source) < order.index(target)


def test_set_output_designates_one_output():
    d = paper_descriptor()
    d.add_layer("identity", None, "out")
    d.connect_layers("max_pool1", "out")
    d.connect_layers("max_pool2", "out")
    d.set_output("out")
    assert d.output_layers == ["out"]


# --- errors -------------------------------------------------------------------------------
def test_unknown_layer_type_names_it_and_lists_valid_ones():
    with pytest.raises(UnknownLayerError) as caught:
        NeuralDescriptor().add_layer("conv5d", [3], "c")
    message = str(caught.value)
    assert "'conv5d'" in message and "conv2d" in message and "register_layer" in message


def test_duplicate_name_is_rejected():
    d = NeuralDescriptor()
    d.add_layer("relu", None, "act")
    with pytest.raises(DuplicateLayerError) as caught:
        d.add_layer("tanh", None, "act")
    assert "'act'" in str(caught.value) and "unique" in str(caught.value)
    assert d.layers["act"].type == "relu"


def test_connection_from_unknown_layer():
    d = chain("relu")
    with pytest.raises(DanglingConnectionError) as caught:
        d.connect_layers("pool9", "l0")
    message = str(caught.value)
    assert "'pool9'" in message and "add_layer" in message


def test_connection_to_unknown_layer():
    d = chain("relu")
    with pytest.raises(DanglingConnectionError) as caught:
        d.connect_layers("l0", "conv2")
    assert "'conv2'" in str(caught.value) and "add_layer" in str(caught.value)


def test_cycle_is_rejected_and_not_added():
    d = chain("relu", "tanh", "sigmoid")
    with pytest.raises(CycleError) as caught:
        d.connect_layers("l2", "l0")
    message = str(caught.value)
    assert "'l2'" in message and "'l0'" in message and "acyclic" in message
    assert ("l2", "l0") not in d.connections


def test_self_loop_is_a_cycle():
    d = chain("relu")
    with pytest.raises(CycleError) as caught:
        d.connect_layers("l0", "l0")
    assert "'l0'" in str(caught.value)


def test_connecting_twice_is_rejected():
    d = chain("relu", "tanh")
    with pytest.raises(DescriptorError) as caught:
        d.connect_layers("l0", "l1")
    assert "already connected" in str(caught.value)
    assert d.connections == [("l0", "l1")]


def test_layer_unreachable_from_input():
    d = chain("relu", "tanh")
    d.add_layer("sigmoid", None, "island")
    with pytest.raises(UnreachableLayerError) as caught:
        d.validate()
    message = str(caught.value)
    assert "'island'" in message and "connect_layers" in message and "remove_layer" in message


def test_input_is_inferred_as_the_unique_source_whatever_was_added_first():
    d = NeuralDescriptor()
    d.add_layer("relu", None, "act")
    d.add_layer("conv2d", {"out_channels": 4, "kernel_size": 3}, "stem")
    d.connect_layers("stem", "act")
    assert d.input_layer == "stem"
    assert d.validate() is d
    assert d.to_dict()["input"] is None  # inferred, not declared


def test_several_sources_without_set_input_are_an_error_naming_set_input():
    d = chain("relu", "tanh")
    d.add_layer("sigmoid", None, "second_source")
    d.connect_layers("second_source", "l1")
    assert d.input_layer is None
    with pytest.raises(UnreachableLayerError) as caught:
        d.validate()
    message = str(caught.value)
    assert "ambiguous" in message and "'l0'" in message and "'second_source'" in message
    assert "set_input" in message
    with pytest.raises(UnreachableLayerError):
        d.hash


def test_set_input_picks_one_of_several_sources_and_none_infers_again():
    d = chain("relu", "tanh")
    d.add_layer("sigmoid", None, "second_source")
    d.connect_layers("second_source", "l1")
    d.set_input("l0")
    assert d.to_dict()["input"] == "l0"
    with pytest.raises(UnreachableLayerError) as caught:  # second_source is not reached
        d.validate()
    assert "'second_source'" in str(caught.value)
    d.remove_layer("second_source")
    d.validate()
    d.set_input(None)
    assert d.input_layer == "l0" and d.to_dict()["input"] is None


def test_removing_the_declared_input_returns_to_inference():
    d = chain("relu", "tanh", "sigmoid")
    d.set_input("l0")
    d.remove_layer("l0")
    assert d.input_layer == "l1" and d.to_dict()["input"] is None
    d.validate()


def test_input_layer_with_incoming_connection_is_rejected():
    d = chain("relu", "tanh")
    d.set_input("l1")
    with pytest.raises(UnreachableLayerError) as caught:
        d.validate()
    assert "'l1'" in str(caught.value) and "set_input" in str(caught.value)


def test_layer_not_reaching_the_set_output():
    d = fork()
    d.add_layer("sigmoid", None, "side")
    d.connect_layers("a", "side")
    d.set_output("m")
    with pytest.raises(UnreachableLayerError) as caught:
        d.validate()
    message = str(caught.value)
    assert "'side'" in message and "'m'" in message and "set_output(None)" in message


def test_empty_descriptor():
    with pytest.raises(EmptyDescriptorError) as caught:
        NeuralDescriptor().validate()
    assert "add_layer" in str(caught.value)


def test_empty_descriptor_has_no_hash():
    with pytest.raises(EmptyDescriptorError):
        NeuralDescriptor().hash


def test_too_many_positional_parameters():
    with pytest.raises(LayerParameterError) as caught:
        NeuralDescriptor().add_layer("relu", [False, 1], "act")
    message = str(caught.value)
    assert "'act'" in message and "at most 1" in message and "inplace" in message


def test_unknown_parameter_name():
    with pytest.raises(LayerParameterError) as caught:
        NeuralDescriptor().add_layer("conv2d", {"out_channels": 4, "kernel": 3}, "c")
    message = str(caught.value)
    assert "'c'" in message and "'kernel'" in message and "kernel_size" in message


def test_missing_required_parameter():
    with pytest.raises(LayerParameterError) as caught:
        NeuralDescriptor().add_layer("conv2d", {"out_channels": 4}, "c")
    assert "'c'" in str(caught.value) and "kernel_size" in str(caught.value)


def test_shape_parameter_may_be_omitted():
    d = NeuralDescriptor()
    d.add_layer("conv2d", {"out_channels": 4, "kernel_size": 3}, "c")
    assert "in_channels" not in d.layers["c"].params


@pytest.mark.parametrize("value", [object(), {1, 2}, {"nested": "dict"}, [1, object()]])
def test_non_json_parameter_is_rejected(value):
    with pytest.raises(LayerParameterError) as caught:
        NeuralDescriptor().add_layer("conv2d", {"out_channels": 4, "kernel_size": value}, "c")
    message = str(caught.value)
    assert "'c'" in message and "'kernel_size'" in message and "JSON" in message


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), [3, float("nan")]])
def test_nan_or_infinite_parameter_is_rejected(value):
    with pytest.raises(LayerParameterError) as caught:
        NeuralDescriptor().add_layer("dropout", {"p": value}, "drop")
    message = str(caught.value)
    assert "'drop'" in message and "'p'" in message and "finite" in message


def test_numpy_nan_parameter_is_rejected():
    import numpy as np
    with pytest.raises(LayerParameterError):
        NeuralDescriptor().add_layer("leaky_relu", {"negative_slope": np.float32("nan")})


def test_json_with_nan_parameter_is_rejected_on_reading():
    text = chain("dropout").to_json().replace('"params": {}', '"params": {"p": NaN}')
    assert "NaN" in text
    with pytest.raises(LayerParameterError):
        NeuralDescriptor.from_json(text)


def test_to_json_is_standard_json():
    d = NeuralDescriptor()
    d.add_layer("dropout", {"p": 0.25}, "drop")
    assert json.loads(d.to_json(), parse_constant=lambda name: pytest.fail(name)) == d.to_dict()


def test_parameters_that_are_neither_list_nor_dict_are_rejected():
    with pytest.raises(LayerParameterError) as caught:
        NeuralDescriptor().add_layer("max_pool2d", "2", "p")
    assert "'p'" in str(caught.value)


def test_unknown_merge_rule():
    with pytest.raises(DescriptorError) as caught:
        NeuralDescriptor().add_layer("relu", None, "act", merge="max")
    assert "'act'" in str(caught.value) and "concat" in str(caught.value)


def test_failed_add_leaves_descriptor_unchanged():
    d = chain("relu")
    before = d.to_dict()
    with pytest.raises(LayerParameterError):
        d.add_layer_sequential("conv2d", {"out_channels": 4}, "bad")
    assert d.to_dict() == before


# --- purity: no torch, no optional dependencies -----------------------------------------------
def run_python(code):
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.processes
def test_descriptors_build_validate_hash_and_serialise_without_torch():
    # A stub 'nord' package skips nord/__init__.py, so this checks the descriptor modules
    # themselves. The finder makes torch unimportable and records every attempt, even one
    # that the code catches (sys.modules['torch'] = None would block without recording).
    out = run_python(f"""
        import sys, types
        attempts = []
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split('.')[0] == 'torch':
                    attempts.append(name)
                    raise ImportError('torch is blocked in this test')
        sys.meta_path.insert(0, Block())
        package = types.ModuleType('nord')
        package.__path__ = [{os.path.join(REPO, 'nord')!r}]
        sys.modules['nord'] = package
        from nord.architecture.descriptor import NeuralDescriptor
        d = NeuralDescriptor()
        d.add_layer('conv2d', [3, 10, 5], 'convolution')
        d.add_layer('max_pool2d', {{'kernel_size': 2}}, 'max_pool1')
        d.add_layer('max_pool2d', [2, 2], 'max_pool2')
        d.connect_layers('convolution', 'max_pool1')
        d.connect_layers('convolution', 'max_pool2')
        d.validate()
        copy = NeuralDescriptor.from_json(d.to_json())
        assert copy == d and copy.hash == d.hash
        assert NeuralDescriptor.from_dict(d.to_dict()) == d
        assert 'max_pool2' in d.to_dot()
        assert attempts == [] and 'torch' not in sys.modules, attempts
        print('pure', d.hash)
    """)
    assert out.startswith("pure ")


@pytest.mark.processes
def test_import_nord_works_without_optional_dependencies():
    out = run_python("""
        import sys
        for name in ('horovod', 'mpi4py', 'pygmo'):
            sys.modules[name] = None
        import nord
        import nord.architecture.descriptor, nord.architecture.layers, nord.nn.modules, nord.nn.network
        d = nord.NeuralDescriptor()
        d.add_layer_sequential('relu')
        print('imported', d.hash)
    """)
    assert out.startswith("imported ")


# --- JSON -----------------------------------------------------------------------------------
def test_dict_round_trip():
    d = fork()
    d.set_output("m")
    copy = NeuralDescriptor.from_dict(d.to_dict())
    assert copy == d
    assert copy.to_dict() == d.to_dict()
    assert copy.output_layers == ["m"]


def test_json_round_trip_preserves_hash_and_input():
    d = fork()
    d.add_layer("relu", None, "first")
    d.connect_layers("first", "a")
    d.set_input("first")
    copy = NeuralDescriptor.from_json(d.to_json())
    assert copy == d and copy.input_layer == "first" and copy.hash == d.hash


def test_to_dict_is_plain_json():
    d = paper_descriptor()
    assert json.loads(json.dumps(d.to_dict())) == d.to_dict()


def test_tuple_parameters_are_stored_as_lists():
    d = NeuralDescriptor()
    d.add_layer("conv2d", {"out_channels": 4, "kernel_size": (3, 5)}, "c")
    assert d.to_dict()["layers"][0]["params"]["kernel_size"] == [3, 5]
    assert NeuralDescriptor.from_json(d.to_json()) == d


def test_layer_type_is_looked_up_in_the_registry_not_evaluated():
    data = chain("relu").to_dict()
    data["layers"][0]["type"] = "__import__('os').getcwd()"
    with pytest.raises(UnknownLayerError):
        NeuralDescriptor.from_dict(data)


def _malformed():
    good = fork().to_dict()

    def edited(change):
        data = json.loads(json.dumps(good))
        change(data)
        return data

    return {
        "not a mapping": [good],
        "wrong format": edited(lambda d: d.update(format="keras/2")),
        "no format": edited(lambda d: d.pop("format")),
        "no layers": edited(lambda d: d.pop("layers")),
        "layers not a list": edited(lambda d: d.update(layers=5)),
        "layer not a mapping": edited(lambda d: d["layers"].append(7)),
        "layer without type": edited(lambda d: d["layers"][0].pop("type")),
        "layer without name": edited(lambda d: d["layers"][0].pop("name")),
        "params a string": edited(lambda d: d["layers"][0].update(params="3,10")),
        "unknown param": edited(lambda d: d["layers"][1].update(params={"size": 2})),
        "bad merge": edited(lambda d: d["layers"][3].update(merge="max")),
        "duplicate layer": edited(lambda d: d["layers"].append(d["layers"][1])),
        "no connections": edited(lambda d: d.pop("connections")),
        "connection of three": edited(lambda d: d["connections"].append(["a", "b", "c"])),
        "connection to nowhere": edited(lambda d: d["connections"].append(["a", "zz"])),
        "connection cycle": edited(lambda d: d["connections"].append(["m", "a"])),
        "connection names not strings": edited(lambda d: d["connections"].append([["a"], "b"])),
        "unknown input": edited(lambda d: d.update(input="zz")),
        "input not a string": edited(lambda d: d.update(input=["a"])),
        "output not a string": edited(lambda d: d.update(output={"m": 1})),
    }


@pytest.mark.parametrize("case", sorted(_malformed()))
def test_from_dict_rejects_malformed_data_with_descriptor_error(case):
    with pytest.raises(DescriptorError):
        NeuralDescriptor.from_dict(_malformed()[case])


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", "null"])
def test_from_json_rejects_malformed_text_with_descriptor_error(text):
    with pytest.raises(DescriptorError):
        NeuralDescriptor.from_json(text)


# --- canonical hash ------------------------------------------------------------------------
CONV = st.fixed_dictionaries({"out_channels": st.sampled_from([4, 8]),
                              "kernel_size": st.sampled_from([1, 3])})
LAYER = st.one_of(
    st.tuples(st.just("conv2d"), CONV),
    st.tuples(st.sampled_from(["relu", "tanh", "identity"]), st.just({})),
    st.tuples(st.just("max_pool2d"),
              st.fixed_dictionaries({"kernel_size": st.sampled_from([2, 3])})),
)


@st.composite
def dags(draw, max_layers=7):
    """(layers, edges): layers[i] = (type, params, merge); every layer reachable from 0."""
    n = draw(st.integers(1, max_layers))
    layers = [(*draw(LAYER), draw(st.sampled_from(MERGE_RULES))) for _ in range(n)]
    edges = set()
    for target in range(1, n):
        edges.add((draw(st.integers(0, target - 1)), target))
        extra = draw(st.sets(st.integers(0, target - 1), max_size=2))
        edges.update((source, target) for source in extra)
    return layers, sorted(edges)


def build(layers, edges, names=None, layer_order=None, edge_order=None, declare_input=True):
    names = names or [f"n{i}" for i in range(len(layers))]
    d = NeuralDescriptor()
    for i in layer_order or range(len(layers)):
        layer_type, params, merge = layers[i]
        d.add_layer(layer_type, dict(params), names[i], merge)
    for k in edge_order or range(len(edges)):
        source, target = edges[k]
        d.connect_layers(names[source], names[target])
    if declare_input:
        d.set_input(names[0])
    return d


HASH_SETTINGS = settings(max_examples=60, deadline=None,
                         suppress_health_check=[HealthCheck.too_slow])


@HASH_SETTINGS
@given(data=st.data())
def test_hash_ignores_names_and_insertion_order(data):
    layers, edges = data.draw(dags())
    n = len(layers)
    labels = data.draw(st.permutations(range(n)))
    names = [f"renamed_{label}" for label in labels]
    layer_order = data.draw(st.permutations(range(n)))
    edge_order = data.draw(st.permutations(range(len(edges))))
    assert build(layers, edges).hash == build(layers, edges, names, layer_order, edge_order).hash


@HASH_SETTINGS
@given(data=st.data())
def test_inferred_input_gives_the_same_identity_in_any_insertion_order(data):
    # dags() makes layer 0 the only source, so the input can be left to inference even
    # when layer 0 is not the first added.
    layers, edges = data.draw(dags())
    layer_order = data.draw(st.permutations(range(len(layers))))
    edge_order = data.draw(st.permutations(range(len(edges))))
    shuffled = build(layers, edges, None, layer_order, edge_order, declare_input=False)
    assert shuffled.input_layer == "n0"
    assert shuffled.canonical_form() == build(layers, edges).canonical_form()


@HASH_SETTINGS
@given(data=st.data())
def test_hash_changes_when_a_parameter_changes(data):
    layers, edges = data.draw(dags())
    i = data.draw(st.integers(0, len(layers) - 1))
    changed = list(layers)
    layer_type, params, merge = layers[i]
    new_type, new_params = data.draw(LAYER.filter(lambda t: t != (layer_type, params)))
    changed[i] = (new_type, new_params, merge)
    assert build(layers, edges).hash != build(changed, edges).hash


@HASH_SETTINGS
@given(data=st.data())
def test_hash_changes_when_an_edge_is_added(data):
    layers, edges = data.draw(dags())
    missing = [(s, t) for t in range(len(layers)) for s in range(t) if (s, t) not in edges]
    assume(missing)
    extra = data.draw(st.sampled_from(missing))
    assert build(layers, edges).hash != build(layers, sorted(edges + [extra])).hash


@HASH_SETTINGS
@given(data=st.data())
def test_hash_changes_with_the_merge_rule_of_a_multi_input_layer(data):
    layers, edges = data.draw(dags())
    merging = [t for t in range(len(layers)) if sum(1 for _, b in edges if b == t) > 1]
    assume(merging)
    i = data.draw(st.sampled_from(merging))
    changed = list(layers)
    layer_type, params, merge = layers[i]
    changed[i] = (layer_type, params, "concat" if merge == "sum" else "sum")
    assert build(layers, edges).hash != build(changed, edges).hash


def test_hash_ignores_the_merge_rule_of_a_single_input_layer():
    a, b = chain("relu", "tanh"), chain("relu", "tanh")
    b.remove_layer("l1")
    b.add_layer_sequential("tanh", None, "l1", merge="concat")
    assert a.hash == b.hash


def test_hash_differs_for_reversed_chain():
    assert chain("relu", "tanh").hash != chain("tanh", "relu").hash


def test_hash_differs_for_a_different_output():
    a, b = fork(), fork()
    b.add_layer("sigmoid", None, "extra")
    b.connect_layers("a", "extra")
    b.connect_layers("extra", "m")
    assert a.hash != b.hash


def test_hash_fills_in_defaults():
    positional = NeuralDescriptor()
    positional.add_layer(Conv2d, [3, 10, 5], "c")
    keyword = NeuralDescriptor()
    keyword.add_layer("conv2d", {"in_channels": 3, "out_channels": 10, "kernel_size": 5,
                                 "stride": 1}, "other")
    assert positional.hash == keyword.hash


def test_hash_counts_a_given_shape_parameter():
    # in_channels=1 fails on 3-channel data: it must not share a cached result with in_channels=3
    one, three, inferred = NeuralDescriptor(), NeuralDescriptor(), NeuralDescriptor()
    one.add_layer(Conv2d, [1, 10, 5])
    three.add_layer(Conv2d, [3, 10, 5])
    inferred.add_layer("conv2d", {"out_channels": 10, "kernel_size": 5})
    assert len({one.hash, three.hash, inferred.hash}) == 3


def test_numpy_parameters_are_stored_as_plain_numbers():
    import numpy as np
    d = NeuralDescriptor()
    d.add_layer("conv2d", {"out_channels": np.int64(4), "kernel_size": np.int32(3),
                           "bias": np.bool_(False)}, "c")
    plain = NeuralDescriptor()
    plain.add_layer("conv2d", {"out_channels": 4, "kernel_size": 3, "bias": False}, "c")
    assert d.to_json() == plain.to_json() and d.hash == plain.hash
    assert type(d.layers["c"].params["bias"]) is bool


def test_hash_treats_square_kernel_list_as_int():
    a, b = NeuralDescriptor(), NeuralDescriptor()
    a.add_layer("conv2d", {"out_channels": 4, "kernel_size": 3})
    b.add_layer("conv2d", {"out_channels": 4, "kernel_size": [3, 3]})
    assert a.hash == b.hash


def test_hash_ignores_forced_parameters():
    a, b = NeuralDescriptor(), NeuralDescriptor()
    a.add_layer("relu", {"inplace": True})
    b.add_layer("relu")
    assert a.hash == b.hash


def test_hash_differs_for_a_changed_non_default_parameter():
    a, b = NeuralDescriptor(), NeuralDescriptor()
    a.add_layer("conv2d", {"out_channels": 4, "kernel_size": 3, "stride": 1})
    b.add_layer("conv2d", {"out_channels": 4, "kernel_size": 3, "stride": 2})
    assert a.hash != b.hash


def test_equal_descriptors_hash_equally_as_python_objects():
    assert hash(paper_descriptor()) == hash(paper_descriptor())
    assert len({paper_descriptor(), paper_descriptor()}) == 1


def _add_after_c(d):
    d.add_layer("sigmoid", None, "new")
    d.connect_layers("c", "new")
    d.connect_layers("new", "m")


def _rewire(d):
    d.disconnect_layers("a", "c")
    d.connect_layers("b", "c")


def _remove(d):
    d.remove_layer("c")


def _extra_edge(d):
    d.connect_layers("a", "m")


def _new_input(d):
    d.add_layer("tanh", None, "stem")
    d.connect_layers("stem", "a")
    d.set_input("stem")


@pytest.mark.parametrize("mutate", [_add_after_c, _rewire, _remove, _extra_edge, _new_input])
def test_hash_cache_is_invalidated_by_mutation(mutate):
    d = fork()
    before = d.hash
    mutate(d)
    assert d.hash != before
    assert d.hash == NeuralDescriptor.from_dict(d.to_dict()).hash


def test_hash_cache_is_invalidated_by_set_output():
    d = fork()
    d.add_layer("sigmoid", None, "side")
    d.connect_layers("b", "side")
    d.hash  # computed and cached while valid
    d.set_output("m")
    with pytest.raises(UnreachableLayerError):
        d.hash


def test_editing_a_returned_layer_does_not_change_the_descriptor():
    d = fork()
    before, hashed = d.to_dict(), d.hash
    layer = d.layers["a"]
    layer.params["out_channels"] = 99
    layer.merge = "concat"
    assert d.to_dict() == before and d.hash == hashed


# --- DOT --------------------------------------------------------------------------------------
def test_to_dot_has_every_layer_and_edge():
    d = fork()
    dot = d.to_dot()
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    for name in d.layer_names:
        assert f'"{name}" [label=' in dot
    for source, target in d.connections:
        assert f'"{source}" -> "{target}";' in dot
    assert '"__input__" -> "a";' in dot and '"m" -> "__output__";' in dot


def test_to_dot_shows_merge_rule_of_multi_input_layer():
    d = fork()
    d.remove_layer("m")
    d.add_layer("identity", None, "m", merge="concat")
    d.connect_layers("b", "m")
    d.connect_layers("c", "m")
    assert "merge=concat" in d.to_dot()


# --- editing ----------------------------------------------------------------------------------
def test_remove_layer_drops_its_connections():
    d = fork()
    d.remove_layer("c")
    assert "c" not in d and len(d) == 3
    assert d.connections == [("a", "b"), ("b", "m")]
    d.validate()


def test_remove_input_layer_moves_the_input():
    d = chain("relu", "tanh")
    d.remove_layer("l0")
    assert d.input_layer == "l1"
    d.validate()


def test_remove_output_layer_clears_the_designated_output():
    d = fork()
    d.set_output("m")
    d.remove_layer("m")
    assert d.output_layers == ["b", "c"]


def test_remove_unknown_layer():
    with pytest.raises(DanglingConnectionError) as caught:
        fork().remove_layer("zz")
    assert "'zz'" in str(caught.value)


def test_sequential_after_removing_the_last_layer_connects_to_the_new_last():
    d = chain("relu", "tanh", "sigmoid")
    d.remove_layer("l2")
    d.add_layer_sequential("elu", None, "e")
    assert d.inputs_of("e") == ["l1"]


def test_disconnect_layers():
    d = fork()
    d.disconnect_layers("b", "m")
    assert ("b", "m") not in d.connections
    assert d.inputs_of("m") == ["c"] and d.outputs_of("b") == []


def test_disconnect_missing_connection():
    d = fork()
    with pytest.raises(DanglingConnectionError) as caught:
        d.disconnect_layers("a", "m")
    assert "'a' -> 'm'" in str(caught.value)


def test_disconnect_can_leave_an_unreachable_layer():
    d = chain("relu", "tanh")
    d.disconnect_layers("l0", "l1")
    with pytest.raises(UnreachableLayerError):
        d.validate()


def test_copy_is_independent():
    d = fork()
    other = d.copy()
    other.remove_layer("c")
    assert "c" in d and other != d
