"""Asynchronous against synchronous search over MPI: worker utilisation and dispatch overhead.

    python bench/async_dispatch.py [--workers 8] [--evaluations 160] [--sigma 0.5]
                                   [--overhead-evaluations 1000] [--repeats 1] [--seed 0]

The launcher starts two ``mpirun`` jobs (``--oversubscribe``; rank 0 only dispatches, every
other rank is a worker, ``Environment(group_size=1)``) that re-run this file with ``--worker``;
rank 0 writes its measurements as JSON to a temporary file, which the launcher reads.

1. ``--workers + 1`` ranks. ``SleepEvaluator`` sleeps for a log-normal duration with mean
   0.2 s (``--mean``) and ``--sigma`` the standard deviation of its logarithm (0.5 by default:
   the slowest of a generation of 8 takes about twice the mean, as networks of one search
   space often do; 1.0 gives a heavier tail, where the synchronous mode loses more). The
   duration of an evaluation is drawn from a generator seeded by ``--seed`` and the
   descriptor's hash, and ``RandomSearch`` proposes the same candidates whatever results it
   is told, so both modes evaluate the same architectures for the same durations: they do
   the same work, and only the waiting differs. A sleeping rank uses no CPU, so 8 workers fit
   on 2 cores. For each mode (``run_search(mode='async')`` and ``mode='sync'`` with batches of
   ``--workers``, i.e. ``--evaluations / --workers`` generations) it reports the wall time and
   the worker utilisation, ``busy time / (workers x wall time)`` (``SearchSummary.utilisation``;
   busy time is what the workers spent inside ``descriptor_evaluate``), and the asynchronous
   mode once more with ``MPIExecutor(prefetch=1)``. Then, with a zero-duration evaluator,
   the dispatcher's cost per evaluation at 8 workers: wall time / evaluations, when rank 0
   is the bottleneck, with the journal off and on (one SQLite commit per evaluation).
2. 2 ranks (one worker), zero-duration evaluator: the round trip per evaluation, i.e. the
   time a worker waits between two evaluations, ``(wall - busy) / evaluations``: its result
   reaching rank 0, rank 0 telling the algorithm, asking, decoding, hashing and journaling
   the next candidate, and the next task reaching the worker. Journal off and on.

Targets (issue 4, section 9): asynchronous utilisation >= 0.95; dispatch overhead per
evaluation < 2 ms (checked on both overhead figures above, journal on). The whole benchmark
takes about a minute; it prints the load average, since the machine is shared.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from nord.evaluators.base import Evaluator  # noqa: E402
from nord.evaluators.result import EvaluationResult  # noqa: E402

UTILISATION_TARGET = 0.95
OVERHEAD_TARGET = 2e-3  # seconds per evaluation


class SleepEvaluator(Evaluator):
    """Sleeps for a log-normal duration instead of training; the accuracy comes from the genome.

    Args:
        mean: mean duration in seconds (0: no sleep at all, to measure dispatch alone).
        sigma: standard deviation of the log of the duration.
        seed: with the descriptor's hash, seeds each evaluation's duration, so the same
            architecture sleeps equally long in every run and on every rank.
    """

    def __init__(self, mean: float = 0.2, sigma: float = 0.5, seed: int = 0):
        self.mean = mean
        self.sigma = sigma
        self.seed = seed

    def duration(self, descriptor_hash: str) -> float:
        """The sleep of one architecture: log-normal with the requested mean."""
        if self.mean <= 0:
            return 0.0
        import numpy as np

        rng = np.random.default_rng((self.seed, int(descriptor_hash, 16)))
        # E[exp(N(mu, sigma^2))] = exp(mu + sigma^2 / 2)
        return float(rng.lognormal(math.log(self.mean) - self.sigma ** 2 / 2, self.sigma))

    def _evaluate(self, descriptor):
        seconds = self.duration(descriptor.hash)
        if seconds > 0:
            time.sleep(seconds)
        convs = [layer for layer in descriptor.to_dict()["layers"] if layer["type"] == "conv2d"]
        channels = sum(layer["params"]["out_channels"] for layer in convs)
        kernels = sum(layer["params"]["kernel_size"] for layer in convs)
        # a made-up, smooth landscape: wider helps with diminishing returns, larger kernels cost
        accuracy = 0.4 + 0.55 * (1 - math.exp(-channels / 80)) - 0.01 * kernels / max(len(convs), 1)
        return EvaluationResult(accuracy=min(max(accuracy, 0.0), 1.0), train_time=seconds,
                                n_params=channels, epochs=1)


def space():
    """Four convolutions with kernels of at most 5 on 32x32 inputs: no genome needs repair, and
    64^4 * 5^4 architectures make a repeated one (evaluated once, from the cache) unlikely."""
    from nord.search.spaces import ConvSpace

    return ConvSpace(input_shape=(3, 32, 32), layers=4, channels=(1, 64), kernel_size=(1, 5))


# --- inside mpirun ---------------------------------------------------------------------------
def worker(runs, sigma, seed, out):
    """Runs on every rank of one mpirun job: each run in ``runs`` is one run_search."""
    from nord.environments import Environment
    from nord.search.dispatch import MPIExecutor
    from nord.search.loop import run_search
    from nord.search.random_search import RandomSearch

    records = []
    with Environment(group_size=1, log_handler=False) as env:
        workers = env.size - 1
        directory = tempfile.mkdtemp(prefix="nord-bench-journal-") if env.is_root else None
        for index, run in enumerate(runs):
            evaluator = SleepEvaluator(mean=run["mean"], sigma=sigma, seed=seed)
            executor = MPIExecutor(evaluator, env, prefetch=run.get("prefetch", 0))
            algorithm = RandomSearch(space(), seed=seed, generation_size=workers)
            journal = (os.path.join(directory, f"run{index}.db")
                       if env.is_root and run["journal"] else None)
            env.barrier()
            cpu = time.process_time()
            summary = run_search(algorithm, executor=executor, budget=run["evaluations"],
                                 mode=run["mode"], journal=journal)
            cpu = time.process_time() - cpu
            if env.is_root:
                records.append({**run, "workers": summary.workers, "ranks": env.size,
                                "evaluations": summary.evaluations, "trained": summary.trained,
                                "cached": summary.cached, "wall": summary.wall_time,
                                "busy": summary.busy_time, "utilisation": summary.utilisation,
                                "root_cpu": cpu})
        if env.is_root:
            for name in os.listdir(directory):
                os.unlink(os.path.join(directory, name))
            os.rmdir(directory)
            Path(out).write_text(json.dumps(records))


# --- the launcher ----------------------------------------------------------------------------
def launch(ranks, runs, sigma, seed, timeout):
    out = Path(tempfile.gettempdir()) / f"nord-bench-async-{os.getpid()}-{ranks}.json"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))
    command = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none",
               sys.executable, __file__, "--worker", "--runs", json.dumps(runs),
               "--sigma", str(sigma), "--seed", str(seed), "--out", str(out)]
    subprocess.run(command, env=env, check=True, timeout=timeout, stdout=subprocess.DEVNULL)
    records = json.loads(out.read_text())
    out.unlink()
    return [record for record in records if not record["name"].startswith("warm-up")]


def median_of(records, name, key):
    return statistics.median(r[key] for r in records if r["name"] == name)


def main(args):
    load_before = os.getloadavg()
    started = time.monotonic()
    n, w = args.evaluations, args.workers
    print(f"async vs sync search: {w} workers (mpirun -np {w + 1}, rank 0 dispatches), "
          f"{n} evaluations, sleep log-normal mean {args.mean} s sigma {args.sigma}, "
          f"{args.repeats} repeat(s); {os.cpu_count()} cores, load average "
          f"{' '.join(f'{v:.2f}' for v in load_before)}")
    sleep = {"mean": args.mean, "evaluations": n, "journal": True}
    zero = {"mean": 0.0, "evaluations": args.overhead_evaluations, "mode": "async"}
    warm_up = {"name": "warm-up", "mean": 0.0, "evaluations": 4 * w, "mode": "async",
               "journal": True}
    runs = [warm_up]
    for _ in range(args.repeats):  # alternate, so that a change of load hits both modes
        runs += [{**sleep, "name": "async", "mode": "async"},
                 {**sleep, "name": "sync", "mode": "sync"}]
    runs += [{**sleep, "name": "async prefetch=1", "mode": "async", "prefetch": 1},
             {**zero, "name": f"zero {w}w journal off", "journal": False},
             {**zero, "name": f"zero {w}w journal on", "journal": True}]
    many = launch(w + 1, runs, args.sigma, args.seed, args.timeout)
    one = launch(2, [warm_up, {**zero, "name": "zero 1w journal off", "journal": False},
                     {**zero, "name": "zero 1w journal on", "journal": True}],
                 args.sigma, args.seed, args.timeout)
    records = many + one

    print()
    print(f"{'mode':<18}{'wall s':>8}{'busy s':>9}{'ideal s':>9}{'utilisation':>13}{'trained':>9}")
    for name in ("async", "sync", "async prefetch=1"):
        wall, busy = median_of(records, name, "wall"), median_of(records, name, "busy")
        trained = median_of(records, name, "trained")
        print(f"{name:<18}{wall:>8.2f}{busy:>9.2f}{busy / w:>9.2f}{busy / (w * wall):>13.3f}"
              f"{trained:>9.0f}")
    async_utilisation = median_of(records, "async", "utilisation")
    sync_wall, async_wall = median_of(records, "sync", "wall"), median_of(records, "async", "wall")
    print(f"async takes {async_wall / sync_wall:.2f} of the sync wall time "
          f"(ideal wall = busy / workers; the difference is waiting: generation barriers in "
          f"sync, the last evaluations draining and dispatch in async)")

    print()
    m = args.overhead_evaluations
    print(f"dispatch overhead, zero-duration evaluator, {m} evaluations, async")
    print(f"{'setting':<22}{'wall ms/eval':>14}{'idle ms/eval':>14}{'rank-0 CPU ms/eval':>20}")
    overheads = {}
    for record in records:
        if not record["name"].startswith("zero"):
            continue
        evaluations, workers = record["evaluations"], record["workers"]
        per_eval = record["wall"] / evaluations
        # time each worker spends not evaluating, per evaluation it does
        idle = (record["wall"] * workers - record["busy"]) / evaluations
        overheads[record["name"]] = (per_eval, idle)
        print(f"{record['name']:<22}{per_eval * 1e3:>14.3f}{idle * 1e3:>14.3f}"
              f"{record['root_cpu'] / evaluations * 1e3:>20.3f}")
    print("  1 worker: wall/eval is the round trip a worker waits between evaluations; "
          f"{w} workers: wall/eval is rank 0's time per evaluation (it is the bottleneck)")

    load_after = os.getloadavg()
    round_trip = overheads["zero 1w journal on"][0]
    dispatcher = overheads[f"zero {w}w journal on"][0]
    print()
    print(f"target async utilisation >= {UTILISATION_TARGET}: {async_utilisation:.3f} "
          f"{'met' if async_utilisation >= UTILISATION_TARGET else 'NOT met'}")
    met = max(round_trip, dispatcher) < OVERHEAD_TARGET
    print(f"target dispatch overhead < {OVERHEAD_TARGET * 1e3:.0f} ms per evaluation (journal on): "
          f"round trip {round_trip * 1e3:.3f} ms, rank 0 at {w} workers {dispatcher * 1e3:.3f} ms "
          f"{'met' if met else 'NOT met'}")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in load_after)}; "
          f"benchmark took {time.monotonic() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"load_before": load_before, "load_after": load_after,
                                               "records": records}, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--evaluations", type=int, default=160,
                        help="per mode (a multiple of --workers gives whole generations)")
    parser.add_argument("--mean", type=float, default=0.2, help="mean evaluation time, seconds")
    parser.add_argument("--sigma", type=float, default=0.5, help="sigma of log(duration)")
    parser.add_argument("--overhead-evaluations", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=1, help="async/sync pairs (median shown)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=int, default=150, help="seconds per mpirun job")
    parser.add_argument("--json", help="also write every measurement to this file")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--runs", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(json.loads(args.runs), args.sigma, args.seed, args.out)
    else:
        main(args)
