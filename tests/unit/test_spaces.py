"""ConvSpace: the paper's space, its bounds, decoding, and the repair of oversized kernels."""
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nord.errors import ConfigurationError, SearchSpaceError, ShapeError, UnknownLayerError
from nord.evaluators.base import Evaluator
from nord.evaluators.result import FAILED_FITNESS, EvaluationResult
from nord.search.spaces.conv import MAX_LAYERS, PAPER_LAYERS, ConvSpace

torch = pytest.importorskip("torch")
from nord.nn.network import NeuralNet  # noqa: E402  (needs torch)

DIGITS = (1, 8, 8)

pytestmark = pytest.mark.timeout(60)


class BuildEvaluator(Evaluator):
    """Builds the network for the input shape and scores it without training."""

    def __init__(self, input_shape):
        self.input_shape = input_shape

    def _evaluate(self, descriptor):
        net = NeuralNet(descriptor, input_shape=self.input_shape, num_classes=10)
        return EvaluationResult(accuracy=0.5, n_params=net.count_parameters())


def conv_params(descriptor):
    return [descriptor.layers[name].params for name in descriptor.topological_order()
            if descriptor.layers[name].type == "conv2d"]


def test_default_is_the_papers_two_layer_space():
    space = ConvSpace()
    assert PAPER_LAYERS == 2
    assert space.dimension == 2 * PAPER_LAYERS
    assert space.bounds() == ((1, 1, 1, 1), (50, 50, 50, 50))
    assert space.integer_mask == (True,) * 4
    assert space.input_shape == (3, 32, 32)


def test_layers_and_bounds_are_configurable():
    space = ConvSpace(DIGITS, layers=3, channels=(4, 16), kernel_size=(1, 5))
    assert space.bounds() == ((4, 1) * 3, (16, 5) * 3)


def test_depth_is_limited_to_what_the_space_builds_and_trains_in_reasonable_time():
    deepest = ConvSpace(DIGITS, layers=MAX_LAYERS)
    genome = deepest.sample(np.random.default_rng(0))
    assert len(deepest.decode(genome).layers) == 2 * MAX_LAYERS
    with pytest.raises(ConfigurationError) as error:
        ConvSpace(DIGITS, layers=MAX_LAYERS + 1)
    assert (f"layers must be an integer in [1, {MAX_LAYERS}]" in str(error.value)
            and f"got {MAX_LAYERS + 1}" in str(error.value))


def test_samples_are_within_bounds():
    space = ConvSpace(DIGITS, layers=3, channels=(4, 16), kernel_size=(2, 5))
    rng = np.random.default_rng(0)
    for _ in range(200):
        genome = space.sample(rng)
        assert space.normalise(genome) == genome


def test_decode_is_a_conv_relu_chain_with_inferred_in_channels():
    descriptor = ConvSpace(DIGITS, layers=2).to_descriptor((7, 3, 9, 2))
    types = [descriptor.layers[name].type for name in descriptor.topological_order()]
    assert types == ["conv2d", "relu", "conv2d", "relu"]
    params = conv_params(descriptor)
    assert [(p["out_channels"], p["kernel_size"]) for p in params] == [(7, 3), (9, 2)]
    assert all(p.get("in_channels") is None for p in params)


def test_activation_is_configurable():
    descriptor = ConvSpace(DIGITS, activation="relu6").to_descriptor((7, 3, 9, 2))
    types = [descriptor.layers[name].type for name in descriptor.topological_order()]
    assert types == ["conv2d", "relu6", "conv2d", "relu6"]


def test_no_activation():
    descriptor = ConvSpace(DIGITS, activation=None).to_descriptor((7, 3, 9, 2))
    assert [descriptor.layers[n].type for n in descriptor.topological_order()] == ["conv2d"] * 2


def test_repair_clips_kernels_to_the_feature_map_that_reaches_them():
    space = ConvSpace(DIGITS)
    # 8x8 -> kernel 50 becomes 8 (1x1 out) -> the next kernel can only be 1
    assert space.repaired((10, 50, 5, 50)) == (10, 8, 5, 1)
    # 8x8 -> kernel 5 leaves 4x4 -> kernel 6 becomes 4
    assert space.repaired((10, 5, 5, 6)) == (10, 5, 5, 4)


def test_repair_uses_the_smaller_side_of_a_rectangular_input():
    space = ConvSpace((1, 6, 10))
    # min(8, 6, 10) = 6 -> 1x5 left -> min(3, 1, 5) = 1
    assert space.repaired((2, 8, 2, 3)) == (2, 6, 2, 1)


def test_feasible_genomes_are_not_changed():
    space = ConvSpace(DIGITS)
    assert space.feasible((10, 3, 5, 4))
    assert space.repaired((10, 3, 5, 4)) == (10, 3, 5, 4)
    assert not space.feasible((10, 3, 5, 7))


def test_output_size_follows_the_repaired_layers():
    space = ConvSpace(DIGITS)
    assert space.output_size((10, 3, 5, 4)) == (3, 3)
    assert space.output_size((10, 50, 5, 50)) == (1, 1)


def test_repaired_genomes_decode_to_the_same_descriptor():
    space = ConvSpace(DIGITS)
    assert space.to_descriptor((10, 50, 5, 50)).hash == space.to_descriptor((10, 8, 5, 1)).hash


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=4, max_size=4))
def test_every_repaired_genome_builds_and_runs(genome):
    space = ConvSpace(DIGITS)
    net = NeuralNet(space.to_descriptor(genome), input_shape=DIGITS, num_classes=10)
    assert net(torch.zeros(2, *DIGITS)).shape == (2, 10)


def test_without_repair_the_descriptor_keeps_the_oversized_kernel():
    space = ConvSpace(DIGITS, repair=False)
    params = conv_params(space.to_descriptor((10, 50, 5, 50)))
    assert [p["kernel_size"] for p in params] == [50, 50]


def test_without_repair_an_oversized_kernel_does_not_build():
    descriptor = ConvSpace(DIGITS, repair=False).to_descriptor((10, 9, 5, 1))
    with pytest.raises(ShapeError):
        NeuralNet(descriptor, input_shape=DIGITS)


def test_without_repair_an_oversized_kernel_is_a_recorded_failure():
    descriptor = ConvSpace(DIGITS, repair=False).to_descriptor((10, 9, 5, 1))
    result = BuildEvaluator(DIGITS).descriptor_evaluate(descriptor)
    assert not result.ok
    assert "ShapeError" in result.error
    assert result.fitness == FAILED_FITNESS


def test_with_repair_the_same_genome_is_evaluated():
    descriptor = ConvSpace(DIGITS).to_descriptor((10, 9, 5, 1))
    assert BuildEvaluator(DIGITS).descriptor_evaluate(descriptor).ok


def test_genomes_outside_the_bounds_are_rejected():
    with pytest.raises(SearchSpaceError):
        ConvSpace(DIGITS).to_descriptor((0, 3, 5, 4))


def test_describe_records_the_settings_as_json():
    info = json.loads(json.dumps(ConvSpace(DIGITS, layers=3, repair=False).describe()))
    assert info["space"] == "ConvSpace"
    assert info["input_shape"] == [1, 8, 8]
    assert info["layers"] == 3
    assert info["repair"] is False
    assert info["lower"] == [1] * 6


@pytest.mark.parametrize("kwargs", [
    {"input_shape": (8, 8)},
    {"input_shape": (1, 0, 8)},
    {"layers": 0},
    {"layers": 1.5},
    {"channels": (0, 50)},
    {"channels": (10, 5)},
    {"kernel_size": (1,)},
    {"kernel_size": (1.5, 3)},
])
def test_invalid_settings_are_configuration_errors(kwargs):
    with pytest.raises(ConfigurationError):
        ConvSpace(**{"input_shape": DIGITS, **kwargs})


def test_an_unknown_activation_names_the_valid_layers():
    with pytest.raises(UnknownLayerError, match="relu"):
        ConvSpace(DIGITS, activation="swishy")
