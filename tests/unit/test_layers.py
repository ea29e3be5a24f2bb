"""The layer registry (nord.architecture.layers): lookup, the contract every registered layer meets,
and registering a user's own layer."""
import inspect

import pytest
import torch
from torch import nn

import nord.architecture.layers
from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import ConfigurationError, UnknownLayerError
from nord.architecture.layers import REQUIRED, get_layer_spec, list_layers, register_layer
from nord.nn.network import NeuralNet

SPATIAL_INPUT = (3, 16, 16)
CLASSES = 5

# Values for parameters that have no default (shape parameters are inferred, so they are
# not listed). A newly registered layer with another required parameter makes the contract
# tests fail until a sensible value is added here.
SENSIBLE = {"out_channels": 4, "kernel_size": 3, "output_size": 2, "out_features": 6}


@pytest.fixture
def registry(monkeypatch):
    """A private copy of the registry, so layers registered by a test do not leak."""
    monkeypatch.setattr(nord.architecture.layers, "LAYERS", nord.architecture.layers.LAYERS.copy())


def minimal_params(name):
    spec = get_layer_spec(name)
    params = {}
    for param, default in spec.params:
        if default is REQUIRED and param != spec.shape_param:
            assert param in SENSIBLE, (
                f"layer '{name}' requires {param!r}: add a sensible value to SENSIBLE")
            params[param] = SENSIBLE[param]
    return params


def single_layer_net(name, after_linear=False):
    d = NeuralDescriptor()
    if after_linear:
        d.add_layer_sequential("linear", {"out_features": 12}, "fc")
    d.add_layer_sequential(name, minimal_params(name), "layer")
    return NeuralNet(d, input_shape=SPATIAL_INPUT, num_classes=CLASSES)


# --- the contract of every registered layer ----------------------------------------------
@pytest.mark.parametrize("name", list_layers())
def test_registered_layer_resolves_to_a_torch_module_class(name):
    target = get_layer_spec(name).resolve()
    assert isinstance(target, type) and issubclass(target, nn.Module)


@pytest.mark.parametrize("name", list_layers())
def test_registered_layer_is_found_again_by_its_class(name):
    spec = get_layer_spec(name)
    assert get_layer_spec(spec.resolve()) is spec


@pytest.mark.parametrize("name", list_layers())
def test_registered_parameters_follow_the_constructor_signature(name):
    """Positional parameters ([3, 10, 5]) are only right if the order is the class's."""
    spec = get_layer_spec(name)
    signature = inspect.signature(spec.resolve().__init__)
    named = [p for p in signature.parameters.values()
             if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    assert [p.name for p in named[:len(spec.params)]] == list(spec.param_names)
    for (param, default), actual in zip(spec.params, named):
        expected = inspect.Parameter.empty if default is REQUIRED else default
        assert actual.default == expected, f"{name}.{param}"


@pytest.mark.parametrize("name", list_layers())
def test_registered_layer_builds_and_runs_inside_a_network(name):
    spec = get_layer_spec(name)
    net = single_layer_net(name, after_linear=spec.input_kind == "flat")
    assert isinstance(net.layer_modules["layer"], spec.resolve())
    out = net(torch.randn(2, *SPATIAL_INPUT))
    assert out.shape == (2, CLASSES)


@pytest.mark.parametrize(
    "name", [n for n in list_layers() if get_layer_spec(n).input_kind == "any"])
def test_layer_of_any_input_kind_also_runs_on_a_flat_tensor(name):
    net = single_layer_net(name, after_linear=True)
    assert net(torch.randn(2, *SPATIAL_INPUT)).shape == (2, CLASSES)


def test_list_layers_is_sorted_and_has_the_documented_layers():
    names = list_layers()
    assert names == sorted(names)
    for expected in ("conv2d", "max_pool2d", "avg_pool2d", "batch_norm2d", "linear", "relu",
                     "dropout", "flatten", "identity"):
        assert expected in names


def test_forced_parameter_overrides_the_given_value():
    d = NeuralDescriptor()
    d.add_layer("relu", {"inplace": True}, "act")
    net = NeuralNet(d, input_shape=SPATIAL_INPUT, num_classes=CLASSES)
    assert net.layer_modules["act"].inplace is False


# --- lookup -----------------------------------------------------------------------------
def test_lookup_by_torch_class():
    assert get_layer_spec(nn.Conv2d).name == "conv2d"


def test_lookup_by_class_name_ignores_case():
    assert get_layer_spec("MaxPool2d").name == "max_pool2d"


def test_unknown_name_lists_every_valid_name():
    with pytest.raises(UnknownLayerError) as caught:
        get_layer_spec("conv3x3")
    message = str(caught.value)
    assert "'conv3x3'" in message
    assert "register_layer" in message
    for name in list_layers():
        assert name in message


def test_unknown_class_is_rejected_with_the_valid_names():
    with pytest.raises(UnknownLayerError) as caught:
        get_layer_spec(nn.LSTM)
    assert "LSTM" in str(caught.value)
    assert "conv2d" in str(caught.value)


def test_unknown_layer_error_message_is_not_quoted_like_a_key_error():
    with pytest.raises(UnknownLayerError) as caught:
        get_layer_spec("nope")
    assert str(caught.value).startswith("unknown layer type")


def test_lookup_of_something_that_is_no_layer_raises_unknown_layer():
    with pytest.raises(UnknownLayerError):
        get_layer_spec(42)


# --- registering a user's layer ------------------------------------------------------------
class Scale(nn.Module):
    def __init__(self, factor=2.0):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


def test_registered_user_class_is_usable_by_name(registry):
    register_layer("scale", Scale, params=[("factor", 2.0)])
    d = NeuralDescriptor()
    d.add_layer("scale", {"factor": 3.0}, "s")
    net = NeuralNet(d, input_shape=SPATIAL_INPUT, num_classes=CLASSES)
    assert isinstance(net.layer_modules["s"], Scale)
    assert net.layer_modules["s"].factor == 3.0


def test_registered_user_class_is_usable_by_class(registry):
    register_layer("scale", Scale, params=[("factor", 2.0)])
    d = NeuralDescriptor()
    d.add_layer(Scale, [4.0], "s")
    assert d.layers["s"].type == "scale"
    assert d.layers["s"].params == {"factor": 4.0}


def test_registered_dotted_path_resolves_when_looked_up_by_class(registry):
    register_layer("soft_sign_for_test", "torch.nn.Softsign")
    assert get_layer_spec(nn.Softsign).name == "soft_sign_for_test"
    assert "soft_sign_for_test" in list_layers()


def test_duplicate_registration_is_rejected_without_overwriting(registry):
    before = get_layer_spec("relu")
    with pytest.raises(ConfigurationError) as caught:
        register_layer("relu", "torch.nn.Tanh")
    assert "'relu'" in str(caught.value) and "overwrite=True" in str(caught.value)
    assert get_layer_spec("relu") is before


def test_overwrite_replaces_a_registration(registry):
    register_layer("relu", "torch.nn.Tanh", overwrite=True)
    assert get_layer_spec("relu").target == "torch.nn.Tanh"


@pytest.mark.parametrize("kwargs", [
    dict(name="my block", target=Scale),
    dict(name="scale", target=Scale, input_kind="volumetric"),
    dict(name="scale", target=Scale, params=[("factor", 2.0)], shape_param="in_channels"),
])
def test_invalid_registration_is_a_configuration_error(registry, kwargs):
    with pytest.raises(ConfigurationError):
        register_layer(**kwargs)
    assert "scale" not in list_layers()


def test_stale_dotted_path_does_not_break_lookup_by_class(registry):
    register_layer("ghost", "nord.nn.modules.Ghost")  # no such class

    class Ghost(nn.Module):
        pass

    with pytest.raises(UnknownLayerError):
        get_layer_spec(Ghost)
