"""Data-parallel training: nord's overhead against hand-written loops, and its scaling.

    .venv/bin/python bench/distributed.py                       # both parts, every backend
    .venv/bin/python bench/distributed.py --part overhead --backend torch --rounds 9
    mpirun -np 2 --mca mpi_yield_when_idle 1 .venv/bin/python bench/distributed.py --part overhead

overhead: one mpirun job per backend, 2 ranks x 1 thread. In it, rounds alternate (AB, BA, ...)
between nord's DistributedEvaluator and a hand-written loop, Horovod's
``hvd.DistributedOptimizer`` loop or ``DistributedDataParallel`` (gloo on the CPU, NCCL
on GPUs), training the same network from the same weights on the same shards and batches
(the curator's own loader), with the same optimizer and number of steps. Both time only
the epochs. The ratio nord / hand-written is taken per round; the figure is the geometric
mean of its medians over the rounds where nord ran first and where it ran second, so
that going first or second cancels out. Target: <= 1.03.

scaling: 1 rank x 2 threads against 2 ranks x 1 thread, both through nord, alternately,
each job training the same compute-bound network on the same data (per-rank batch 64, so
both see every sample once per epoch); also the cost of one gradient-sized all-reduce
and of broadcasting the parameters. Target: the 2-rank epoch takes <= 0.65 of the 1-rank one.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PASS_THROUGH = ("HOROVOD_CYCLE_TIME", "HOROVOD_CONTROLLER", "HOROVOD_CPU_OPERATIONS",
                "OMPI_MCA_mpi_yield_when_idle")
BATCH = 64
OVERHEAD_TARGET = 1.03
SCALING_TARGET = 0.65


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


def curator(samples, kind):
    import numpy as np
    from nord.data import TensorCurator
    rng = np.random.default_rng(0)
    side = 16 if kind == "small" else 32
    x = rng.normal(size=(samples + 256, 3, side, side)).astype("float32")
    y = rng.integers(0, 10, samples + 256)
    return TensorCurator(x[:samples], y[:samples], x[samples:], y[samples:])


# --- overhead: nord against a hand-written loop, in one job ------------------------------
def hand_written(backend, descriptor, data, epochs, lr, device, env):
    """Seconds of the epochs of a plain data-parallel loop (no failure checks at all)."""
    import torch
    from torch import nn
    from nord.nn.network import NeuralNet
    torch.manual_seed(0)  # the weights nord starts from (its seed is 0 too)
    model = NeuralNet(descriptor, data.input_shape, data.num_classes).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    if backend == "horovod":
        import horovod.torch as hvd
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(optimizer, root_rank=0)
        optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    else:
        from torch.nn.parallel import DistributedDataParallel
        # nord keeps buffers per rank after the start too: no per-step broadcast of them
        model = DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None,
            **_no_buffer_sync(DistributedDataParallel))
    loader = data.train_loader(batch_size=BATCH, rank=env.rank, size=env.size, shuffle=True,
                               seed=0, device=device)
    model.train()
    started = time.perf_counter()
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(inputs), targets)
            loss.backward()
            optimizer.step()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - started
    del model, optimizer
    return seconds, len(loader)


def _no_buffer_sync(ddp):
    """DDP's argument that turns off the per-step buffer broadcast (renamed in torch 2.13)."""
    import inspect
    if "forward_sync_buffers" in inspect.signature(ddp.__init__).parameters:
        return {"forward_sync_buffers": False}
    return {"broadcast_buffers": False}


def overhead_worker(backend_names, rounds, samples, epochs, kind, device_name, out=None):
    """Runs on every rank of one mpirun job; rank 0 writes (or prints) the figures."""
    import torch
    from nord.parallel.environment import Environment
    from nord.evaluators.distributed import DistributedEvaluator
    from nord.nn.training import resolve_device
    torch.set_num_threads(1)
    data, descriptor = curator(samples, kind), network(kind)
    rows = []
    with Environment() as env:
        device = resolve_device(device_name, env.local_rank)
        for backend in backend_names:
            evaluator = DistributedEvaluator(env, curator=data, backend=backend, epochs=epochs,
                                             batch_size=BATCH, seed=0, device=device_name)

            def nord():
                result = evaluator.descriptor_evaluate(descriptor if env.is_root else None)
                if not result.ok:
                    raise RuntimeError(result.error)
                return result.train_time

            def hand():
                return hand_written(evaluator.backend, descriptor, data, epochs, evaluator.lr,
                                    device, env)[0]

            nord()  # warm-up; starts Horovod or torch.distributed
            _, steps = hand_written(evaluator.backend, descriptor, data, 1, evaluator.lr,
                                    device, env)
            timings = {"nord": [], "hand": []}
            for round_ in range(rounds):
                for name in (("nord", "hand") if round_ % 2 == 0 else ("hand", "nord")):
                    env.barrier()
                    timings[name].append(nord() if name == "nord" else hand())
            evaluator.close()
            rows.append({"backend": evaluator.backend, "device": str(device), "network": kind,
                         "ranks": env.size, "threads": torch.get_num_threads(),
                         "steps": steps * epochs, **timings})
    if env.is_root:
        if out:
            Path(out).write_text(json.dumps(rows))
        else:
            print_overhead(rows)


def balanced_ratio(ratios):
    """Median ratio of the rounds where nord ran first, times that of the rounds where it ran
    second, square-rooted: an advantage of going first or second cancels out."""
    first, second = ratios[0::2], ratios[1::2]
    if not second:
        return statistics.median(first)
    return (statistics.median(first) * statistics.median(second)) ** 0.5


def print_overhead(rows):
    print(f"nord's DistributedEvaluator against a hand-written loop: same network, weights, "
          f"shards, per-rank batch {BATCH}, Adam and steps, 1 thread per rank; ratio nord / "
          f"hand-written per round, nord first in odd rounds; ratio: geometric mean of the medians of either order; target <= {OVERHEAD_TARGET}")
    header = (f"{'backend':<9}{'hand-written':<22}{'device':<8}{'network':<9}{'ranks':>6}"
              f"{'steps':>7}{'nord ms/step':>14}{'hand ms/step':>14}{'ratio':>8}  "
              f"{'target':<9}rounds")
    print(header)
    print("-" * len(header))
    for row in rows:
        ratios = [a / b for a, b in zip(row["nord"], row["hand"])]
        ratio = balanced_ratio(ratios)
        hand = "DistributedOptimizer" if row["backend"] == "horovod" else "DDP"
        print(f"{row['backend']:<9}{hand:<22}{row['device']:<8}{row['network']:<9}"
              f"{row['ranks']:>6}{row['steps']:>7}"
              f"{statistics.median(row['nord']) / row['steps'] * 1e3:>14.2f}"
              f"{statistics.median(row['hand']) / row['steps'] * 1e3:>14.2f}"
              f"{ratio:>8.3f}  {'met' if ratio <= OVERHEAD_TARGET else 'NOT met':<9}"
              f"{' '.join(f'{r:.3f}' for r in ratios)}")


# --- scaling: 1 rank x 2 threads against 2 ranks x 1 thread -------------------------------
def scaling_worker(backend, samples, epochs, out, kind="cifar"):
    """Runs on every rank of one mpirun job."""
    import torch
    from nord.parallel.environment import Environment
    from nord.evaluators.distributed import DistributedEvaluator

    data = curator(samples, kind)
    with Environment() as env:
        evaluator = DistributedEvaluator(env, curator=data, backend=backend, epochs=1,
                                         batch_size=BATCH, seed=0, keep_model=True)
        evaluator.descriptor_evaluate(network(kind) if env.is_root else None)  # warm-up
        evaluator.epochs = epochs
        result = evaluator.descriptor_evaluate(network(kind) if env.is_root else None)
        if not result.ok:
            raise RuntimeError(result.error)
        model = evaluator.model
        steps = len(data.train_loader(batch_size=BATCH, rank=env.rank, size=env.size))
        comm = {}
        if env.size > 1:
            buffer = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
            comm = communication_cost(evaluator.backend, model, buffer, env)
        evaluator.close()
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


def print_scaling(backend, kind, samples, one, two, single):
    t1 = statistics.median(r["epoch_time"] for r in one)
    t2 = statistics.median(r["epoch_time"] for r in two)
    t11 = statistics.median(r["epoch_time"] for r in single)
    ratios = [b["epoch_time"] / a["epoch_time"] for a, b in zip(one, two)]
    ratio = statistics.median(ratios)
    steps = two[0]["steps_per_epoch"]
    broadcast = statistics.median(r["broadcast_s"] for r in two)
    allreduce = statistics.median(r["allreduce_s"] for r in two)
    print(f"scaling, backend {backend}, network '{kind}', {samples} samples, per-rank batch "
          f"{BATCH}, {len(one)} alternating rounds")
    print(f"  1 rank x 2 threads: {t1:.3f} s/epoch ({one[0]['steps_per_epoch']} steps)")
    print(f"  2 ranks x 1 thread: {t2:.3f} s/epoch ({steps} steps per rank)")
    print(f"  (context) 1 rank x 1 thread: {t11:.3f} s/epoch; 2 threads speed one rank up "
          f"{t11 / t1:.2f}x, 2 ranks speed it up {t11 / t2:.2f}x")
    print(f"  ratio 2 ranks / 1 rank: {ratio:.3f} (rounds: {', '.join(f'{r:.3f}' for r in ratios)}); "
          f"target <= {SCALING_TARGET}: {'met' if ratio <= SCALING_TARGET else 'NOT met'}")
    print(f"  communication per step at 2 ranks: all-reduce of "
          f"{two[0]['allreduce_bytes'] / 1e6:.2f} MB {allreduce * 1e3:.2f} ms "
          f"({allreduce * steps / t2 * 100:.1f}% of the epoch); broadcast of all parameters "
          f"{broadcast * 1e3:.2f} ms (once per network)")


# --- the launcher -----------------------------------------------------------------------
def yield_when_idle(ranks, threads):
    """mpirun's arguments that make MPI yield while waiting, where the ranks share cores."""
    from nord.parallel.launcher import cores_are_shared
    cores = os.cpu_count() or 1
    shared = cores_are_shared(ranks, threads, cores, cores)
    return ["--mca", "mpi_yield_when_idle", "1"] if shared else []


def mpirun(ranks, threads, arguments, script=__file__):
    """Run ``script`` with ``arguments`` on ``ranks`` ranks of ``threads`` threads each."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS=str(threads), PYTHONPATH=str(REPO))
    command = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none",
               *yield_when_idle(ranks, threads), "-x", "OMP_NUM_THREADS", "-x", "PYTHONPATH",
               *[arg for name in PASS_THROUGH if name in os.environ for arg in ("-x", name)],
               sys.executable, str(script), *arguments]
    subprocess.run(command, env=env, check=True, timeout=1800, stdout=subprocess.DEVNULL)


def launch(worker, ranks, threads, script=__file__, **options):
    """The JSON that ``script``'s ``worker`` writes under mpirun, given ``options`` as flags
    (``name_part=value``: ``--name-part value``; True: the flag alone; False: none)."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "result.json"
        arguments = ["--worker", worker, "--out", str(out)]
        for name, value in options.items():
            flag = f"--{name.replace('_', '-')}"
            if value is True:
                arguments.append(flag)
            elif value is not False:
                arguments += [flag, str(value)]
        mpirun(ranks, threads, arguments, script)
        return json.loads(out.read_text())


def backends(choice):
    if choice != "all":
        return [choice]
    try:
        import horovod.torch  # noqa: F401
        return ["horovod", "torch"]
    except ImportError:
        return ["torch"]


def main(args):
    from nord.parallel import launched_by_mpi
    if launched_by_mpi():
        if args.part == "scaling":
            sys.exit("the scaling part starts its own mpirun jobs: run it without mpirun")
        overhead_worker(backends(args.backend), args.rounds, args.samples, args.epochs,
                        args.network, args.device)
        return
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} cores, load average {load:.2f} at the start; MPI yields while "
          f"waiting at 2 ranks x 1 thread: {'yes' if yield_when_idle(2, 1) else 'no'} "
          "(where the ranks and Horovod's threads outnumber the cores)")
    if args.part in ("overhead", "all"):
        rows = [row for backend in backends(args.backend)
                for row in launch("overhead", 2, 1, backend=backend, rounds=args.rounds,
                                  samples=args.samples, epochs=args.epochs,
                                  network=args.network, device=args.device)]
        print_overhead(rows)
    if args.part in ("scaling", "all"):
        for backend in backends(args.backend):
            one, two, single = [], [], []
            for _ in range(args.scaling_rounds):
                common = dict(backend=backend, samples=args.samples, epochs=args.epochs,
                              network=args.network)
                one.append(launch("scaling", 1, 2, **common))
                two.append(launch("scaling", 2, 1, **common))
                single.append(launch("scaling", 1, 1, **common))
            print_scaling(backend, args.network, args.samples, one, two, single)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="all", choices=["all", "overhead", "scaling"])
    parser.add_argument("--backend", default="all", choices=["all", "horovod", "torch"])
    parser.add_argument("--rounds", type=int, default=6,
                        help="overhead: rounds of nord and the hand-written loop")
    parser.add_argument("--scaling-rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--network", default="cifar", choices=["cifar", "small"],
                        help="cifar: 3 convolutions of 32-64 channels on 32x32; small: 4 "
                             "convolutions of 16 channels on 16x16")
    parser.add_argument("--device", default="auto",
                        help="overhead: 'auto' (each rank the GPU of its local rank), 'cpu', 'cuda'")
    parser.add_argument("--worker", choices=["overhead", "scaling"], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    if args.worker == "overhead":
        overhead_worker([args.backend], args.rounds, args.samples, args.epochs, args.network,
                        args.device, args.out)
    elif args.worker == "scaling":
        scaling_worker(args.backend, args.samples, args.epochs, args.out, args.network)
    else:
        main(args)
