"""Asynchronous against synchronous search over MPI: worker utilisation and dispatch overhead.

    python bench/async_dispatch.py [--workers 8] [--evaluations 320] [--sigma 0.5]
                                   [--overhead-evaluations 500] [--repeats 1] [--json FILE]

The launcher starts two ``mpirun`` jobs (``--oversubscribe``; ``Environment(group_size=1)``:
rank 0 only dispatches, every other rank is a worker) that re-run this file with ``--worker``;
rank 0 of each writes its measurements as JSON to a temporary file, which the launcher reads.
About a minute on 2 cores; it prints the load average before and after, since the figures
depend on what else runs.

1. ``--workers + 1`` ranks. ``SleepEvaluator`` sleeps for a log-normal duration with mean
   0.2 s (``--mean``); ``--sigma``, the standard deviation of the log of the duration, is 0.5
   by default: the slowest of a generation of 8 then takes about twice the mean, as the
   slowest networks of a generation often do (1.0 gives a heavier tail, where the synchronous
   mode loses more, and a single long evaluation at the end decides the asynchronous wall
   time). Each duration comes from a generator seeded by ``--seed`` and the descriptor's
   hash, and ``RandomSearch`` proposes the same candidates whatever it is told, so both modes
   evaluate the same architectures for the same durations: same work, only the waiting
   differs. A sleeping rank uses no CPU, so 8 workers fit on 2 cores. Both modes run
   ``--evaluations`` evaluations (sync: batches of ``--workers``, i.e. generations of 8), and
   the asynchronous mode once more with ``MPIExecutor(prefetch=1)``. Reported per mode:

   * wall time and utilisation, ``busy / (workers x wall)`` (``SearchSummary.utilisation``;
     busy time is what workers spent inside ``descriptor_evaluate``);
   * ideal: the same with the wall time of a dispatcher that costs nothing, for the same
     durations (async: each candidate in turn to the first free worker; sync: each batch
     waits for its slowest). Even then the asynchronous mode loses the *drain*: after the last
     hand-out, workers that finish early have nothing left to do. It costs a roughly fixed
     0.1 to 0.15 s, 3.5% of a 160-evaluation run (ideal 0.966), about half that at 320 (the
     default, ideal 0.981);
   * steady: utilisation from the first start to the last hand-out (the drain excluded), and
     gap: the mean time a worker waits between two of its evaluations, both from the start
     and end times in the run's journal.

2. Dispatch overhead, zero-duration evaluator (no sleep), async, ``--overhead-evaluations``
   per run, journal off and on (one SQLite commit per evaluation), median of
   ``--overhead-repeats``: at ``--workers`` workers rank 0 is the bottleneck, and
   ``(wall - busy / workers) / evaluations`` is its time per evaluation (tell, ask, decode,
   hash, send, receive, journal); at 1 worker (a second job, 2 ranks) the same figure is the
   round trip a worker waits between two evaluations, also with ``prefetch=1`` and with
   ``poll_interval=0`` (blocking probe) for comparison.

Targets (issue 4, section 9): asynchronous utilisation >= 0.95; dispatch overhead per
evaluation < 2 ms (the first figure of part 2, journal on).
"""
from __future__ import annotations

import argparse
import heapq
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
    from nord.parallel.environment import Environment
    from nord.search.engine import run_search
    from nord.search.executors import MPIExecutor
    from nord.search.algorithms.random_search import RandomSearch

    records = []
    with Environment(group_size=1, log_handler=False) as env:
        workers = env.size - 1
        directory = tempfile.mkdtemp(prefix="nord-bench-journal-") if env.is_root else None
        for index, run in enumerate(runs):
            evaluator = SleepEvaluator(mean=run["mean"], sigma=sigma, seed=seed)
            options = {key: run[key] for key in ("prefetch", "poll_interval") if key in run}
            executor = MPIExecutor(evaluator, env, **options)
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
                                "evaluations": summary.evaluations, "trained": summary.evaluated,
                                "cached": summary.cached, "wall": summary.wall_time,
                                "busy": summary.busy_time, "utilisation": summary.utilisation,
                                "root_cpu": cpu, **(timeline(journal) if journal else {})})
        if env.is_root:
            for name in os.listdir(directory):
                os.unlink(os.path.join(directory, name))
            os.rmdir(directory)
            Path(out).write_text(json.dumps(records))


def timeline(path):
    """What the journal's start and end times say about the workers' waiting.

    Returns:
        ``steady``: utilisation from the first start to the last start, while every worker
        has work to do (the drain after the last hand-out excluded); ``gap`` and
        ``gap_median``: the mean and median time a worker waits between the end of one
        evaluation and the start of its next (the dispatch round trip as the workers see it;
        both times from one worker's clock). The mean is what adds up to lost time.
    """
    from nord.journal import Journal

    with Journal(path) as journal:
        rows = [row for row in journal.evaluations() if row["worker_rank"] is not None]
    first, last = min(r["started"] for r in rows), max(r["started"] for r in rows)
    workers = len({r["worker_rank"] for r in rows})
    busy = sum(max(0.0, min(r["ended"], last) - r["started"]) for r in rows)
    gaps = []
    for rank in {r["worker_rank"] for r in rows}:
        mine = sorted((r["started"], r["ended"]) for r in rows if r["worker_rank"] == rank)
        gaps += [start - end for (_, end), (start, _) in zip(mine, mine[1:])]
    return {"steady": busy / (workers * (last - first)) if last > first else math.nan,
            "gap": statistics.fmean(gaps) if gaps else math.nan,
            "gap_median": statistics.median(gaps) if gaps else math.nan}


def durations(evaluations, workers, mean, sigma, seed):
    """The sleep of each candidate the benchmark's RandomSearch proposes, in order."""
    from nord.search.algorithms.random_search import RandomSearch

    search_space = space()
    algorithm = RandomSearch(search_space, seed=seed, generation_size=workers)
    evaluator = SleepEvaluator(mean, sigma, seed)
    return [evaluator.duration(search_space.to_descriptor(algorithm.ask().genome).hash)
            for _ in range(evaluations)]


def best_walls(seconds, workers):
    """Wall times of a dispatcher that costs nothing: async (each candidate, in order, to the
    first free worker) and sync (each batch of ``workers`` waits for its slowest)."""
    free = [0.0] * workers
    for duration in seconds:
        heapq.heappush(free, heapq.heappop(free) + duration)
    sync = sum(max(seconds[i:i + workers]) for i in range(0, len(seconds), workers))
    return max(free), sync


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
    n, w, m = args.evaluations, args.workers, args.overhead_evaluations
    print(f"async vs sync search: {w} workers (mpirun -np {w + 1}, rank 0 dispatches), "
          f"{n} evaluations, sleep log-normal mean {args.mean} s sigma {args.sigma}, "
          f"{args.repeats} repeat(s); {os.cpu_count()} cores, load average "
          f"{' '.join(f'{v:.2f}' for v in load_before)}")
    sleep = {"mean": args.mean, "evaluations": n, "journal": True}
    zero = {"mean": 0.0, "evaluations": m, "mode": "async"}
    warm_up = {"name": "warm-up", "mean": 0.0, "evaluations": 4 * w, "mode": "async",
               "journal": True}
    runs = [warm_up]
    for _ in range(args.repeats):  # alternate, so that a change of load hits both modes
        runs += [{**sleep, "name": "async", "mode": "async"},
                 {**sleep, "name": "sync", "mode": "sync"}]
    runs += [{**sleep, "name": "async prefetch=1", "mode": "async", "prefetch": 1}]
    overhead = []
    for _ in range(args.overhead_repeats):
        overhead += [{**zero, "name": "journal off", "journal": False},
                     {**zero, "name": "journal on", "journal": True}]
    many = launch(w + 1, runs + [{**run, "name": f"{w}w {run['name']}"} for run in overhead],
                  args.sigma, args.seed, args.timeout)
    one = launch(2, [warm_up] + [{**run, "name": f"1w {run['name']}"} for run in overhead] + [
        {**zero, "name": "1w journal on, prefetch=1", "journal": True, "prefetch": 1},
        {**zero, "name": "1w journal on, poll_interval=0", "journal": True, "poll_interval": 0}],
        args.sigma, args.seed, args.timeout)
    records = many + one

    best_async, best_sync = best_walls(durations(n, w, args.mean, args.sigma, args.seed), w)
    print()
    print(f"{'mode':<18}{'wall s':>8}{'busy s':>8}{'ideal s':>9}{'utilisation':>13}"
          f"{'ideal':>7}{'steady':>8}{'gap ms':>8}")
    modes = (("async", best_async), ("sync", best_sync), ("async prefetch=1", best_async))
    for name, best in modes:
        wall, busy = median_of(records, name, "wall"), median_of(records, name, "busy")
        print(f"{name:<18}{wall:>8.2f}{busy:>8.2f}{best:>9.2f}{busy / (w * wall):>13.3f}"
              f"{busy / (w * best):>7.3f}{median_of(records, name, 'steady'):>8.3f}"
              f"{median_of(records, name, 'gap') * 1e3:>8.2f}")
    print("  utilisation = busy / (workers x wall); ideal = the same with the wall time of a "
          "dispatcher that costs nothing and hands out in candidate order (same durations; "
          "prefetch=1 hands out otherwise and can beat it by chance); steady = utilisation "
          "until the last hand-out (the drain excluded); gap = mean wait of a worker between "
          "two of its evaluations")
    async_utilisation = median_of(records, "async", "utilisation")
    ratio = median_of(records, "async", "wall") / median_of(records, "sync", "wall")
    print(f"  async takes {ratio:.2f} of the sync wall time")

    print()
    print(f"dispatch overhead: zero-duration evaluator, async, {m} evaluations per run, median of "
          f"{args.overhead_repeats}")
    print(f"{'setting':<33}{'wall/eval':>10}{'(wall-busy/W)/eval':>20}"
          f"{'rank-0 CPU/eval':>17}  (ms)")
    names = [f"{k}w journal {j}" for k in (w, 1) for j in ("off", "on")]
    names += ["1w journal on, prefetch=1", "1w journal on, poll_interval=0"]
    overheads = {}
    for name in names:
        chosen = [r for r in records if r["name"] == name]
        per_eval = statistics.median(r["wall"] / r["evaluations"] for r in chosen)
        overheads[name] = statistics.median(
            (r["wall"] - r["busy"] / r["workers"]) / r["evaluations"] for r in chosen)
        cpu = statistics.median(r["root_cpu"] / r["evaluations"] for r in chosen)
        print(f"{name:<33}{per_eval * 1e3:>10.3f}{overheads[name] * 1e3:>20.3f}{cpu * 1e3:>17.3f}")
    print(f"  {w}w: rank 0 is the bottleneck: its time per evaluation bounds the throughput "
          f"(mean duration / this = the most workers it keeps busy); 1w: the round trip, what a "
          "worker waits between two evaluations without prefetch")

    load_after = os.getloadavg()
    dispatcher = overheads[f"{w}w journal on"]
    print()
    print(f"target async utilisation >= {UTILISATION_TARGET}: {async_utilisation:.3f} "
          f"{'met' if async_utilisation >= UTILISATION_TARGET else 'NOT met'} "
          f"(a dispatcher that costs nothing: {ideal_utilisation(records, best_async, w):.3f})")
    print(f"target dispatch overhead < {OVERHEAD_TARGET * 1e3:.0f} ms per evaluation "
          f"((wall - busy / workers) / evaluations, {w} workers, journal on): "
          f"{dispatcher * 1e3:.3f} ms {'met' if dispatcher < OVERHEAD_TARGET else 'NOT met'}; "
          f"round trip at 1 worker {overheads['1w journal on'] * 1e3:.3f} ms, "
          f"worker gap in the async run {median_of(records, 'async', 'gap') * 1e3:.2f} ms "
          f"({median_of(records, 'async prefetch=1', 'gap') * 1e3:.2f} ms with prefetch=1)")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in load_after)}; "
          f"benchmark took {time.monotonic() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"load_before": load_before, "load_after": load_after,
                                               "records": records}, indent=1))


def ideal_utilisation(records, best_wall, workers):
    return median_of(records, "async", "busy") / (workers * best_wall)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--evaluations", type=int, default=320,
                        help="per mode (a multiple of --workers gives whole generations)")
    parser.add_argument("--mean", type=float, default=0.2, help="mean evaluation time, seconds")
    parser.add_argument("--sigma", type=float, default=0.5, help="sigma of log(duration)")
    parser.add_argument("--overhead-evaluations", type=int, default=500)
    parser.add_argument("--overhead-repeats", type=int, default=3)
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
