"""Networks measured on the meta device and refused before they are allocated: above
``max_params`` or larger than the free memory of the host (or GPU)."""
import os
import random

import pytest
import torch

from nord import NeuralDescriptor
from nord.data import Digits
from nord.errors import CandidateTooLargeError, ConfigurationError, NordError
from nord.evaluators.local import LocalEvaluator
from nord.nn import memory
from nord.nn.memory import MemoryEstimate, check_fits, estimate_memory, optimizer_state_factor
from nord.nn.network import NeuralNet
from tests.unit.test_random_networks import random_descriptor

CPU = torch.device("cpu")


def conv_net(width=8):
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", {"out_channels": width, "kernel_size": 3})
    d.add_layer_sequential("relu")
    return d


def huge_net():
    """10**8 outputs from 640 features: 6.4e10 weights, ~256 GB of them in float32 alone."""
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", {"out_channels": 10, "kernel_size": 1})
    d.add_layer_sequential("linear", {"out_features": 10**8})
    return d


@pytest.fixture(scope="module")
def digits():
    return Digits(seed=0)


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_the_estimate_counts_the_parameters_of_the_real_network():
    need = estimate_memory(conv_net(), (1, 8, 8), 10, batch_size=16, optimizer="adam")
    real = NeuralNet(conv_net(), (1, 8, 8), 10)
    assert need.parameters == real.count_parameters()
    assert need.parameter_bytes == need.gradient_bytes == 4 * need.parameters
    assert need.optimizer_bytes == 2 * need.gradient_bytes      # Adam: two moments per weight


def test_activations_are_every_layer_output_of_one_batch_counted_once():
    d = NeuralDescriptor()
    d.add_layer_sequential("linear", {"out_features": 30})
    d.add_layer_sequential("relu")                  # a new tensor of the same size
    need = estimate_memory(d, (20,), 10, batch_size=16)
    # the batch (20), the linear's output (30), the ReLU's (30), the head's (10); the head's
    # flatten is a view of the ReLU's output and counts nothing more
    assert need.activation_bytes == 16 * (20 + 30 + 30 + 10) * 4
    assert need.total == (need.parameter_bytes + need.gradient_bytes + need.optimizer_bytes
                          + need.activation_bytes)


@pytest.mark.parametrize("optimizer, kwargs, factor", [
    ("adam", {}, 2), ("adamw", {}, 2), ("sgd", {}, 0), ("sgd", {"momentum": 0.9}, 1),
    ("rmsprop", {}, 1), ("rmsprop", {"momentum": 0.9, "centered": True}, 3),
    (torch.optim.Adagrad, {}, 2),
])
def test_optimizer_state_is_counted_per_weight(optimizer, kwargs, factor):
    assert optimizer_state_factor(optimizer, **kwargs) == factor


def test_a_huge_network_is_measured_without_allocating_it():
    before = resident_bytes()
    need = estimate_memory(huge_net(), (1, 8, 8), 10, batch_size=128)
    assert need.parameters > 6.4e10 and need.parameter_bytes > 256e9
    assert resident_bytes() - before < 1e9


def test_a_network_of_hundreds_of_gigabytes_is_a_quick_failed_evaluation(digits):
    evaluator = LocalEvaluator(curator=digits, epochs=1, device="cpu")
    evaluator.descriptor_evaluate(conv_net())   # loads torch's meta kernels once per process
    before = resident_bytes()
    result = evaluator.descriptor_evaluate(huge_net())
    grown = resident_bytes() - before
    assert result.status == "failed" and "CandidateTooLargeError" in result.error
    assert "would need about" in result.error and "parameters 260.4 GB" in result.error
    assert "available memory" in result.error            # the limit, named with its figure
    assert grown < 1e9, grown                              # refused before allocating
    assert result.epochs == 0
    assert evaluator.descriptor_evaluate(conv_net()).ok    # the evaluator stays usable


def test_max_params_refuses_a_larger_network_and_says_both_numbers(digits):
    allowed = NeuralNet(conv_net(), digits.input_shape, digits.num_classes).count_parameters()
    at_limit = LocalEvaluator(curator=digits, epochs=1, device="cpu", max_params=allowed)
    assert at_limit.descriptor_evaluate(conv_net()).ok
    below = LocalEvaluator(curator=digits, epochs=1, device="cpu", max_params=allowed - 1)
    result = below.descriptor_evaluate(conv_net())
    assert result.status == "failed"
    assert f"{allowed:,} parameters, above the limit of {allowed - 1:,}" in result.error
    assert "--max-params" in result.error and result.epochs == 0


@pytest.mark.parametrize("value", [0, -5, 1.5, True])
def test_max_params_must_be_a_positive_integer(value):
    with pytest.raises(ConfigurationError, match="max_params"):
        LocalEvaluator(max_params=value)


def test_max_params_is_recorded_with_the_evaluator_settings(digits):
    assert LocalEvaluator(curator=digits, max_params=10**6).describe()["max_params"] == 10**6
    assert "max_params" not in LocalEvaluator(curator=digits).describe()


def test_a_network_that_needs_more_than_the_free_memory_is_refused(monkeypatch):
    need = MemoryEstimate(10, 40, 40, 80, 1000, 4)
    monkeypatch.setattr(memory, "available_memory", lambda device: (1000, "the test's limit"))
    with pytest.raises(CandidateTooLargeError,
                       match=r"about 1\.2 kB .* the test's limit is 1\.0 kB"):
        check_fits(need, CPU)
    check_fits(MemoryEstimate(10, 40, 40, 80, 800, 4), CPU)   # 960 bytes fit


def test_the_host_figure_is_the_smaller_of_meminfo_and_the_cgroup_room(tmp_path):
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\nMemAvailable:    2048 kB\n")
    assert memory._meminfo_available(str(tmp_path / "meminfo")) == 2048 * 1024
    (tmp_path / "memory.max").write_text("1000000\n")
    (tmp_path / "memory.current").write_text("400000\n")
    assert memory._cgroup_room(str(tmp_path)) == 600000
    (tmp_path / "memory.max").write_text("max\n")
    assert memory._cgroup_room(str(tmp_path)) is None
    available, source = memory.available_memory(CPU)
    assert available > 0 and "memory" in source


def _activations_of_a_second_pass(descriptor, input_shape, classes, batch_size):
    """What the estimate counted before it read its build's own probes: every leaf's output
    in a separate training forward pass on the meta device, the batch counted on top."""
    with torch.device("meta"):
        model = NeuralNet(descriptor, input_shape, classes)
    outputs = {}

    def keep(module, inputs, output):
        if isinstance(output, torch.Tensor):
            storage = output.untyped_storage()
            outputs[storage._cdata] = (storage, storage.nbytes())

    for leaf in model.modules():
        if not list(leaf.children()):
            leaf.register_forward_hook(keep)
    with torch.no_grad(), torch.device("meta"):
        batch = torch.zeros((batch_size,) + tuple(input_shape))
        model.train()
        model(batch)
    return sum(size for _, size in outputs.values()) + batch.numel() * batch.element_size()


@pytest.mark.slow
def test_the_probes_count_what_a_separate_training_pass_counts():
    """Random graphs (merges, dropout, batch norm, views, flattens): the activation bytes
    read from the meta build's own probes equal a second forward pass's, byte for byte, and
    a network one of them refuses the other refuses too."""
    compared = 0
    for seed in range(200):
        try:
            descriptor = random_descriptor(seed)
        except NordError:
            continue
        for batch_size in (1, 5):
            try:
                expected = _activations_of_a_second_pass(descriptor, (3, 12, 12), 4, batch_size)
            except Exception:  # noqa: BLE001 - both must refuse it
                with pytest.raises(Exception):
                    estimate_memory(descriptor, (3, 12, 12), 4, batch_size)
                continue
            assert estimate_memory(descriptor, (3, 12, 12), 4,
                                   batch_size).activation_bytes == expected, (seed, batch_size)
            compared += 1
    assert compared > 100


@pytest.mark.parametrize("op, shapes", [
    ("relu", [(4, 3, 5, 5)]), ("relu", [(5, 4, 3)]), ("linear", [(4, 7), (2, 7), (2,)]),
    ("linear", [(3, 4, 7), (2, 7), None]), ("linear", [(7,), (2, 7), (2,)]),
])
def test_the_quick_meta_answers_are_what_torch_s_meta_kernels_give(op, shapes):
    tensors = [None if s is None else torch.zeros(s, device="meta") for s in shapes]
    if op == "relu" and len(shapes[0]) == 3:
        tensors = [tensors[0].transpose(0, 2)]          # not contiguous: strides kept
    call = (lambda: torch.nn.functional.relu(tensors[0])) if op == "relu" else (
        lambda: torch.nn.functional.linear(*tensors))
    expected = call()
    with memory._QuickMeta():
        quick = call()
    assert (quick.shape, quick.stride(), quick.dtype, quick.untyped_storage().nbytes()) == (
        expected.shape, expected.stride(), expected.dtype, expected.untyped_storage().nbytes())


def test_the_quick_meta_leaves_an_input_torch_refuses_to_torch():
    weight = torch.zeros((2, 7), device="meta")
    with memory._QuickMeta(), pytest.raises(RuntimeError):
        torch.nn.functional.linear(torch.zeros((4, 6), device="meta"), weight)


def test_the_quick_meta_draws_no_weights_but_keeps_the_initialisers_refusals():
    weight = torch.empty((4, 3), device="meta")
    with memory._QuickMeta():
        assert torch.nn.init.kaiming_uniform_(weight, a=5 ** 0.5) is weight
        with pytest.raises(ValueError):                  # no fan for a 1-D tensor, as in torch
            torch.nn.init.kaiming_uniform_(torch.empty(3, device="meta"))
    need = estimate_memory(conv_net(), (1, 8, 8), 10, batch_size=16)
    assert need.parameters == NeuralNet(conv_net(), (1, 8, 8), 10).count_parameters()


def test_the_quick_meta_is_the_meta_device_context_itself():
    with memory._QuickMeta():
        layer = torch.nn.Linear(3, 4)
        assert torch.get_default_device() == torch.device("meta")
        assert layer.weight.is_meta and torch.zeros(2).is_meta
        sliced = torch.zeros((4, 6))[:, ::2]            # neither contiguous nor dense
        assert torch.nn.functional.relu(sliced).stride() == torch.empty_like(sliced).stride()
    assert not torch.zeros(2).is_meta


def _window_cases(seed):
    """Random 2-d convolutions and max poolings: sizes, strides, padding, dilation, groups,
    bias, tuple or int arguments, and some that torch refuses (a window larger than its input,
    channels that do not divide, too much padding)."""
    rng = random.Random(seed)
    pick = lambda *values: rng.choice(values)   # noqa: E731
    size = (pick(1, 2, 3), pick(1, 2, 4, 6), pick(1, 3, 5, 8), pick(1, 4, 7))
    kernel, stride = pick(1, 2, 3, (2, 3), 5), pick(1, 2, (1, 2), 3)
    padding, dilation = pick(0, 1, (0, 1), 2, 3), pick(1, 2, (2, 1))
    if rng.random() < 0.5:
        groups = pick(1, 2)
        weight = (pick(2, 4, 3), size[1] // groups if rng.random() < 0.9 else 5,
                  *(kernel if isinstance(kernel, tuple) else (kernel, kernel)))
        bias = (weight[0],) if rng.random() < 0.7 else None
        return "conv", size, weight, bias, stride, padding, dilation, groups
    return "pool", size, kernel, pick(None, stride), padding, dilation


@pytest.mark.parametrize("seed", range(200))
def test_the_quick_conv_and_pool_answers_are_what_torch_s_meta_kernels_give(seed):
    case = _window_cases(seed)
    x = torch.zeros(case[1], device="meta")
    if case[0] == "conv":
        _, _, weight, bias, stride, padding, dilation, groups = case
        tensors = [x, torch.zeros(weight, device="meta"),
                   None if bias is None else torch.zeros(bias, device="meta")]
        call = lambda: torch.conv2d(*tensors, stride, padding, dilation, groups)   # noqa: E731
    else:
        _, _, kernel, stride, padding, dilation = case
        call = lambda: torch.nn.functional.max_pool2d(x, kernel, stride, padding, dilation)  # noqa: E731
    try:
        expected = call()
    except (RuntimeError, ValueError) as refusal:
        with memory._QuickMeta(), pytest.raises(type(refusal)):
            call()
        return
    with memory._QuickMeta():
        quick = call()
    assert (quick.shape, quick.stride(), quick.dtype, quick.untyped_storage().nbytes()) == (
        expected.shape, expected.stride(), expected.dtype, expected.untyped_storage().nbytes())
