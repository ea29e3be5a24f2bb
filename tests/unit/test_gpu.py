"""nord on CUDA: checkpoint resume, out-of-memory, placement, workers sharing a GPU, NCCL.

Every test here needs a GPU (marker ``gpu``; skipped, saying so, where torch sees none). On a
GPU machine: ``python3 -m pytest -m gpu tests/unit/test_gpu.py`` (README, "On a GPU").
Checks that change process-wide CUDA state (deterministic algorithms, a memory fraction, NCCL)
run in a fresh Python process each.
"""
import os
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from nord import NeuralDescriptor
from nord.data import Digits
from nord.evaluators.local import LocalEvaluator
from nord.journal import Journal
from nord.nn.training import resolve_device
from tests.mpirun import REPO, requires_mpirun, run_mpi

pytestmark = pytest.mark.gpu

ENV = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")


def python(code: str, timeout: float = 300, **env) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh Python process from the checkout; fails the test on an error."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, text=True,
                          capture_output=True, timeout=timeout, env=dict(ENV, **env))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return done


def small_net(width=8, dropout=True):
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", {"out_channels": width, "kernel_size": 3})
    d.add_layer_sequential("relu")
    if dropout:
        d.add_layer_sequential("dropout", {"p": 0.3})
    return d


RESUME = """
    import torch
    from nord import NeuralDescriptor
    from nord.data import Digits
    from nord.evaluators.local import LocalEvaluator
    from nord.search.executors import Task
    torch.use_deterministic_algorithms({deterministic})
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", {{"out_channels": 8, "kernel_size": 3}})
    d.add_layer_sequential("relu")
    d.add_layer_sequential("dropout", {{"p": 0.3}})
    kwargs = dict(curator=Digits(seed=0), seed=3, keep_model=True, device="cuda",
                  optimizer="{optimizer}", optimizer_kwargs={kwargs})
    def task(**leg):
        return Task(0, (0,), d.hash, descriptor=d, **leg)
    whole = LocalEvaluator(epochs=4, **kwargs)
    straight = whole.evaluate_task(task())
    LocalEvaluator(epochs=4, **kwargs).evaluate_task(task(epochs=2, checkpoint="{path}"))
    second = LocalEvaluator(epochs=4, **kwargs)
    resumed = second.evaluate_task(task(epochs=4, resume_from="{path}"))
    assert straight.ok and resumed.ok, (straight.error, resumed.error)
    assert "checkpoint" not in resumed.metrics, resumed.metrics
    assert resumed.metrics["epochs_resumed"] == 2
    state = torch.load("{path}", weights_only=True)
    assert state["cuda_rng"].dtype == torch.uint8 and state["cuda_rng"].device.type == "cpu"
    differences = [float((a.float() - b.float()).abs().max())
                   for a, b in zip(whole.model.state_dict().values(),
                                   second.model.state_dict().values())]
    print("largest weight difference", max(differences),
          "accuracies", straight.accuracy, resumed.accuracy)
"""


@pytest.mark.processes
@pytest.mark.parametrize("optimizer, kwargs", [("adam", {}), ("sgd", {"momentum": 0.9})])
def test_resumed_training_on_cuda_equals_uninterrupted_training_bit_for_bit(tmp_path, optimizer,
                                                                            kwargs):
    # deterministic algorithms, and the cuBLAS workspace they need, as docs/evaluators.md says
    done = python(RESUME.format(deterministic=True, optimizer=optimizer, kwargs=kwargs,
                                path=tmp_path / "c.pt"),
                  CUBLAS_WORKSPACE_CONFIG=":4096:8")
    assert "largest weight difference 0.0 " in done.stdout, done.stdout


@pytest.mark.processes
def test_resumed_training_on_cuda_without_determinism_stays_within_the_tolerance(tmp_path):
    done = python(RESUME.format(deterministic=False, optimizer="adam", kwargs={},
                                path=tmp_path / "c.pt"))
    difference = float(done.stdout.split("largest weight difference")[1].split()[0])
    print(done.stdout)   # the figure docs/evaluators.md quotes
    assert difference < 1e-3, done.stdout


def test_a_network_too_large_for_the_gpu_is_refused_before_allocating():
    digits = Digits(seed=0)
    evaluator = LocalEvaluator(curator=digits, epochs=1, device="cuda")
    assert evaluator.descriptor_evaluate(small_net()).ok
    huge = NeuralDescriptor()
    huge.add_layer_sequential("conv2d", {"out_channels": 10, "kernel_size": 1})
    huge.add_layer_sequential("linear", {"out_features": 10**8})
    device = resolve_device("cuda")
    before, started = torch.cuda.memory_allocated(device), time.perf_counter()
    result = evaluator.descriptor_evaluate(huge)
    assert time.perf_counter() - started < 1.0
    assert result.status == "failed" and "CandidateTooLargeError" in result.error
    assert f"free memory of {device}" in result.error
    assert torch.cuda.memory_allocated(device) == before
    assert evaluator.descriptor_evaluate(small_net()).ok


@pytest.mark.processes
def test_cuda_out_of_memory_in_training_is_a_failed_record_and_the_memory_is_released():
    # the estimate sees the whole GPU free; a memory fraction makes the allocator refuse
    # what the estimate let through, as a fragmented or shared GPU would
    python("""
        import torch
        from nord import NeuralDescriptor
        from nord.data import Digits
        from nord.evaluators.local import LocalEvaluator
        torch.cuda.set_per_process_memory_fraction(0.02)      # ~1.6 GB of an 80 GB GPU
        limit = 0.02 * torch.cuda.get_device_properties(0).total_memory
        wide = NeuralDescriptor()
        wide.add_layer_sequential("conv2d", {"out_channels": 10, "kernel_size": 1})
        # its weights fit (0.4 of the limit) but not with their gradients and Adam's state:
        # the allocation fails in the middle of the first training step
        wide.add_layer_sequential("linear", {"out_features": int(0.4 * limit / (640 * 4))})
        evaluator = LocalEvaluator(curator=Digits(seed=0), epochs=1, device="cuda")
        small = NeuralDescriptor()
        small.add_layer_sequential("conv2d", {"out_channels": 8, "kernel_size": 3})
        assert evaluator.descriptor_evaluate(small).ok
        baseline = torch.cuda.memory_allocated()
        failed = evaluator.descriptor_evaluate(wide)
        assert failed.status == "failed" and "OutOfMemoryError" in failed.error, failed.error
        assert failed.n_params == 0 and failed.train_time > 0
        assert torch.cuda.memory_allocated() <= baseline + 2**20, (
            torch.cuda.memory_allocated(), baseline)
        assert evaluator.descriptor_evaluate(small).ok      # the next candidate trains
    """)


@pytest.mark.processes
def test_each_rank_takes_its_gpu_and_cuda_visible_devices_is_honoured():
    count = torch.cuda.device_count()
    for local_rank in range(2 * count + 1):
        assert resolve_device("cuda", local_rank) == torch.device("cuda", local_rank % count)
    last = str(count - 1)
    done = python("""
        import torch
        from nord.evaluators.distributed import rank_placement
        from nord.nn.training import resolve_device
        device = resolve_device("cuda", 5)
        assert torch.cuda.device_count() == 1 and device == torch.device("cuda", 0)
        print("physical", rank_placement(0, "torch", device, 0).gpu)
    """, CUDA_VISIBLE_DEVICES=last)
    assert f"physical {last}" in done.stdout


@pytest.mark.processes
def test_one_rank_trains_data_parallel_through_nccl():
    python("""
        import math, socket
        import torch, torch.distributed as dist
        from nord import NeuralDescriptor
        from nord.data import Digits
        from nord.evaluators.distributed import _GradientAveraging
        from nord.nn.network import NeuralNet
        from nord.nn.training import make_optimizer, train_epoch
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        device = torch.device("cuda", 0)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0,
                                world_size=1)
        d = NeuralDescriptor()
        d.add_layer_sequential("conv2d", {"out_channels": 8, "kernel_size": 3})
        digits = Digits(seed=0)
        with device:
            model = NeuralNet(d, digits.input_shape, digits.num_classes)
        step = _GradientAveraging(make_optimizer("adam", model.parameters(), 1e-3), 1)
        def agree(error):
            if error is not None:
                raise error
        loss = train_epoch(model, digits.train_loader(batch_size=64, device=device), step,
                           device, agree=agree)
        assert math.isfinite(loss), loss
        del model, step
        dist.destroy_process_group()
    """)


@pytest.mark.processes
def test_asha_on_cuda_resumes_every_promotion_from_its_checkpoint(tmp_path):
    journal = tmp_path / "asha.db"
    python(f"""
        from nord.app.runner import run
        from nord.app.settings import RunConfig
        summary = run(RunConfig(algorithm="random", scheduler="asha", min_epochs=1,
                                max_epochs=9, eta=3, mode="async", budget=12, device="cuda",
                                journal="{journal}"), progress=False)
        assert summary.unusable_checkpoints == 0, summary
    """, timeout=500)
    with Journal(journal) as record:
        assert record.unusable_checkpoints() == 0
        promoted = [leg for leg in record.legs() if leg["start_epochs"] > 0]
    assert promoted and all(leg["result"]["metrics"]["epochs_resumed"] == leg["start_epochs"]
                            for leg in promoted if leg["status"] == "ok")


@requires_mpirun
@pytest.mark.mpi
def test_workers_share_one_gpu_and_the_dispatching_rank_opens_no_cuda_context(tmp_path):
    journal = tmp_path / "shared.db"
    run = run_mpi(["-c", textwrap.dedent(f"""
        import torch
        from nord.app.runner import run
        from nord.app.settings import RunConfig
        from nord.parallel import launcher_rank
        run(RunConfig(algorithm="random", budget=6, epochs=1, device="cuda", mode="async",
                      journal="{journal}"), progress=False)
        print(f"rank {{launcher_rank()}} CUDA initialised: {{torch.cuda.is_initialized()}}")
    """)], np=3, timeout=300)
    assert run.returncode == 0, run.output[-5000:]
    assert "rank 0 CUDA initialised: False" in run.output, run.output[-3000:]
    assert "rank 1 CUDA initialised: True" in run.output
    with Journal(journal) as record:
        rows = record.evaluations()
    assert len(rows) == 6 and all(row["status"] == "ok" for row in rows), rows
    assert {row["worker_rank"] for row in rows} == {1, 2}       # both workers trained


@requires_mpirun
@pytest.mark.mpi
def test_two_ranks_of_a_group_on_one_gpu_are_refused_before_any_candidate(tmp_path):
    if torch.cuda.device_count() > 1:
        pytest.skip("with two GPUs the two ranks take one each (tested on a one-GPU host)")
    journal = tmp_path / "refused.db"
    run = run_mpi(["-m", "nord", "run", "--evaluation", "data-parallel", "--backend", "torch",
                   "--device", "cuda", "--budget", "4", "--journal", journal], np=2,
                  timeout=300)
    assert run.returncode != 0
    assert "ranks 0, 1 of group 0 would share GPU 0" in run.output, run.output[-3000:]
    assert "--device cpu" in run.output and "Nothing was trained" in run.output
    assert not journal.exists()
