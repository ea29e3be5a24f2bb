"""DistributedEvaluator in one process: argument checks, local rank, and plain local behaviour."""
from types import SimpleNamespace

import pytest

from nord import NeuralDescriptor
from nord.data import Digits
from nord.errors import ConfigurationError
from nord.evaluators.distributed import DistributedEvaluator
from nord.evaluators.local import LocalEvaluator


def environment(local_rank=0, group=True):
    return SimpleNamespace(rank=0, local_rank=local_rank,
                           group=SimpleNamespace(comm=None) if group else None)


def test_the_gpu_index_follows_the_environments_local_rank():
    evaluator = DistributedEvaluator(environment(local_rank=3), device="cpu")
    assert evaluator._local_rank() == 3


def test_a_dedicated_root_cannot_evaluate():
    with pytest.raises(ConfigurationError, match="dedicated root"):
        DistributedEvaluator(environment(group=False))


def test_unknown_backend_is_refused():
    with pytest.raises(ConfigurationError, match="backend"):
        DistributedEvaluator(backend="nccl-please")


def test_alone_it_gives_the_local_evaluators_result():
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", {"out_channels": 4, "kernel_size": 3})
    curator = Digits(seed=0)
    alone = DistributedEvaluator(curator=curator, epochs=1, seed=2).descriptor_evaluate(d)
    local = LocalEvaluator(curator=curator, epochs=1, seed=2).descriptor_evaluate(d)
    assert (alone.accuracy, alone.loss) == (local.accuracy, local.loss)
