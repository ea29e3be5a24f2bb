"""Data-parallel weight-sharing search: what nord's collectives cost, and its scaling.

    .venv/bin/python bench/oneshot_data_parallel.py                # both parts, every backend
    .venv/bin/python bench/oneshot_data_parallel.py --quick        # a smoke size (the test's)
    .venv/bin/python bench/oneshot_data_parallel.py --part overhead --backend torch --rounds 5

overhead: one mpirun job per backend, 2 ranks x 1 thread. For each method, rounds alternate
(AB, BA, ...) between a search on a started ``DataParallelGroup`` and the same search on a
group that only shards: the same rank and size, so each rank takes the same shard of every
batch and makes the same steps, but every collective is answered locally (no all-reduce of
the gradients and loss, no broadcast of the root's draws, no counts summed, no checks at the
epoch's end). That is what the epoch's compute alone costs. An epoch's time is the slowest
rank's (its record's seconds: the steps, the checks, the method's end of epoch and derivation).
The ratio data-parallel / compute alone is taken per round; the figure is the geometric mean
of its medians over the rounds where the data-parallel search ran first and where it ran
second. Each group call is also timed on the root (``average_gradients``, ``root_decides``,
``mean``, ``check_same``, ``share_root_buffers``): its share of the epoch includes the wait
for the slower rank, which a data-parallel search pays in any framework, so it bounds what
nord's own machinery costs from above. Assumed: without the collectives the ranks' draws and
architectures drift apart, which changes no tensor's shape (every method but GDAS, SETN, ENAS
and RSPS computes every operation; those four draw one cell a step and may draw a different
one, of a similar cost). Target: ratio <= 1.05.

scaling: 1 rank x 2 threads against 2 ranks x 1 thread, alternately, each job searching with
one method on the same samples per epoch (the recipe's batch is per rank, so 2 ranks make
half the steps), at a size where compute dominates; 1 rank x 1 thread as context. An epoch's
time is the median of the epochs after the first; 1 rank x 1 thread runs in the first round
only. Target: the 2-rank epoch takes <= 0.65 of the 1-rank one.

Both parts cut each epoch's end short (4 candidates scored, ENAS's controller 2 x 2 samples;
the benchmark's: 100, 50 x 20), so that the steps weigh in the epoch.
"""
import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import distributed  # noqa: E402
from bench.distributed import backends, balanced_ratio, yield_when_idle  # noqa: E402
from nord.evaluators.group import Alone  # noqa: E402

METHOD_NAMES = ("darts-v1", "darts-v2", "gdas", "setn", "enas", "rsps")
CALLS = ("average_gradients", "root_decides", "mean", "check_same", "share_root_buffers")
OVERHEAD_TARGET = 1.05
SCALING_TARGET = 0.65
# the size of each part: supernet channels and cells per stage, image side, per-rank batch,
# training samples (halved: weights, architecture), epochs per search
SIZES = {
    "default": {"overhead": dict(channels=8, cells=2, side=16, batch=32, samples=512, epochs=1),
                "scaling": dict(channels=8, cells=2, side=16, batch=64, samples=1024,
                                epochs=2)},
    "quick": {"overhead": dict(channels=4, cells=1, side=8, batch=16, samples=64, epochs=1),
              "scaling": dict(channels=4, cells=1, side=8, batch=16, samples=128, epochs=2)},
}


def curator(samples, side):
    import numpy as np
    from nord.data import TensorCurator
    rng = np.random.default_rng(0)
    x = rng.normal(size=(samples + 64, 3, side, side)).astype("float32")
    y = rng.integers(0, 10, samples + 64)
    return TensorCurator(x[:samples], y[:samples], x[samples:], y[samples:], valid_fraction=0.0)


def settings(method, size):
    from nord.nn.recipe import get_recipe
    from nord.oneshot.search import OneShotSettings
    from nord.oneshot.settings import MethodSettings
    # the epoch's end kept short (the benchmark's: 100 candidates, 50 x 20 controller samples),
    # so that the steps, where the gradients are averaged, weigh in the epoch
    return OneShotSettings(method, search_epochs=size["epochs"], channels=size["channels"],
                           cells_per_stage=size["cells"],
                           recipe=replace(get_recipe("darts-search"), batch_size=size["batch"]),
                           method_settings=MethodSettings(candidates=4, controller_steps=2,
                                                          controller_aggregate=2),
                           seed=0, device="cpu")


class ShardOnly(Alone):
    """A group of ``size`` ranks that shards the batches as a data-parallel group does, but
    answers every collective with this rank's own value: the compute of a data-parallel search
    without its communication. Every rank is its own root: it keeps its own start and draws."""

    is_root = True

    def __init__(self, rank, size):
        super().__init__()
        self.rank, self.size = rank, size


class TimedCalls:
    """``group`` with each of its calls in ``CALLS`` timed (seconds and counts per name)."""

    def __init__(self, group):
        self.group = group
        self.reset()
        for name in CALLS:
            setattr(self, name, self._timed(name, getattr(group, name)))

    def reset(self):
        self.seconds = dict.fromkeys(CALLS, 0.0)
        self.calls = dict.fromkeys(CALLS, 0)

    def _timed(self, name, call):
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - started
                self.calls[name] += 1
        return timed

    def __getattr__(self, name):
        return getattr(self.group, name)


def timed_search(method, size, data, group):
    """One search on ``group``: its epochs' seconds, its steps, the group calls made in the
    epochs (seconds and counts)."""
    from nord.oneshot.search import OneShotSearch
    timed = TimedCalls(group)
    search = OneShotSearch(settings(method, size), data, group=timed)
    start_epoch = search.method.start_epoch

    def counted_from_the_first_epoch(epoch, epochs):
        if not search.epochs:    # the calls of the start (the root's state) are not an epoch's
            timed.reset()
        start_epoch(epoch, epochs)
    search.method.start_epoch = counted_from_the_first_epoch
    result = search.run()
    return ([record.seconds for record in result.epochs], len(search.weight_loader),
            dict(timed.seconds), dict(timed.calls))


# --- overhead: the data-parallel search against its compute alone, in one job -----------------
def overhead_worker(backend, methods, rounds, size, out):
    """Runs on every rank of one mpirun job; rank 0 writes the figures."""
    import torch
    from nord.evaluators.distributed import DataParallelGroup
    from nord.parallel.environment import Environment
    torch.set_num_threads(1)
    data = curator(size["samples"], size["side"])
    rows = []
    with Environment() as env:
        group = DataParallelGroup(env.group.comm, backend)
        group.start(torch.device("cpu"))
        groups = {"parallel": group, "compute": ShardOnly(env.rank, env.size)}
        timed_search("rsps", size, data, group)    # warm-up; the backend's first collectives
        for method in methods:
            timings = {"parallel": [], "compute": []}
            calls = []
            for round_ in range(rounds):
                for name in (("parallel", "compute") if round_ % 2 == 0
                             else ("compute", "parallel")):
                    env.barrier()
                    seconds, steps, call_seconds, call_counts = timed_search(
                        method, size, data, groups[name])
                    slowest = max(env.allgather(sum(seconds)))
                    timings[name].append(slowest / len(seconds))
                    if name == "parallel":
                        calls.append({"seconds": call_seconds, "counts": call_counts,
                                      "epoch_s": sum(seconds)})
            rows.append({"method": method, "backend": backend, "ranks": env.size,
                         "threads": torch.get_num_threads(), "steps_per_epoch": steps,
                         **timings, "calls": calls})
        group.close()
    if env.is_root:
        Path(out).write_text(json.dumps(rows))


def summarise_overhead(row):
    """The figures of one method: medians, the ratio, the root's share of the epoch in each
    group call (over every round)."""
    ratios = [a / b for a, b in zip(row["parallel"], row["compute"])]
    epoch_s = sum(c["epoch_s"] for c in row["calls"])
    shares = {name: sum(c["seconds"][name] for c in row["calls"]) / epoch_s for name in CALLS}
    counts = {name: row["calls"][0]["counts"][name] for name in CALLS}
    return {"method": row["method"], "backend": row["backend"],
            "steps_per_epoch": row["steps_per_epoch"],
            "parallel_epoch_s": statistics.median(row["parallel"]),
            "compute_epoch_s": statistics.median(row["compute"]),
            "ratios": ratios, "ratio": balanced_ratio(ratios),
            "calls_share": sum(shares.values()), "shares": shares, "calls_per_epoch": counts}


def print_overhead(summaries, size):
    print(f"overhead: a data-parallel search against its compute alone (the same shards and "
          f"steps, every collective answered locally), 2 ranks x 1 thread, supernet C "
          f"{size['channels']}, N {size['cells']}, per-rank batch {size['batch']}, images "
          f"3x{size['side']}x{size['side']}, {size['samples']} training samples; epoch: the "
          f"slowest rank's; ratio: geometric mean of the medians of either order; target "
          f"<= {OVERHEAD_TARGET}")
    header = (f"{'method':<10}{'backend':<9}{'steps':>6}{'parallel s':>12}{'compute s':>11}"
              f"{'ratio':>8}  {'target':<9}{'in calls':>9}  "
              f"{'grads':>7}{'draws':>7}{'means':>7}{'checks':>8}  rounds")
    print(header)
    print("-" * len(header))
    for s in summaries:
        shares = s["shares"]
        print(f"{s['method']:<10}{s['backend']:<9}{s['steps_per_epoch']:>6}"
              f"{s['parallel_epoch_s']:>12.3f}{s['compute_epoch_s']:>11.3f}{s['ratio']:>8.3f}  "
              f"{'met' if s['ratio'] <= OVERHEAD_TARGET else 'NOT met':<9}"
              f"{s['calls_share'] * 100:>8.1f}%  "
              f"{shares['average_gradients'] * 100:>6.1f}%{shares['root_decides'] * 100:>6.1f}%"
              f"{shares['mean'] * 100:>6.1f}%"
              f"{(shares['check_same'] + shares['share_root_buffers']) * 100:>7.1f}%  "
              f"{' '.join(f'{r:.3f}' for r in s['ratios'])}")
    print("  in calls: the root's share of the epoch inside the group's calls (grads: "
          "average_gradients; draws: root_decides; means: mean; checks: check_same and "
          "share_root_buffers), waiting for the other rank included")


# --- scaling: 1 rank x 2 threads against 2 ranks x 1 thread -----------------------------------
def scaling_worker(backend, method, size, out):
    """Runs on every rank of one mpirun job (one rank: the search alone)."""
    import torch
    from nord.evaluators.distributed import DataParallelGroup
    from nord.parallel.environment import Environment
    data = curator(size["samples"], size["side"])
    with Environment() as env:
        group = Alone()
        if env.size > 1:
            group = DataParallelGroup(env.group.comm, backend)
            group.start(torch.device("cpu"))
        seconds, steps, call_seconds, _ = timed_search(method, size, data, group)
        group.close()
    if env.is_root:
        Path(out).write_text(json.dumps({
            "ranks": env.size, "threads": torch.get_num_threads(), "steps_per_epoch": steps,
            "epoch_s": statistics.median(seconds[1:] or seconds),
            "calls_share": sum(call_seconds.values()) / sum(seconds)}))


def summarise_scaling(backend, method, one, two, single):
    ratios = [b["epoch_s"] / a["epoch_s"] for a, b in zip(one, two)]
    t1, t2, t11 = (statistics.median(r["epoch_s"] for r in runs) for runs in (one, two, single))
    return {"backend": backend, "method": method, "one_rank_two_threads_s": t1,
            "two_ranks_one_thread_s": t2, "one_rank_one_thread_s": t11,
            "steps_one_rank": one[0]["steps_per_epoch"],
            "steps_two_ranks": two[0]["steps_per_epoch"],
            "ratios": ratios, "ratio": statistics.median(ratios),
            "calls_share": statistics.median(r["calls_share"] for r in two)}


def print_scaling(s, size):
    print(f"scaling, backend {s['backend']}, {s['method']}, supernet C {size['channels']}, N "
          f"{size['cells']}, per-rank batch {size['batch']}, images 3x{size['side']}x"
          f"{size['side']}, {size['samples']} training samples, {len(s['ratios'])} alternating "
          f"rounds")
    print(f"  1 rank x 2 threads: {s['one_rank_two_threads_s']:.3f} s/epoch "
          f"({s['steps_one_rank']} steps)")
    print(f"  2 ranks x 1 thread: {s['two_ranks_one_thread_s']:.3f} s/epoch "
          f"({s['steps_two_ranks']} steps per rank; {s['calls_share'] * 100:.1f}% of it in the "
          f"group's calls on the root)")
    t11 = s["one_rank_one_thread_s"]
    print(f"  (context) 1 rank x 1 thread: {t11:.3f} s/epoch; 2 threads speed one rank up "
          f"{t11 / s['one_rank_two_threads_s']:.2f}x, 2 ranks speed it up "
          f"{t11 / s['two_ranks_one_thread_s']:.2f}x")
    print(f"  ratio 2 ranks / 1 rank: {s['ratio']:.3f} (rounds: "
          f"{', '.join(f'{r:.3f}' for r in s['ratios'])}); target <= {SCALING_TARGET}: "
          f"{'met' if s['ratio'] <= SCALING_TARGET else 'NOT met'}")


# --- the launcher --------------------------------------------------------------------------
def launch(worker, ranks, threads, **options):
    return distributed.launch(worker, ranks, threads, script=__file__, **options)


def main(args):
    sizes = SIZES["quick" if args.quick else "default"]
    rounds = 1 if args.quick else args.rounds
    scaling_rounds = 1 if args.quick else args.scaling_rounds
    figures = {"load_start": os.getloadavg()[0], "sizes": sizes, "overhead": [], "scaling": []}
    print(f"{os.cpu_count()} cores, load average {figures['load_start']:.2f} at the start; MPI "
          f"yields while waiting at 2 ranks x 1 thread: "
          f"{'yes' if yield_when_idle(2, 1) else 'no'}")
    if args.part in ("overhead", "all"):
        for backend in backends(args.backend):
            rows = launch("overhead", 2, 1, backend=backend, methods=args.methods,
                          rounds=rounds, quick=args.quick)
            figures["overhead"] += [summarise_overhead(row) for row in rows]
        print_overhead(figures["overhead"], sizes["overhead"])
    if args.part in ("scaling", "all"):
        chosen = backends(args.backend)
        common = dict(method=args.scaling_method, quick=args.quick)
        one, single, two = [], [], {backend: [] for backend in chosen}
        for round_ in range(scaling_rounds):
            # one rank needs no backend; the 2-rank jobs of every backend are paired with it
            one.append(launch("scaling", 1, 2, backend=chosen[0], **common))
            for backend in chosen:
                two[backend].append(launch("scaling", 2, 1, backend=backend, **common))
            if round_ == 0:     # context only: once
                single.append(launch("scaling", 1, 1, backend=chosen[0], **common))
        for backend in chosen:
            summary = summarise_scaling(backend, args.scaling_method, one, two[backend], single)
            figures["scaling"].append(summary)
            print_scaling(summary, sizes["scaling"])
    figures["load_end"] = os.getloadavg()[0]
    print(f"load average {figures['load_end']:.2f} at the end")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return figures


def method_list(text):
    from nord.oneshot.registry import METHODS
    names = [name.strip() for name in text.split(",") if name.strip()]
    for name in names:
        METHODS.get(name)       # an unknown name is refused with the list
    return ",".join(names)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="all", choices=["all", "overhead", "scaling"])
    parser.add_argument("--backend", default="all", choices=["all", "horovod", "torch"])
    parser.add_argument("--methods", default=",".join(METHOD_NAMES), type=method_list,
                        help="overhead: the methods, comma-separated")
    parser.add_argument("--rounds", type=int, default=2,
                        help="overhead: rounds of the data-parallel search and its compute alone")
    parser.add_argument("--scaling-rounds", type=int, default=3)
    parser.add_argument("--scaling-method", default="gdas", type=method_list)
    parser.add_argument("--quick", action="store_true",
                        help="a tiny size and one round: checks that the bench runs, measures "
                             "nothing")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--worker", choices=["overhead", "scaling"], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        size = SIZES["quick" if args.quick else "default"][args.worker]
        if args.worker == "overhead":
            overhead_worker(args.backend, args.methods.split(","), args.rounds, size, args.out)
        else:
            scaling_worker(args.backend, args.scaling_method, size, args.out)
    else:
        from nord.parallel import launched_by_mpi
        if launched_by_mpi():
            sys.exit("bench/oneshot_data_parallel.py starts its own mpirun jobs: run it "
                     "without mpirun")
        main(args)
