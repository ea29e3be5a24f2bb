"""Which GPU each rank takes (CUDA_VISIBLE_DEVICES honoured), the NCCL placements refused
before any candidate, and what backend='auto' picks on a GPU: pure rules, tested without one."""
import pytest

from nord.errors import ConfigurationError
from nord.evaluators.distributed import auto_backend
from nord.parallel.placement import (Placement, gpu_for_rank, physical_gpu, shared_gpu_refusal,
                                     shared_gpus, visible_gpus)


@pytest.mark.parametrize("local_rank, count, index", [
    (0, 1, 0), (1, 1, 0), (3, 1, 0), (0, 2, 0), (1, 2, 1), (2, 2, 0), (5, 4, 1), (7, 8, 7),
])
def test_each_rank_on_a_host_takes_local_rank_modulo_the_gpus_it_sees(local_rank, count, index):
    assert gpu_for_rank(local_rank, count) == index


def test_no_visible_gpu_is_a_clear_error():
    with pytest.raises(ConfigurationError, match="CUDA_VISIBLE_DEVICES.*--device cpu"):
        gpu_for_rank(0, 0)


@pytest.mark.parametrize("value, exposed", [
    (None, None), ("", ()), ("-1", ()), ("3", ("3",)), ("4,5", ("4", "5")),
    (" 2 , 0 ", ("2", "0")), ("2,-1,3", ("2",)), ("1,,2", ("1",)),
    ("GPU-8c2f0a3e,GPU-11aa", ("GPU-8c2f0a3e", "GPU-11aa")),
])
def test_cuda_visible_devices_is_read_as_cuda_reads_it(value, exposed):
    environ = {} if value is None else {"CUDA_VISIBLE_DEVICES": value}
    assert visible_gpus(environ) == exposed


def test_the_physical_gpu_behind_an_index_follows_cuda_visible_devices():
    assert physical_gpu(0, None) == "0" and physical_gpu(1, None) == "1"
    assert physical_gpu(0, ("4", "5")) == "4" and physical_gpu(1, ("4", "5")) == "5"


def test_ranks_on_one_gpu_are_a_conflict_only_within_a_group_and_a_host():
    placements = [Placement(0, "h1", "0", 0), Placement(1, "h1", "0", 0),
                  Placement(2, "h2", "0", 0),                     # another host: fine
                  Placement(3, "h1", "0", 1), Placement(4, "h1", "1", 1),   # group 1: fine
                  Placement(5, "h1", None, None)]                 # dispatches only
    assert shared_gpus(placements) == [("h1", "0", 0, [0, 1])]


def test_different_cuda_visible_devices_put_two_ranks_on_different_gpus():
    # both train on cuda:0, of GPU 4 and GPU 5: no conflict
    placements = [Placement(0, "h1", physical_gpu(0, ("4",)), 0),
                  Placement(1, "h1", physical_gpu(0, ("5",)), 0)]
    assert shared_gpu_refusal(placements, "torch") is None


def test_two_ranks_of_a_group_on_one_gpu_are_refused_naming_host_ranks_gpu_and_fixes():
    message = shared_gpu_refusal([Placement(0, "node7", "0", 0, 1),
                                  Placement(1, "node7", "0", 0, 1)], "torch")
    assert "on host node7, ranks 0, 1 of group 0 would share GPU 0" in message
    assert "NCCL cannot put two ranks of one group on the same GPU" in message
    assert "at most 1 rank(s) of a group per host" in message
    assert "--backend horovod with a Horovod built without NCCL" in message
    assert "--device cpu" in message and "Nothing was trained" in message


def test_ranks_that_train_without_nccl_are_never_refused():
    assert shared_gpu_refusal([Placement(0, "h", None, 0), Placement(1, "h", None, 0)],
                              "torch") is None


@pytest.mark.parametrize("installed, nccl, on_gpu, backend", [
    (False, False, False, "torch"), (False, False, True, "torch"),
    (True, False, False, "horovod"), (True, True, False, "horovod"),
    (True, False, True, "torch"),          # a GPU and a Horovod without NCCL: torch's NCCL
    (True, True, True, "horovod"),
])
def test_auto_backend_is_horovod_where_it_can_use_the_gpu_else_torch(installed, nccl, on_gpu,
                                                                      backend):
    assert auto_backend(installed, nccl, on_gpu) == backend
