"""Training primitives: device choice per local rank, optimizers, NaN detection, test counts."""
import io
import math

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from nord.errors import ConfigurationError
from nord.nn.training import (NonFiniteLossError, ProgressBar, make_optimizer, resolve_device,
                              seed_generators, train_epoch)
from nord.nn.training import test_counts as count_correct  # not a test itself


def fake_gpus(monkeypatch, count):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)


@pytest.mark.parametrize("local_rank, expected", [(0, 0), (1, 1), (2, 0), (5, 1)])
def test_each_rank_takes_the_gpu_of_its_local_rank(monkeypatch, local_rank, expected):
    fake_gpus(monkeypatch, 2)
    assert resolve_device("auto", local_rank) == torch.device("cuda", expected)
    assert resolve_device("cuda", local_rank) == torch.device("cuda", expected)


def test_an_explicit_gpu_index_wins_over_the_local_rank(monkeypatch):
    fake_gpus(monkeypatch, 4)
    assert resolve_device("cuda:3", local_rank=1) == torch.device("cuda", 3)


def test_a_gpu_index_beyond_the_machine_is_refused(monkeypatch):
    fake_gpus(monkeypatch, 2)
    with pytest.raises(ConfigurationError, match="cuda:0 to cuda:1"):
        resolve_device("cuda:2")


def test_auto_without_gpu_is_the_cpu(monkeypatch):
    fake_gpus(monkeypatch, 0)
    assert resolve_device("auto", 3) == torch.device("cpu")
    with pytest.raises(ConfigurationError, match="CUDA is not available"):
        resolve_device("cuda")


def test_unknown_device_name_is_refused():
    with pytest.raises(ConfigurationError, match="'auto', 'cpu', 'cuda' or 'cuda:N'"):
        resolve_device("tpu")


def test_optimizers_by_name_and_class():
    params = [nn.Parameter(torch.zeros(2))]
    assert isinstance(make_optimizer("SGD", params, 0.1, momentum=0.9), torch.optim.SGD)
    assert isinstance(make_optimizer(torch.optim.Adagrad, params, 0.1), torch.optim.Adagrad)
    with pytest.raises(ConfigurationError, match="adam"):
        make_optimizer("lbfgs-ish", params, 0.1)
    with pytest.raises(ConfigurationError, match="positive"):
        make_optimizer("sgd", params, 0.0)


def batches(n=4, size=8, features=3, classes=2, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(size, features, generator=generator),
             torch.randint(0, classes, (size,), generator=generator)) for _ in range(n)]


def test_train_epoch_lowers_the_loss_and_reports_progress():
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    optimizer = make_optimizer("sgd", model.parameters(), 0.5)
    data = batches()
    stream = io.StringIO()
    first = train_epoch(model, data, optimizer, torch.device("cpu"),
                        progress=ProgressBar(len(data), "epoch", stream=stream))
    for _ in range(20):
        last = train_epoch(model, data, optimizer, torch.device("cpu"))
    assert last < first
    assert "4/4" in stream.getvalue()


def test_a_diverging_loss_raises():
    model = nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.fill_(float("inf"))
    optimizer = make_optimizer("sgd", model.parameters(), 0.1)
    with pytest.raises(NonFiniteLossError, match="smaller learning rate"):
        train_epoch(model, batches(), optimizer, torch.device("cpu"))


def test_test_counts_are_sums():
    model = nn.Linear(3, 2)
    data = batches(n=3, size=5)
    correct, seen, loss_sum = count_correct(model, data, torch.device("cpu"))
    with torch.no_grad():
        expected = sum(int((model(x).argmax(1) == y).sum()) for x, y in data)
    assert (correct, seen) == (expected, 15) and loss_sum > 0


def test_the_summed_loss_is_the_one_summed_from_zero_in_double():
    """Started from the first batch, the sum is bit for bit the one started from a float64
    zero: the same additions in the same order, and a -0.0 reads 0.0 as it did."""
    model = nn.Linear(3, 2)
    data = batches(n=4, size=5)
    expected = torch.zeros((), dtype=torch.float64)
    with torch.no_grad():
        for x, y in data:
            expected += F.cross_entropy(model(x), y, reduction="sum").double()
    assert count_correct(model, data, torch.device("cpu"))[2] == float(expected)
    negative_zero = count_correct(model, data, torch.device("cpu"),
                                  loss_fn=lambda *_, reduction: torch.tensor(-0.0))[2]
    assert math.copysign(1.0, negative_zero) == 1.0
    assert count_correct(model, [], torch.device("cpu")) == (0, 0, 0.0)


def test_seeding_for_the_cpu_leaves_the_cpu_generator_as_torch_manual_seed_does():
    torch.manual_seed(7)
    expected = torch.get_rng_state()
    torch.manual_seed(123)
    seed_generators(7, torch.device("cpu"))
    assert torch.equal(torch.get_rng_state(), expected)
    seed_generators(7, torch.device("meta"))             # any other device: every generator
    assert torch.equal(torch.get_rng_state(), expected)
