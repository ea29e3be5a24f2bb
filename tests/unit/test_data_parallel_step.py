"""Data-parallel train_epoch on a real one-rank torch.distributed group (gloo).

One rank is enough to check the step's machinery: one all-reduce per step, the failure
flag inside it, when the flag is read, and what a failed rank contributes. Several ranks
are tested under mpirun in tests/parallel.
"""
import socket

import pytest
import torch
import torch.distributed as dist
from torch import nn

from nord.errors import ConfigurationError, DistributedError
from nord.evaluators.distributed import _GradientAveraging
from nord.nn.training import NonFiniteLossError, make_optimizer, train_epoch

CPU = torch.device("cpu")


@pytest.fixture(scope="module", autouse=True)
def one_rank_group():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


@pytest.fixture
def all_reduces(monkeypatch):
    """Copies of every buffer all-reduced, in order."""
    seen = []
    real = dist.all_reduce

    def counting(tensor, *args, **kwargs):
        seen.append(tensor.detach().clone())
        return real(tensor, *args, **kwargs)

    monkeypatch.setattr(dist, "all_reduce", counting)
    return seen


def batches(n=4, size=8, seed=0, nan_at=None):
    generator = torch.Generator().manual_seed(seed)
    data = [(torch.randn(size, 3, generator=generator),
             torch.randint(0, 2, (size,), generator=generator)) for _ in range(n)]
    if nan_at is not None:
        data[nan_at - 1][0][0, 0] = float("nan")
    return data


def model_and_optimizer(seed=0):
    torch.manual_seed(seed)
    model = nn.Linear(3, 2)
    return model, make_optimizer("sgd", model.parameters(), 0.1, momentum=0.9)


class Reasons:
    """An ``agree`` that records the error it is given and raises like the evaluator's."""

    def __init__(self):
        self.errors = []

    def __call__(self, error):
        self.errors.append(error)
        raise RuntimeError(f"the group failed: {error}")


def test_alone_it_trains_exactly_like_local_training(all_reduces):
    local_model, local_optimizer = model_and_optimizer()
    model, optimizer = model_and_optimizer()
    data = batches()
    local_loss = train_epoch(local_model, data, local_optimizer, CPU)
    loss = train_epoch(model, data, _GradientAveraging(optimizer, 1), CPU, agree=Reasons())
    assert loss == pytest.approx(local_loss, rel=1e-6)
    for mine, theirs in zip(model.parameters(), local_model.parameters()):
        assert torch.equal(mine, theirs)


def test_one_all_reduce_per_step_carries_gradients_and_flag(all_reduces):
    model, optimizer = model_and_optimizer()
    train_epoch(model, batches(n=5), _GradientAveraging(optimizer, 1), CPU, agree=Reasons())
    n_parameters = sum(p.numel() for p in model.parameters())
    assert len(all_reduces) == 5
    assert all(buffer.numel() == n_parameters + 1 for buffer in all_reduces)
    assert all(buffer[-1] == 0 for buffer in all_reduces)


def test_a_nan_loss_fails_at_its_step_without_applying_it(all_reduces):
    model, optimizer = model_and_optimizer()
    reasons = Reasons()
    with pytest.raises(RuntimeError, match="the group failed"):
        train_epoch(model, batches(nan_at=2), _GradientAveraging(optimizer, 1), CPU,
                    agree=reasons)
    assert len(all_reduces) == 2 and all_reduces[-1][-1] == 1
    (error,) = reasons.errors
    assert isinstance(error, NonFiniteLossError) and "at step 2" in str(error)
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_with_check_every_the_flag_is_read_at_the_next_check(all_reduces):
    model, optimizer = model_and_optimizer()
    reasons = Reasons()
    with pytest.raises(RuntimeError, match="the group failed"):
        train_epoch(model, batches(n=8, nan_at=2), _GradientAveraging(optimizer, 1), CPU,
                    check_every=3, agree=reasons)
    assert len(all_reduces) == 3
    assert "in steps 1-3" in str(reasons.errors[0])


def test_a_failure_after_the_last_check_is_caught_at_the_end_of_the_epoch(all_reduces):
    model, optimizer = model_and_optimizer()
    reasons = Reasons()
    with pytest.raises(RuntimeError, match="the group failed"):
        train_epoch(model, batches(n=5, nan_at=5), _GradientAveraging(optimizer, 1), CPU,
                    check_every=4, agree=reasons)
    assert len(all_reduces) == 5 and "at step 5" in str(reasons.errors[0])


def test_a_failed_rank_keeps_contributing_zeros_and_the_flag_until_the_check(all_reduces):
    model, optimizer = model_and_optimizer()
    calls = []

    def fails_at_the_second_step(*_):
        calls.append(1)
        if len(calls) == 2:
            raise MemoryError("simulated out of memory")

    model.register_forward_hook(fails_at_the_second_step)
    reasons = Reasons()
    with pytest.raises(RuntimeError, match="the group failed"):
        train_epoch(model, batches(n=6), _GradientAveraging(optimizer, 1), CPU,
                    check_every=4, agree=reasons)
    assert len(calls) == 2, "a failed rank must not compute again"
    assert len(all_reduces) == 4
    for buffer in all_reduces[1:]:
        assert torch.count_nonzero(buffer[:-1]) == 0 and buffer[-1] == 1
    (error,) = reasons.errors
    assert isinstance(error, MemoryError)


def test_an_agreement_that_does_not_raise_is_an_error():
    model, optimizer = model_and_optimizer()
    with pytest.raises(DistributedError, match="no rank gave a reason"):
        train_epoch(model, batches(nan_at=1), _GradientAveraging(optimizer, 1), CPU,
                    agree=lambda error: None)


def test_a_plain_optimizer_cannot_train_data_parallel():
    model, optimizer = model_and_optimizer()
    with pytest.raises(ConfigurationError, match="DistributedEvaluator prepares one"):
        train_epoch(model, batches(), optimizer, CPU, agree=Reasons())


def test_gradients_replaced_between_steps_are_taken_back_into_the_buffer(all_reduces):
    model, optimizer = model_and_optimizer()
    averaging = _GradientAveraging(optimizer, 1)
    for p in model.parameters():
        p.grad = torch.full_like(p, 2.0)
    averaging.reduce()
    assert torch.all(all_reduces[-1][:-1] == 2.0)
    optimizer.zero_grad()  # the plain optimizer's: sets the gradients to None
    averaging.reduce()
    assert torch.count_nonzero(all_reduces[-1]) == 0
