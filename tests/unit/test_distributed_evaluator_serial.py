"""DistributedEvaluator in one process: argument checks, local rank, and plain local behaviour."""
from types import SimpleNamespace

import pytest

from nord import NeuralDescriptor
from nord.data import Digits
from nord.errors import ConfigurationError
from nord.evaluators.distributed import DistributedEvaluator
from nord.evaluators.local import LocalEvaluator
from nord.parallel.launcher import cores_are_shared, mpi_yields_when_idle


def environment(local_rank=0, group=True):
    return SimpleNamespace(rank=0, local_rank=local_rank,
                           group=SimpleNamespace(comm=None) if group else None)


def test_the_gpu_index_follows_the_environments_local_rank():
    evaluator = DistributedEvaluator(environment(local_rank=3), device="cpu")
    assert evaluator.group.local_rank == 3


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


@pytest.mark.parametrize("ranks, threads, mine, cores, shared", [
    (2, 1, 2, 2, True),     # two unbound ranks and their Horovod threads on 2 cores
    (2, 1, 1, 2, True),     # bound to one core each: training and Horovod's thread share it
    (1, 1, 2, 2, False),    # one rank alone
    (8, 4, 64, 64, False),  # a large node
    (8, 4, 4, 64, True),    # bound to 4 cores for 4 threads and Horovod's
])
def test_cores_are_shared_counts_horovods_thread(ranks, threads, mine, cores, shared):
    assert cores_are_shared(ranks, threads, mine, cores) is shared


def test_mpi_yields_when_told_or_oversubscribed():
    assert not mpi_yields_when_idle({})
    assert mpi_yields_when_idle({"OMPI_MCA_mpi_yield_when_idle": "1"})
    assert not mpi_yields_when_idle({"OMPI_MCA_mpi_yield_when_idle": "0"})
    assert mpi_yields_when_idle({"OMPI_MCA_mpi_oversubscribe": "1"})
