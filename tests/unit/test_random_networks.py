"""Hundreds of seeded random descriptors: each one either builds and trains one step with
output (batch, classes) and finite gradients, or raises a documented error. Nothing else.

The generator deliberately makes unrealisable networks too (kernels larger than the
feature map, pool padding beyond half the kernel, wrong shape parameters, spatial layers
after linear ones, flattens that break the layout, outputs that not every layer reaches).
"""
import random

import pytest
import torch
from torch.nn import functional as F

from nord.architecture.descriptor import MERGE_RULES, NeuralDescriptor
from nord.errors import LayerParameterError, NordError, ShapeError, UnreachableLayerError
from nord.nn.network import NeuralNet

INPUT_SHAPE = (3, 12, 12)
CLASSES = 4
BATCH = 3
N_CASES = 300

# The errors NeuralNet documents for a descriptor that passed construction: an unrealisable
# shape, a value the torch constructor refuses, or a graph rule that validate() checks.
DOCUMENTED = (ShapeError, LayerParameterError, UnreachableLayerError)

ACTIVATIONS = ["relu", "relu6", "leaky_relu", "elu", "gelu", "silu", "sigmoid", "tanh", "identity"]


def random_params(layer_type, rng):
    if layer_type in ("conv2d", "relu_conv_bn"):
        kernel = rng.choice([1, 1, 2, 3, 3, 3, 5, 7, 13, 15])  # 13 and 15 exceed 12x12
        params = {"out_channels": rng.randint(1, 8),
                  "kernel_size": kernel if rng.random() < 0.8 else [kernel, rng.randint(1, 5)],
                  "stride": rng.randint(1, 3), "padding": rng.randint(0, 3)}
        if rng.random() < 0.15:
            params["in_channels"] = rng.randint(1, 8)  # right or contradicting
        return params
    if layer_type in ("max_pool2d", "avg_pool2d"):
        params = {"kernel_size": rng.randint(1, 5), "padding": rng.randint(0, 2)}
        if rng.random() < 0.5:
            params["stride"] = rng.randint(1, 3)
        return params
    if layer_type in ("adaptive_avg_pool2d", "adaptive_max_pool2d"):
        return {"output_size": rng.randint(1, 4)}
    if layer_type in ("batch_norm2d", "batch_norm1d"):
        return {"num_features": rng.randint(1, 8)} if rng.random() < 0.15 else {}
    if layer_type == "linear":
        return {"out_features": rng.randint(1, 16)}
    if layer_type in ("dropout", "dropout2d"):
        return {"p": round(rng.uniform(0.0, 1.1), 2)}  # above 1: refused by torch
    if layer_type == "flatten":
        return {"start_dim": rng.choice([1, 1, 1, 2])}
    return {}


LAYER_WEIGHTS = {
    "conv2d": 6, "relu_conv_bn": 1, "max_pool2d": 2, "avg_pool2d": 2, "adaptive_avg_pool2d": 1,
    "adaptive_max_pool2d": 1, "batch_norm2d": 2, "batch_norm1d": 1, "linear": 2,
    "dropout": 1, "dropout2d": 1, "flatten": 1, **{name: 1 for name in ACTIVATIONS},
}


def random_descriptor(seed):
    """A random valid graph; every layer reads from an earlier one, plus extra forward edges."""
    rng = random.Random(seed)
    d = NeuralDescriptor()
    names = []
    for index in range(rng.randint(1, 8)):
        layer_type = rng.choices(list(LAYER_WEIGHTS), weights=list(LAYER_WEIGHTS.values()))[0]
        name = d.add_layer(layer_type, random_params(layer_type, rng), f"l{index}",
                           merge=rng.choice(MERGE_RULES))
        if names:
            main = names[-1] if rng.random() < 0.7 else rng.choice(names)
            d.connect_layers(main, name)
            for other in names:
                if other != main and rng.random() < 0.2:
                    d.connect_layers(other, name)
        names.append(name)
    if len(names) > 1 and rng.random() < 0.05:
        d.set_output(rng.choice(names))  # may leave layers that do not reach it
    return d


def outcome(seed):
    """The built network, or the documented error it raised (anything else propagates)."""
    try:
        return NeuralNet(random_descriptor(seed), input_shape=INPUT_SHAPE, num_classes=CLASSES)
    except NordError as error:
        return error


@pytest.mark.timeout(30)
@pytest.mark.parametrize("seed", range(N_CASES))
def test_random_descriptor_trains_or_raises_a_documented_error(seed):
    try:   # a parameter out of its range is refused when the descriptor is built
        descriptor = random_descriptor(seed)
    except NordError as error:
        assert type(error) in DOCUMENTED, f"{type(error).__name__}: {error}"
        assert str(error)
        return
    before = descriptor.to_dict()
    try:
        net = NeuralNet(descriptor, input_shape=INPUT_SHAPE, num_classes=CLASSES)
    except NordError as error:
        assert type(error) in DOCUMENTED, f"{type(error).__name__}: {error}"
        assert str(error)
        assert descriptor.to_dict() == before
        return
    assert descriptor.to_dict() == before
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn((BATCH,) + INPUT_SHAPE, generator=generator)
    y = torch.randint(0, CLASSES, (BATCH,), generator=generator)
    out = net(x)
    assert out.shape == (BATCH, CLASSES)
    assert torch.isfinite(out).all()
    F.cross_entropy(out, y).backward()
    head = net.head[-1]
    assert head.weight.grad is not None
    for name, parameter in net.named_parameters():
        if parameter.grad is not None:
            assert torch.isfinite(parameter.grad).all(), name


def test_generator_is_deterministic():
    assert random_descriptor(7).to_dict() == random_descriptor(7).to_dict()
    assert random_descriptor(7).to_dict() != random_descriptor(8).to_dict()


@pytest.mark.timeout(60)
def test_random_cases_exercise_both_outcomes_and_every_error_kind():
    """Guards the test above against a generator that only makes one kind of case."""
    results = [outcome(seed) for seed in range(N_CASES)]
    built = [r for r in results if isinstance(r, NeuralNet)]
    assert len(built) >= N_CASES // 4
    assert any(len(net.merges) > 0 for net in built)  # some multi-input layers build
    assert any(net.flattens for net in built)
    kinds = {type(r) for r in results if not isinstance(r, NeuralNet)}
    assert kinds == set(DOCUMENTED)
