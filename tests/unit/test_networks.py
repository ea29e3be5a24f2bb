"""NeuralNet (nord.nn.network) and the merge rule (nord.nn.modules): descriptor -> torch module."""
import pytest
import torch
from torch import nn
from torch.nn import Conv2d, MaxPool2d
from torch.nn import functional as F

from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import LayerParameterError, ShapeError, UnreachableLayerError
from nord.nn.modules import Merge, ReLUConvBN, Zero, align
from nord.nn.network import NeuralNet


def conv(out_channels, kernel_size=3, **extra):
    return {"out_channels": out_channels, "kernel_size": kernel_size, **extra}


def chain(*layers):
    """chain(('conv2d', {...}), ('relu', None)) with names l0, l1, ..."""
    d = NeuralDescriptor()
    for index, (layer_type, params) in enumerate(layers):
        d.add_layer_sequential(layer_type, params, f"l{index}")
    return d


def paper_descriptor():
    d = NeuralDescriptor()
    d.add_layer(Conv2d, [3, 10, 5], "convolution")
    d.add_layer(MaxPool2d, {"kernel_size": 2}, "max_pool1")
    d.add_layer(MaxPool2d, [2, 2], "max_pool2")
    d.connect_layers("convolution", "max_pool1")
    d.connect_layers("convolution", "max_pool2")
    return d


def diamond(merge="sum"):
    """stem -> (wide: 6 channels, 8x8) and (narrow: pooled to 4x4, 4 channels) -> join."""
    d = NeuralDescriptor()
    d.add_layer("conv2d", conv(4), "stem")
    d.add_layer("conv2d", conv(6, padding=1), "wide")
    d.add_layer("max_pool2d", {"kernel_size": 2}, "narrow")
    d.add_layer("relu", None, "join", merge=merge)
    for source, target in (("stem", "wide"), ("stem", "narrow"),
                           ("wide", "join"), ("narrow", "join")):
        d.connect_layers(source, target)
    return d


# --- forward shapes ------------------------------------------------------------------------
def test_chain_output_is_batch_by_classes():
    d = chain(("conv2d", conv(8)), ("relu", None), ("max_pool2d", {"kernel_size": 2}),
              ("linear", {"out_features": 16}), ("relu", None))
    net = NeuralNet(d, input_shape=(3, 16, 16), num_classes=7)
    assert net(torch.randn(5, 3, 16, 16)).shape == (5, 7)


def test_dag_output_is_batch_by_classes():
    net = NeuralNet(diamond(), input_shape=(3, 10, 10), num_classes=4)
    assert net(torch.randn(3, 3, 10, 10)).shape == (3, 4)


def test_flat_input_shape():
    d = chain(("linear", {"out_features": 8}), ("relu", None))
    net = NeuralNet(d, input_shape=(20,), num_classes=3)
    assert net(torch.randn(4, 20)).shape == (4, 3)


def test_paper_example_two_pools_from_one_conv_and_two_sinks_merged():
    net = NeuralNet(paper_descriptor(), input_shape=(3, 32, 32), num_classes=10)
    assert net.output_shapes["convolution"] == (10, 28, 28)
    assert net.output_shapes["max_pool1"] == net.output_shapes["max_pool2"] == (10, 14, 14)
    assert net.head[-1].in_features == 10 * 14 * 14  # the two sinks are summed, not stacked
    assert net(torch.randn(2, 3, 32, 32)).shape == (2, 10)


def test_two_sinks_are_summed_before_the_head():
    net = NeuralNet(paper_descriptor(), input_shape=(3, 32, 32), num_classes=10)
    captured = {}
    net.head.register_forward_hook(lambda module, args, out: captured.update(x=args[0]))
    for name in ("max_pool1", "max_pool2"):
        net.layer_modules[name].register_forward_hook(
            lambda module, args, out, name=name: captured.update({name: out}))
    net(torch.randn(2, 3, 32, 32))
    assert torch.allclose(captured["x"], captured["max_pool1"] + captured["max_pool2"])


# --- merges ----------------------------------------------------------------------------------
def test_sum_merge_pads_channels_and_aligns_spatial_size_numerically():
    # a: the input itself (1 channel, 4x4); b: 1x1 conv with weights 1, 2, 3 (3 channels, 4x4);
    # p: 2x2 max pool of b (3 channels, 2x2); m sums a and p: a is average-pooled to 2x2 and
    # zero-padded to 3 channels.
    d = NeuralDescriptor()
    d.add_layer("identity", None, "a")
    d.add_layer("conv2d", conv(3, 1, bias=False), "b")
    d.add_layer("max_pool2d", {"kernel_size": 2}, "p")
    d.add_layer("identity", None, "m")
    for source, target in (("a", "b"), ("b", "p"), ("a", "m"), ("p", "m")):
        d.connect_layers(source, target)
    net = NeuralNet(d, input_shape=(1, 4, 4), num_classes=2)
    with torch.no_grad():
        net.layer_modules["b"].weight.copy_(torch.tensor([1.0, 2.0, 3.0]).view(3, 1, 1, 1))
    captured = {}
    net.layer_modules["m"].register_forward_hook(lambda module, args, out: captured.update(m=out))
    x = torch.arange(16.0).view(1, 1, 4, 4)
    net(x)
    average = torch.tensor([[2.5, 4.5], [10.5, 12.5]])
    maximum = torch.tensor([[5.0, 7.0], [13.0, 15.0]])
    expected = torch.stack([average + maximum, 2 * maximum, 3 * maximum]).unsqueeze(0)
    assert torch.equal(captured["m"], expected)


def test_concat_merge_adds_channel_counts():
    net = NeuralNet(diamond("concat"), input_shape=(3, 10, 10), num_classes=4)
    assert net.output_shapes["wide"] == (6, 8, 8)
    assert net.output_shapes["narrow"] == (4, 4, 4)
    assert net.output_shapes["join"] == (10, 4, 4)


def test_sum_merge_takes_the_widest_channel_count_and_smallest_size():
    net = NeuralNet(diamond("sum"), input_shape=(3, 10, 10), num_classes=4)
    assert net.output_shapes["join"] == (6, 4, 4)


def test_merge_of_flat_and_spatial_flattens_the_spatial_input():
    d = NeuralDescriptor()
    d.add_layer("conv2d", conv(2), "c")
    d.add_layer("linear", {"out_features": 5}, "fc")
    d.add_layer("relu", None, "join", merge="concat")
    for source, target in (("c", "fc"), ("c", "join"), ("fc", "join")):
        d.connect_layers(source, target)
    net = NeuralNet(d, input_shape=(3, 6, 6), num_classes=2)
    assert net.output_shapes["join"] == (2 * 4 * 4 + 5,)


def test_merge_module_sum_pads_features_of_flat_tensors():
    a, b = torch.ones(2, 3), torch.full((2, 5), 2.0)
    assert torch.equal(Merge("sum")(a, b), torch.tensor([[3.0, 3, 3, 2, 2]] * 2))


def test_merge_module_concat_keeps_input_order():
    a, b = torch.zeros(1, 1, 2, 2), torch.ones(1, 2, 2, 2)
    out = Merge("concat")(a, b)
    assert out.shape == (1, 3, 2, 2) and out[0, 0].sum() == 0 and out[0, 1:].sum() == 8


def test_merge_module_passes_a_single_input_through():
    x = torch.randn(2, 3, 4, 4)
    assert Merge("concat")(x) is x


def test_align_pools_to_the_smallest_spatial_size():
    shapes = [t.shape for t in align([torch.ones(1, 2, 8, 8), torch.ones(1, 3, 4, 2)], True)]
    assert shapes == [(1, 2, 4, 2), (1, 3, 4, 2)]


def test_zero_module_outputs_zeros_of_the_input_shape():
    x = torch.randn(2, 3, 4, 4)
    out = Zero()(x)
    assert out.shape == x.shape and not out.any()


def test_relu_conv_bn_layer_order():
    op = ReLUConvBN(3, 5, 3, padding=1)
    kinds = [type(m) for m in op.op]
    assert kinds == [nn.ReLU, nn.Conv2d, nn.BatchNorm2d]
    assert op(torch.randn(2, 3, 6, 6)).shape == (2, 5, 6, 6)


# --- flat and spatial layers --------------------------------------------------------------------
def test_flatten_is_inserted_before_linear_after_spatial():
    d = chain(("conv2d", conv(4)), ("linear", {"out_features": 6}))
    net = NeuralNet(d, input_shape=(3, 8, 8), num_classes=2)
    assert net.layer_modules["l1"].in_features == 4 * 6 * 6
    assert net.output_shapes["l1"] == (6,)
    assert net(torch.randn(2, 3, 8, 8)).shape == (2, 2)


def test_flatten_is_inserted_in_a_dag_too():
    d = NeuralDescriptor()
    d.add_layer("conv2d", conv(4), "c")
    d.add_layer("linear", {"out_features": 6}, "fc1")
    d.add_layer("linear", {"out_features": 6}, "fc2")
    d.connect_layers("c", "fc1")
    d.connect_layers("c", "fc2")
    net = NeuralNet(d, input_shape=(3, 8, 8), num_classes=2)
    assert net(torch.randn(2, 3, 8, 8)).shape == (2, 2)


def test_conv_after_linear_is_a_shape_error_naming_the_layer():
    d = chain(("linear", {"out_features": 6}), ("conv2d", conv(4)))
    with pytest.raises(ShapeError) as caught:
        NeuralNet(d, input_shape=(3, 8, 8))
    message = str(caught.value)
    assert "'l1'" in message and "spatial" in message and "(6,)" in message


def test_conv_on_flat_network_input_is_a_shape_error():
    with pytest.raises(ShapeError):
        NeuralNet(chain(("conv2d", conv(4))), input_shape=(12,))


# --- shape parameters ----------------------------------------------------------------------------
def test_shape_parameters_are_inferred():
    d = chain(("conv2d", conv(8)), ("batch_norm2d", None), ("conv2d", conv(5)),
              ("linear", {"out_features": 7}), ("batch_norm1d", None))
    net = NeuralNet(d, input_shape=(3, 9, 9), num_classes=2)
    assert net.layer_modules["l0"].in_channels == 3
    assert net.layer_modules["l1"].num_features == 8
    assert net.layer_modules["l2"].in_channels == 8
    assert net.layer_modules["l3"].in_features == 5 * 5 * 5
    assert net.layer_modules["l4"].num_features == 7


def test_shape_parameter_inferred_from_a_concat_merge():
    d = diamond("concat")
    d.add_layer_sequential("conv2d", conv(3, 1), "after")
    net = NeuralNet(d, input_shape=(3, 10, 10), num_classes=2)
    assert net.layer_modules["after"].in_channels == 10


def test_consistent_given_shape_parameter_is_accepted():
    d = chain(("conv2d", [3, 4, 3]), ("conv2d", [4, 2, 3]))
    assert NeuralNet(d, input_shape=(3, 8, 8)).layer_modules["l1"].in_channels == 4


def test_contradicting_in_channels_is_a_shape_error_naming_layer_and_shapes():
    d = chain(("conv2d", conv(8)), ("conv2d", {"in_channels": 5, **conv(4)}))
    with pytest.raises(ShapeError) as caught:
        NeuralNet(d, input_shape=(3, 16, 16))
    message = str(caught.value)
    assert "'l1'" in message and "in_channels=5" in message and "(8, 14, 14)" in message
    assert "set it to 8" in message


def test_contradicting_in_features_is_a_shape_error():
    d = chain(("linear", {"in_features": 10, "out_features": 4}),)
    with pytest.raises(ShapeError) as caught:
        NeuralNet(d, input_shape=(3, 4, 4))
    assert "'l0'" in str(caught.value) and "in_features=10" in str(caught.value)


def test_contradicting_num_features_is_a_shape_error():
    d = chain(("conv2d", conv(8)), ("batch_norm2d", {"num_features": 3}))
    with pytest.raises(ShapeError) as caught:
        NeuralNet(d, input_shape=(3, 8, 8))
    assert "'l1'" in str(caught.value)


# --- unrealisable descriptors -----------------------------------------------------------------
def test_kernel_larger_than_the_input_is_a_shape_error_at_build():
    d = chain(("conv2d", conv(4)), ("conv2d", conv(8, 50)))
    with pytest.raises(ShapeError) as caught:
        NeuralNet(d, input_shape=(3, 32, 32))
    message = str(caught.value)
    assert "'l1'" in message and "(4, 30, 30)" in message and "(3, 32, 32)" in message


def test_pool_reducing_to_nothing_is_a_shape_error():
    d = chain(("max_pool2d", {"kernel_size": 50}),)
    with pytest.raises(ShapeError) as caught:
        NeuralNet(d, input_shape=(3, 32, 32))
    assert "'l0'" in str(caught.value)


def test_invalid_constructor_value_is_a_layer_parameter_error():
    with pytest.raises(LayerParameterError) as caught:   # refused as the descriptor is built
        NeuralNet(chain(("dropout", {"p": 3.0}),), input_shape=(3, 8, 8))
    assert "'l0'" in str(caught.value)


def test_negative_kernel_is_a_layer_parameter_error():
    with pytest.raises(LayerParameterError):
        NeuralNet(chain(("conv2d", conv(4, -1)),), input_shape=(3, 8, 8))


def test_flatten_of_the_batch_dimension_is_a_shape_error():
    with pytest.raises(ShapeError) as caught:
        NeuralNet(chain(("flatten", {"start_dim": 0}),), input_shape=(3, 8, 8))
    assert "'l0'" in str(caught.value) and "batch" in str(caught.value)


def test_flatten_dimension_out_of_range_is_a_shape_error():
    with pytest.raises(ShapeError):
        NeuralNet(chain(("flatten", {"start_dim": 5}),), input_shape=(3, 8, 8))


def test_merge_of_unalignable_tensors_is_a_shape_error():
    d = NeuralDescriptor()
    d.add_layer("identity", None, "a")
    d.add_layer("flatten", {"start_dim": 2}, "f")  # (N, C, H*W): neither flat nor spatial
    d.add_layer("tanh", None, "g")
    d.add_layer("relu", None, "join")
    for source, target in (("a", "f"), ("f", "g"), ("f", "join"), ("g", "join")):
        d.connect_layers(source, target)
    with pytest.raises(ShapeError) as caught:
        NeuralNet(d, input_shape=(3, 4, 4))
    assert "'join'" in str(caught.value)


def test_invalid_graph_is_a_descriptor_error_at_build():
    d = chain(("relu", None))
    d.add_layer("tanh", None, "island")
    with pytest.raises(UnreachableLayerError):
        NeuralNet(d, input_shape=(3, 8, 8))


# --- building is repeatable and leaves the descriptor alone ---------------------------------------
def test_building_twice_gives_equal_structures():
    d = diamond("concat")
    a = NeuralNet(d, input_shape=(3, 10, 10), num_classes=4)
    b = NeuralNet(d, input_shape=(3, 10, 10), num_classes=4)
    assert repr(a) == repr(b)
    assert ({k: v.shape for k, v in a.state_dict().items()} ==
        {k: v.shape for k, v in b.state_dict().items()})


def test_building_twice_with_one_seed_gives_equal_weights():
    d = diamond("sum")
    torch.manual_seed(3)
    a = NeuralNet(d, input_shape=(3, 10, 10), num_classes=4)
    torch.manual_seed(3)
    b = NeuralNet(d, input_shape=(3, 10, 10), num_classes=4)
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name


def test_building_never_changes_the_descriptor():
    d = chain(("conv2d", conv(8)), ("batch_norm2d", None), ("relu", {"inplace": True}),
              ("linear", {"out_features": 4}))
    before = d.to_dict()
    NeuralNet(d, input_shape=(3, 8, 8))
    assert d.to_dict() == before


def test_failed_build_never_changes_the_descriptor():
    d = chain(("conv2d", conv(8)), ("conv2d", conv(4, 50)))
    before = d.to_dict()
    with pytest.raises(ShapeError):
        NeuralNet(d, input_shape=(3, 8, 8))
    assert d.to_dict() == before


def test_network_records_the_descriptor_hash():
    d = paper_descriptor()
    assert NeuralNet(d).descriptor_hash == d.hash


def test_net_starts_in_training_mode():
    net = NeuralNet(chain(("batch_norm2d", None), ("dropout", None)), input_shape=(3, 4, 4))
    assert net.training and all(m.training for m in net.modules())


def test_state_dict_holds_each_parameter_once():
    net = NeuralNet(chain(("conv2d", conv(4)), ("relu", None)), input_shape=(3, 8, 8))
    assert sorted(net.state_dict()) == sorted(["layer_modules.l0.weight", "layer_modules.l0.bias",
                                               "head.1.weight", "head.1.bias"])


# --- parameter counting --------------------------------------------------------------------------
def test_count_parameters_by_hand():
    # conv: 4*3*3*3 + 4 = 112; its output (4, 6, 6) = 144 features; head 144*10 + 10 = 1450.
    net = NeuralNet(chain(("conv2d", conv(4)),), input_shape=(3, 8, 8), num_classes=10)
    assert net.count_parameters() == 112 + 1450


def test_count_parameters_skips_frozen_ones():
    net = NeuralNet(chain(("conv2d", conv(4)),), input_shape=(3, 8, 8), num_classes=10)
    net.layer_modules["l0"].weight.requires_grad_(False)
    assert net.count_parameters() == 4 + 1450


# --- training ------------------------------------------------------------------------------------
def test_dag_backward_reaches_every_parameter():
    net = NeuralNet(diamond("sum"), input_shape=(3, 10, 10), num_classes=4)
    loss = F.cross_entropy(net(torch.randn(4, 3, 10, 10)), torch.tensor([0, 1, 2, 3]))
    loss.backward()
    for name, parameter in net.named_parameters():
        assert parameter.grad is not None and torch.isfinite(parameter.grad).all(), name


def _same_weights(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return list(sa) == list(sb) and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.parametrize("way", ["like", "on_device"])
def test_a_network_made_from_its_meta_twin_has_the_weights_a_probing_build_gives(way):
    """Built like the meta build (its inferred parameters, no probes), or made of it (its
    tensors allocated and reset in build order): on random graphs the network draws the
    initial weights and buffers of a probing build, leaves the generator where a probing
    build leaves it, and computes the same function."""
    from nord.nn.memory import measure_on_meta
    from tests.unit.test_random_networks import random_descriptor
    compared = 0
    for seed in range(120):
        try:
            d = random_descriptor(seed)
            _, meta = measure_on_meta(d, (3, 12, 12), 4, batch_size=8)
        except Exception:  # noqa: BLE001 - only buildable graphs are compared
            continue
        torch.manual_seed(seed)
        probed = NeuralNet(d, (3, 12, 12), 4)
        after_probed = torch.rand(2)
        torch.manual_seed(seed)
        if way == "like":
            made = NeuralNet(d, (3, 12, 12), 4, like=meta)
        else:
            made = NeuralNet.on_device(d, (3, 12, 12), 4, torch.device("cpu"), meta)
            assert made is meta, seed                 # made real, not built a second time
            assert not any(t.is_meta for t in made.state_dict().values())
        assert torch.equal(torch.rand(2), after_probed), seed
        assert _same_weights(probed, made), seed
        assert [b.dtype for b in made.buffers()] == [b.dtype for b in probed.buffers()]
        assert made.output_shapes == probed.output_shapes
        x = torch.randn(3, 3, 12, 12)
        probed.eval(), made.eval()
        assert torch.equal(probed(x), made(x)), seed
        compared += 1
    assert compared > 30


class _Noisy(nn.Module):
    """A user's layer that draws random numbers even in eval mode."""

    def forward(self, x):
        return x + torch.rand(1)


def test_a_user_layer_is_probed_anyway_so_its_random_draws_keep_the_weights(monkeypatch):
    import nord.architecture.layers as layers
    from nord.nn.memory import measure_on_meta
    monkeypatch.setattr(layers, "LAYERS", layers.LAYERS.copy())
    layers.register_layer("noisy_for_like", _Noisy)
    d = chain(("noisy_for_like", {}), ("conv2d", {"out_channels": 4, "kernel_size": 3}))
    _, meta = measure_on_meta(d, (1, 8, 8), 3, batch_size=4)
    torch.manual_seed(0)
    probed = NeuralNet(d, (1, 8, 8), 3)
    torch.manual_seed(0)
    assert _same_weights(probed, NeuralNet(d, (1, 8, 8), 3, like=meta))
    other = chain(("conv2d", {"out_channels": 4, "kernel_size": 3}))
    assert not meta._replayable(NeuralNet(other, (1, 8, 8), 3))


def test_a_meta_network_of_another_layer_kind_or_descriptor_is_built_like_instead(monkeypatch):
    import nord.architecture.layers as layers
    from nord.nn.memory import measure_on_meta
    cpu = torch.device("cpu")
    monkeypatch.setattr(layers, "LAYERS", layers.LAYERS.copy())
    layers.register_layer("prelu_for_real", "torch.nn.PReLU")   # weights, outside the list
    d = chain(("conv2d", {"out_channels": 4, "kernel_size": 3}), ("prelu_for_real", {}))
    _, meta = measure_on_meta(d, (1, 8, 8), 3, batch_size=4)
    torch.manual_seed(0)
    probed = NeuralNet(d, (1, 8, 8), 3)
    torch.manual_seed(0)
    real = NeuralNet.on_device(d, (1, 8, 8), 3, cpu, meta)
    assert real is not meta and _same_weights(probed, real)
    other = chain(("conv2d", {"out_channels": 5, "kernel_size": 3}))
    _, meta = measure_on_meta(d, (1, 8, 8), 3, batch_size=4)
    assert NeuralNet.on_device(other, (1, 8, 8), 3, cpu, meta) is not meta
    assert NeuralNet.on_device(d, (1, 9, 9), 3, cpu, meta) is not meta
    conv = chain(("conv2d", {"out_channels": 4, "kernel_size": 3}))
    trained = NeuralNet(conv, (1, 8, 8), 3)             # already real: never reset
    assert NeuralNet.on_device(conv, (1, 8, 8), 3, cpu, trained) is not trained
