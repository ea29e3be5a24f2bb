"""Data-parallel training time per epoch at 1 and 2 ranks with the same total thread count.

    python bench/distributed.py [--repeats 3] [--backend horovod|torch] [--samples 4096]

The launcher starts ``mpirun -np 1`` with 2 torch threads and ``mpirun -np 2`` with 1
thread per rank, alternately, ``--repeats`` times; each job trains the same
compute-bound network on the same CIFAR-sized data through DistributedEvaluator (per-rank
batch 64, so both jobs see every sample once per epoch), and measures the communication
cost of one step: broadcasting the parameters and all-reducing a gradient-sized buffer.
Target: the 2-rank epoch takes at most 0.65 of the 1-rank epoch.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PASS_THROUGH = ("HOROVOD_CYCLE_TIME", "OMPI_MCA_mpi_yield_when_idle")


def network(kind="cifar"):
    from nord import NeuralDescriptor
    d = NeuralDescriptor()
    if kind == "small":
        # many small convolutions on 16x16 maps: compute-bound, but each operation is too
        # small for torch's intra-op threads to share well
        for _ in range(4):
            d.add_layer_sequential("conv2d", {"out_channels": 16, "kernel_size": 3, "padding": 1})
            d.add_layer_sequential("relu")
        d.add_layer_sequential("max_pool2d", [2])
        return d
    d.add_layer_sequential("conv2d", {"out_channels": 32, "kernel_size": 3, "padding": 1})
    d.add_layer_sequential("relu")
    d.add_layer_sequential("conv2d", {"out_channels": 32, "kernel_size": 3, "padding": 1})
    d.add_layer_sequential("relu")
    d.add_layer_sequential("max_pool2d", [2])
    d.add_layer_sequential("conv2d", {"out_channels": 64, "kernel_size": 3, "padding": 1})
    d.add_layer_sequential("relu")
    d.add_layer_sequential("max_pool2d", [2])
    return d


def worker(backend, samples, epochs, out, kind="cifar"):
    """Runs on every rank of one mpirun job."""
    import numpy as np
    import torch
    from nord.data import TensorCurator
    from nord.environments import Environment
    from nord.evaluators.distributed import DistributedEvaluator

    rng = np.random.default_rng(0)
    side = 16 if kind == "small" else 32
    x = rng.normal(size=(samples + 256, 3, side, side)).astype("float32")
    y = rng.integers(0, 10, samples + 256)
    curator = TensorCurator(x[:samples], y[:samples], x[samples:], y[samples:])
    with Environment() as env:
        evaluator = DistributedEvaluator(env, curator=curator, backend=backend, epochs=1,
                                         batch_size=64, seed=0, keep_model=True)
        evaluator.descriptor_evaluate(network(kind) if env.is_root else None)  # warm-up
        evaluator.epochs = epochs
        result = evaluator.descriptor_evaluate(network(kind) if env.is_root else None)
        assert result.ok, result.error
        model = evaluator.model
        steps = len(curator.train_loader(batch_size=64, rank=env.rank, size=env.size))
        comm = {}
        if env.size > 1:
            buffer = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
            comm = communication_cost(backend, model, buffer, env)
        if env.is_root:
            Path(out).write_text(json.dumps({
                "ranks": env.size, "threads": torch.get_num_threads(),
                "epoch_time": result.train_time / epochs, "steps_per_epoch": steps,
                "parameters": result.n_params, **comm}))


def communication_cost(backend, model, buffer, env, repeats=50):
    """Seconds per broadcast of all parameters and per all-reduce of one gradient buffer."""
    if backend == "horovod":
        import horovod.torch as hvd
        broadcast = lambda: hvd.broadcast_parameters(model.state_dict(), root_rank=0)  # noqa: E731
        allreduce = lambda: hvd.allreduce(buffer, name="bench.allreduce")  # noqa: E731
    else:
        import torch.distributed as dist

        def broadcast():
            for tensor in model.state_dict().values():
                dist.broadcast(tensor, src=0)

        allreduce = lambda: dist.all_reduce(buffer)  # noqa: E731
    timings = {}
    for name, operation in (("broadcast_s", broadcast), ("allreduce_s", allreduce)):
        operation()
        env.barrier()
        started = time.perf_counter()
        for _ in range(repeats):
            operation()
        timings[name] = (time.perf_counter() - started) / repeats
    timings["allreduce_bytes"] = buffer.numel() * buffer.element_size()
    return timings


def launch(ranks, threads, backend, samples, epochs, kind):
    out = Path(f"/tmp/nord-bench-distributed-{os.getpid()}-{ranks}.json")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS=str(threads), PYTHONPATH=str(REPO))
    command = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none",
               "-x", "OMP_NUM_THREADS",
               *[arg for name in PASS_THROUGH if name in os.environ for arg in ("-x", name)],
               sys.executable, __file__, "--worker", "--backend", backend,
               "--samples", str(samples), "--epochs", str(epochs), "--out", str(out), "--network", kind]
    subprocess.run(command, env=env, check=True, timeout=900, stdout=subprocess.DEVNULL)
    data = json.loads(out.read_text())
    out.unlink()
    return data


def main(repeats, backend, samples, epochs, kind):
    print(f"data-parallel epoch time, backend {backend}, network '{kind}', {samples} samples, "
          f"per-rank batch 64, {epochs} epoch(s) per job, {repeats} alternating rounds")
    one, two, single = [], [], []
    for _ in range(repeats):
        one.append(launch(1, 2, backend, samples, epochs, kind))
        two.append(launch(2, 1, backend, samples, epochs, kind))
        single.append(launch(1, 1, backend, samples, epochs, kind))
    t1 = statistics.median(r["epoch_time"] for r in one)
    t2 = statistics.median(r["epoch_time"] for r in two)
    t11 = statistics.median(r["epoch_time"] for r in single)
    ratios = [b["epoch_time"] / a["epoch_time"] for a, b in zip(one, two)]
    steps = two[0]["steps_per_epoch"]
    broadcast = statistics.median(r["broadcast_s"] for r in two)
    allreduce = statistics.median(r["allreduce_s"] for r in two)
    print(f"1 rank x 2 threads: {t1:.3f} s/epoch ({one[0]['steps_per_epoch']} steps)")
    print(f"2 ranks x 1 thread: {t2:.3f} s/epoch ({steps} steps per rank)")
    print(f"(context) 1 rank x 1 thread: {t11:.3f} s/epoch; 2 threads speed one rank up "
          f"{t11 / t1:.2f}x, 2 ranks speed it up {t11 / t2:.2f}x")
    print(f"ratio 2 ranks / 1 rank: {statistics.median(ratios):.3f} "
          f"(pairs: {', '.join(f'{r:.3f}' for r in ratios)}); target <= 0.65: "
          f"{'met' if statistics.median(ratios) <= 0.65 else 'NOT met'}")
    print(f"communication per step at 2 ranks: all-reduce of {two[0]['allreduce_bytes'] / 1e6:.2f} MB "
          f"{allreduce * 1e3:.2f} ms ({allreduce * steps / t2 * 100:.1f}% of the epoch); "
          f"broadcast of all parameters {broadcast * 1e3:.2f} ms (once per network)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backend", default="horovod", choices=["horovod", "torch"])
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--network", default="cifar", choices=["cifar", "small"],
                        help="cifar: 3 convolutions of 32-64 channels on 32x32; small: 4 "
                             "convolutions of 16 channels on 16x16")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        sys.path.insert(0, str(REPO))
        worker(args.backend, args.samples, args.epochs, args.out, args.network)
    else:
        main(args.repeats, args.backend, args.samples, args.epochs, args.network)
