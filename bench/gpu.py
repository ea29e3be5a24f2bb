"""Candidates per GPU: nord's evaluator against a hand-written loop, candidates per hour on 1
and N worker processes (time-sliced, and under CUDA MPS where it is available), and the
NORD paper's experiment 1 on one device against the paper's 162 minutes on a GT730, and one
epoch of a NAS-Bench-201 network at fp32 and at bf16.

    python bench/gpu.py [--workers 4] [--device auto] [--quick] [--parts recipe-epoch,oneshot-epoch]

Every figure is a ratio or a rate measured in this run, on this machine: on the CPU the
script is a smoke test of the measurement (``--quick``), and its figures say nothing about a
GPU. Parts:

1. ``evaluator``: LocalEvaluator against a plain PyTorch loop (same network, data on the
   device, batch, seed, epochs), alternating, median of the per-pair ratios (target <= 1.03).
2. ``per-hour``: the same candidate trained over and over by a ProcessExecutor with 1 worker,
   N workers time-sliced (``mps='off'``), and N under MPS (``mps='on'``, only where MPS is
   installed or running), for the paper's 2-convolution networks and NAS-Bench-201-sized
   networks (``network_to_descriptor``: 5 cells a stage, 16 channels; 1 a stage with
   ``--quick``). Candidates per hour, and the speed-up over 1 worker.
3. ``experiment1``: pygmo's GA, population 10, 10 generations, 2-layer convolutional nets,
   CIFAR-10-shaped data written in the official file format (50,000 + 10,000 images; 500 +
   100 and population 4, 1 generation with ``--quick``), with ``--workers`` processes.
4. ``recipe-epoch`` (only when named in ``--parts``): one training epoch of the benchmark's
   network (C 16, N 5) on 50,000 CIFAR-shaped images by the ``nasbench201`` recipe (batch
   256, crop and flip), at fp32 and at bf16, and the speed-up; printed as
   ``nb201_epoch_fp32_s: ...``, ``nb201_epoch_bf16_s: ...`` and ``bf16_speedup: ...`` lines.
   ``--quick``: C 4, N 1, 64 images. Where bf16 is refused (a CPU without AMX, a GPU before
   Ampere) the line says why and there is no speed-up.
5. ``oneshot-epoch`` (only when named in ``--parts``): a search step of each weight-sharing
   method on the supernet at the benchmark's sizes (C 16, N 5, batches of 64 images 3x32x32 for
   the weights and as many for the architecture, float32), the median of ``--repeats`` steps
   after two to warm up, an epoch of CIFAR-10's halved training set (391 steps) reckoned from
   it, and the peak memory the steps allocated on a GPU; printed as ``oneshot_<method>_step_ms``,
   ``oneshot_<method>_epoch_s`` and ``oneshot_<method>_peak_gib`` lines. ENAS's controller
   (trained at an epoch's end) is not in the step. ``--quick``: C 4, N 1, batches of 8.
"""
import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nord import NeuralDescriptor  # noqa: E402
from nord.benchmarks.nasbench201.network import network_to_descriptor  # noqa: E402
from nord.data import TensorCurator  # noqa: E402
from nord.evaluators.base import Leg  # noqa: E402
from nord.evaluators.local import LocalEvaluator  # noqa: E402
from nord.nn.precision import precision_refusal  # noqa: E402
from nord.nn.recipe import get_recipe  # noqa: E402
from nord.parallel.mps import control_program, daemon_running  # noqa: E402
from nord.parallel.placement import worker_devices  # noqa: E402
from nord.search.executors import ProcessExecutor, Task  # noqa: E402

PAPER_MINUTES = 162
NB201_CELL = ("|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|"
              "+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|")   # 5 of its 6 edges convolve


def two_conv(channels: int = 3) -> NeuralDescriptor:
    """A network of the paper's space: two convolutions and a pooling."""
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", [channels, 32, 3], "conv1")
    d.add_layer_sequential("relu", [], "relu1")
    d.add_layer_sequential("conv2d", [32, 64, 3], "conv2")
    d.add_layer_sequential("relu", [], "relu2")
    d.add_layer_sequential("max_pool2d", [2], "pool")
    return d


def network(kind: str, quick: bool) -> NeuralDescriptor:
    if kind == "2-conv":
        return two_conv()
    return network_to_descriptor(NB201_CELL, cells_per_stage=1 if quick else 5)


def cifar_shaped(n_train: int, n_test: int, seed: int = 0) -> TensorCurator:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_train + n_test, 3, 32, 32)).astype("float32")
    y = rng.integers(0, 10, n_train + n_test)
    return TensorCurator(x[:n_train], y[:n_train], x[n_train:], y[n_train:], valid_fraction=0)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# --- 1. the evaluator against a hand-written loop -------------------------------------------
def plain_run(x, y, xt, yt, epochs, batch_size, seed, device):
    """What a researcher writes by hand: tensors on the device, randperm, the usual loop."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Conv2d(3, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64 * 14 * 14, 10)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        model.train()
        order = torch.randperm(len(x), generator=generator).to(device)
        for start in range(0, len(x), batch_size):
            index = order[start:start + batch_size]
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x[index]), y[index]).backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        correct = sum(int((model(xt[i:i + 1024]).argmax(1) == yt[i:i + 1024]).sum())
                      for i in range(0, len(xt), 1024))
    return correct / len(xt)


def evaluator_vs_loop(device: torch.device, quick: bool, repeats: int) -> float:
    curator = cifar_shaped(512 if quick else 10_000, 256 if quick else 2_000)
    (x, y), = list(curator.train_loader(batch_size=10 ** 9, shuffle=False))
    (xt, yt), = list(curator.test_loader(batch_size=10 ** 9))
    x, y, xt, yt = (t.to(device) for t in (x, y, xt, yt))
    epochs, batch = (1, 64) if quick else (3, 128)
    evaluator = LocalEvaluator(curator=curator, epochs=epochs, batch_size=batch, device=device)
    descriptor = two_conv()
    evaluator.descriptor_evaluate(descriptor)                 # warm-up, both sides
    plain_run(x, y, xt, yt, 1, batch, 0, device)
    ratios = []
    for _ in range(repeats):
        sync(device)
        started = time.perf_counter()
        result = evaluator.descriptor_evaluate(descriptor)
        sync(device)
        ours = time.perf_counter() - started
        started = time.perf_counter()
        plain_run(x, y, xt, yt, epochs, batch, 0, device)
        sync(device)
        plain = time.perf_counter() - started
        assert result.ok, result.error
        ratios.append(ours / plain)
    ratio = statistics.median(ratios)
    print(f"evaluator vs hand-written loop on {device}: ratio {ratio:.3f} (min {min(ratios):.3f},"
          f" max {max(ratios):.3f}; target <= 1.03)")
    return ratio


# --- 2. candidates per hour on worker processes ---------------------------------------------
def bench_evaluator(device: str, n_train: int, epochs: int, batch_size: int):
    """Each worker's evaluator (module level: it is built in the worker)."""
    return LocalEvaluator(curator=cifar_shaped(n_train, 256), epochs=epochs,
                          batch_size=batch_size, device=device)


def per_hour(kind: str, workers: int, mps: str, device: str, quick: bool):
    """(candidates per hour, how the device was shared) for ``workers`` processes."""
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    settings = dict(n_train=256, epochs=1, batch_size=64) if quick else dict(
        n_train=5_000, epochs=1, batch_size=128)
    executor = ProcessExecutor(partial(bench_evaluator, **settings), workers=workers,
                               devices=worker_devices(workers, device, gpus), mps=mps,
                               threads=1 if device == "cpu" else None)
    descriptor = network(kind, quick)
    total = workers * (2 if quick else 6)
    executor.start()
    try:
        for warm in range(workers):   # first-call costs (cuDNN, allocator) out of the timing
            executor.submit(Task(-1 - warm, (), None, descriptor=descriptor))
        for _ in range(workers):
            executor.wait()
        started, submitted, done = time.perf_counter(), 0, 0
        while done < total:
            while submitted < total and executor.free_slots > 0:
                executor.submit(Task(submitted, (), submitted, descriptor=descriptor))
                submitted += 1
            completion = executor.wait()
            assert completion.result.ok, completion.result.error
            done += 1
        elapsed = time.perf_counter() - started
    finally:
        executor.close()
    return total / elapsed * 3600, executor.sharing


def candidates_per_hour(workers: int, device: str, quick: bool) -> None:
    gpu = device != "cpu" and torch.cuda.is_available()
    mps_available = gpu and (control_program() is not None or daemon_running())
    for kind in ("2-conv", "nb201"):
        one, _ = per_hour(kind, 1, "off", device, quick)
        line = f"{kind:7s} candidates/hour: 1 worker {one:9.0f}"
        if workers > 1:
            sliced, how = per_hour(kind, workers, "off", device, quick)
            line += f" | {workers} workers ({how}) {sliced:9.0f} ({sliced / one:.2f}x)"
            if mps_available:
                shared, how = per_hour(kind, workers, "on", device, quick)
                line += f" | {workers} workers ({how}) {shared:9.0f} ({shared / one:.2f}x)"
            elif gpu:
                line += " | MPS not available here"
        print(line, flush=True)


# --- 3. the paper's experiment 1 ------------------------------------------------------------
def experiment1(workers: int, device: str, quick: bool, epochs: int) -> None:
    from nord.app.runner import run
    from nord.app.settings import RunConfig
    from nord.legacy.smoke import write_cifar10
    try:
        import pygmo  # noqa: F401
        algorithm, params = "pygmo", {"generations": 1 if quick else 10, "cr": 0.9, "m": 0.2}
    except ImportError:
        algorithm, params = "genetic", {"crossover_probability": 0.9,
                                        "mutation_probability": 0.2}
        print("pygmo is not installed: nord's own genetic algorithm stands in")
    population, generations = (4, 1) if quick else (10, 10)
    with tempfile.TemporaryDirectory() as folder:
        files = write_cifar10(folder, n_train=500 if quick else 50_000,
                              n_test=100 if quick else 10_000)
        sums = {path.name: hashlib.md5(path.read_bytes()).hexdigest()
                for path in sorted(files.iterdir())}
        config = RunConfig(algorithm=algorithm, algorithm_params={"population_size": population,
                                                                   **params},
                           space="conv", space_params={"layers": 2}, dataset="cifar10",
                           data_root=folder, data_checksums=sums, epochs=epochs,
                           budget=population * (generations + 1), device=device,
                           workers=workers if workers > 1 else None,
                           journal=str(Path(folder) / "experiment1.db"))
        started = time.perf_counter()
        summary = run(config, progress=False)
        minutes = (time.perf_counter() - started) / 60
    print(f"experiment 1 ({algorithm}, population {population}, {generations} generations, "
          f"{summary.evaluations} evaluations, {epochs} epoch(s), {workers} worker(s) on "
          f"{device}): {minutes:.2f} min" + ("" if quick else
                                            f"; the paper: {PAPER_MINUTES} min on a GT730"))


# --- 4. one epoch of a NAS-Bench-201 network, fp32 against bf16 -----------------------------
NB201_EPOCH = {"n_train": 50_000, "channels": 16, "cells_per_stage": 5}
"""The benchmark's network (C 16, N 5) and CIFAR-10's training set."""
NB201_EPOCH_QUICK = {"n_train": 64, "channels": 4, "cells_per_stage": 1}
"""``--quick``: a smoke test of the measurement that takes a CPU a second or two."""


def epoch_seconds(curator: TensorCurator, precision: str, device: torch.device, channels: int,
                  cells_per_stage: int) -> float:
    """Seconds of one training epoch of the network around ``NB201_CELL`` by the
    ``nasbench201`` recipe at ``precision``: the second of two, since the first pays for CUDA's
    and cuDNN's first calls. The data is on the device; the curator has no validation split,
    so the epoch is training alone."""
    recipe = get_recipe("nasbench201").replace(precision=precision)
    evaluator = LocalEvaluator(curator=curator, epochs=2, device=device, recipe=recipe)
    epochs = []
    result = evaluator.descriptor_evaluate(
        network_to_descriptor(NB201_CELL, channels, cells_per_stage), Leg(report=epochs.append))
    assert result.ok, result.error
    return epochs[-1].seconds


def recipe_epoch(device: torch.device, size: dict = NB201_EPOCH) -> dict:
    """One epoch at fp32 and at bf16 (where ``device`` takes it) of a network and data of
    ``size`` (:data:`NB201_EPOCH`'s keys): the figures printed, as
    ``{'nb201_epoch_fp32_s': ..., 'nb201_epoch_bf16_s': ..., 'bf16_speedup': ...}``."""
    curator = cifar_shaped(size["n_train"], 64)   # tested after the timed epochs: kept small
    tf32 = device.type == "cuda" and torch.backends.cudnn.allow_tf32
    print(f"one epoch of a NAS-Bench-201 network (C {size['channels']}, N "
          f"{size['cells_per_stage']}), recipe nasbench201 (batch "
          f"{get_recipe('nasbench201').batch_size}), {size['n_train']} images 3x32x32 on "
          f"{device}{'; fp32 convolutions run in TF32 (cudnn.allow_tf32)' if tf32 else ''}")
    figures = {}
    for precision in ("fp32", "bf16"):
        refusal = precision_refusal(precision, device)
        if refusal is not None:
            print(f"nb201_epoch_{precision}_s: not measured, refused: {refusal}")
            continue
        seconds = epoch_seconds(curator, precision, device, size["channels"],
                                size["cells_per_stage"])
        figures[f"nb201_epoch_{precision}_s"] = seconds
        print(f"nb201_epoch_{precision}_s: {seconds:.3f}", flush=True)
    if len(figures) == 2:
        figures["bf16_speedup"] = figures["nb201_epoch_fp32_s"] / figures["nb201_epoch_bf16_s"]
        print(f"bf16_speedup: {figures['bf16_speedup']:.3f}")
    return figures


# --- 5. a weight-sharing search's step and epoch at the benchmark's sizes ------------------------
ONESHOT_STEP = {"channels": 16, "cells_per_stage": 5, "batch": 64, "steps_per_epoch": 391}
"""The benchmark's supernet and batch; 25,000 images (half of CIFAR-10's training set) make
391 steps of 64."""
ONESHOT_STEP_QUICK = {"channels": 4, "cells_per_stage": 1, "batch": 8, "steps_per_epoch": 391}


def oneshot_epoch(device: torch.device, size: dict = ONESHOT_STEP, repeats: int = 5) -> dict:
    """Each method's step time, epoch time reckoned from it, and peak memory on a GPU: the
    figures printed, as ``{'oneshot_gdas_step_ms': ..., ...}``."""
    from nord.benchmarks.nasbench201.supernet import Supernet
    from nord.oneshot.methods import make_method
    from nord.oneshot.registry import METHODS
    print(f"a search step of each weight-sharing method: supernet C {size['channels']}, N "
          f"{size['cells_per_stage']}, batches of {size['batch']} images 3x32x32, float32, on "
          f"{device}; an epoch is {size['steps_per_epoch']} steps")
    figures = {}
    generator = torch.Generator().manual_seed(0)
    batches = [tuple(t.to(device) for t in (
        torch.randn(size["batch"], 3, 32, 32, generator=generator),
        torch.randint(0, 10, (size["batch"],), generator=generator))) for _ in range(2)]
    for name in METHODS.names():
        torch.manual_seed(0)
        supernet = Supernet(size["channels"], size["cells_per_stage"], 10).to(device)
        optimizer = torch.optim.SGD(supernet.parameters(), lr=0.025, momentum=0.9,
                                    nesterov=True, weight_decay=5e-4)
        method = make_method(name, supernet, optimizer, torch.Generator().manual_seed(0))
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        times = []
        for number in range(2 + repeats):
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            started = time.perf_counter()
            method.step(*batches)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            if number >= 2:
                times.append(time.perf_counter() - started)
        step = statistics.median(times)
        figures[f"oneshot_{name}_step_ms"] = 1e3 * step
        figures[f"oneshot_{name}_epoch_s"] = step * size["steps_per_epoch"]
        print(f"oneshot_{name}_step_ms: {1e3 * step:.1f}")
        print(f"oneshot_{name}_epoch_s: {step * size['steps_per_epoch']:.1f}")
        if device.type == "cuda":
            peak = torch.cuda.max_memory_allocated(device) / 2 ** 30
            figures[f"oneshot_{name}_peak_gib"] = peak
            print(f"oneshot_{name}_peak_gib: {peak:.2f}", flush=True)
        del method, optimizer, supernet
    return figures


def main(args) -> int:
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"bench/gpu.py on {torch.cuda.get_device_name(0) if device != 'cpu' else 'the CPU'}"
          f"{' (--quick: a smoke test, no figure for a GPU)' if device == 'cpu' else ''}")
    if "evaluator" in args.parts:
        evaluator_vs_loop(torch.device(device if device != "cuda" else "cuda:0"), args.quick,
                          args.repeats)
    if "per-hour" in args.parts:
        candidates_per_hour(args.workers, device, args.quick)
    if "experiment1" in args.parts:
        experiment1(args.workers, device, args.quick, args.epochs)
    if "recipe-epoch" in args.parts:
        recipe_epoch(torch.device(device if device != "cuda" else "cuda:0"),
                     NB201_EPOCH_QUICK if args.quick else NB201_EPOCH)
    if "oneshot-epoch" in args.parts:
        oneshot_epoch(torch.device(device if device != "cuda" else "cuda:0"),
                      ONESHOT_STEP_QUICK if args.quick else ONESHOT_STEP, args.repeats)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=1, help="experiment 1's epochs")
    parser.add_argument("--parts", default="evaluator,per-hour,experiment1",
                        help="comma-separated: evaluator, per-hour, experiment1, recipe-epoch, "
                             "oneshot-epoch")
    arguments = parser.parse_args()
    arguments.parts = arguments.parts.split(",")
    sys.exit(main(arguments))
