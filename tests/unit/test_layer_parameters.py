"""The parameters of nord's own layers are checked when a descriptor is built, naming the layer
and the parameter, rather than failing the candidate later in torch's words."""
import pytest

import nord.architecture.layers as layers
from nord.architecture import NeuralDescriptor
from nord.architecture.layers import PARAMETER_RULES, register_layer
from nord.errors import LayerParameterError


@pytest.mark.parametrize("layer, params, words", [
    ("conv2d", {"out_channels": 4.5, "kernel_size": 3},
     "layer 'x' (conv2d): parameter 'out_channels' must be a whole number >= 1; got float 4.5"),
    ("conv2d", {"out_channels": "four", "kernel_size": 3},
     "parameter 'out_channels' must be a whole number >= 1; got str 'four'"),
    ("conv2d", {"out_channels": True, "kernel_size": 3}, "'out_channels' must be a whole"),
    ("conv2d", {"out_channels": 4, "kernel_size": [3, 0]}, "'kernel_size' must be a whole"),
    ("conv2d", {"out_channels": 4, "kernel_size": 3, "padding": "half"}, "'padding' must be"),
    ("linear", {"out_features": 0}, "'out_features' must be a whole number >= 1; got int 0"),
    ("dropout", {"p": 1.5}, "'p' must be a probability in [0, 1]; got float 1.5"),
    ("batch_norm2d", {"eps": -1}, "'eps' must be a number > 0"),
    ("max_pool2d", {"kernel_size": 2, "stride": 0}, "'stride' must be a whole number >= 1"),
    ("relu", {"inplace": "yes"}, "'inplace' must be true or false"),
])
def test_a_parameter_out_of_its_rule_is_refused_naming_layer_and_parameter(layer, params, words):
    with pytest.raises(LayerParameterError) as refused:
        NeuralDescriptor().add_layer(layer, params, name="x")
    assert words in str(refused.value)


def test_a_journaled_descriptor_is_checked_as_it_is_read():
    d = NeuralDescriptor()
    d.add_layer("conv2d", {"out_channels": 4, "kernel_size": 3}, name="c")
    text = d.to_json().replace('"out_channels": 4', '"out_channels": 4.5')
    with pytest.raises(LayerParameterError, match="'out_channels' must be a whole number"):
        NeuralDescriptor.from_json(text)


def test_valid_parameters_in_every_form_pass():
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", [3, 16, 5], "paper")        # NORD 2018's positional form
    d.add_layer_sequential("conv2d", {"out_channels": 8, "kernel_size": [3, 3],
                                      "padding": "same", "stride": (1, 2)}, "tuples")
    d.add_layer_sequential("max_pool2d", {"kernel_size": 2, "stride": None}, "pool")
    d.add_layer_sequential("adaptive_avg_pool2d", {"output_size": [None, 4]}, "adaptive")
    d.add_layer_sequential("dropout", {"p": 0}, "drop")
    assert len(d.layers) == 5


def test_a_layer_of_ones_own_is_not_held_to_the_built_in_rules(monkeypatch):
    monkeypatch.setattr(layers, "LAYERS", layers.LAYERS.copy())
    register_layer("my_scale_for_rules", "torch.nn.Identity", params=[("p", 7.0)])
    d = NeuralDescriptor()
    d.add_layer("my_scale_for_rules", {"p": 7.5})    # a 'p' that is no probability
    assert "p" in PARAMETER_RULES
