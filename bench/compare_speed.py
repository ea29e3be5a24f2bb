"""How fast the NAS-Bench-201 comparison runner is: CPU per result told, results per CPU-second.

    .venv/bin/python bench/compare_speed.py --simulated                 # the figures the docs quote
    .venv/bin/python bench/compare_speed.py --simulated --algorithms random,rea,asha,bohb --seeds 50
    .venv/bin/python bench/compare_speed.py --budget 500 --seeds 100     # a budget of evaluations
    .venv/bin/python bench/compare_speed.py --simulated --processes 2    # wall time over 2 processes

For each algorithm, runs ``--seeds`` seeds in this process (``nord.comparisons.compare.run_seeds``,
the collector paused per run as ``nord compare`` does) and prints the results told, the CPU
seconds of this process (``time.process_time``), the CPU per result in microseconds and the
results per CPU-second; then the result (mean ± std of the returned architecture's 200-epoch test
accuracy). With ``--simulated`` each run is in simulated time (``nord compare --workers 8
--mode async``, the CIFAR-10 budget of 20,000 s, repeats charged unless ``--repeats free``).
The goal for random search and REA in simulated time: at most 10 µs of CPU per result.
``--processes N`` (N > 1) adds the wall time of the same seeds through ``run_comparison`` on N
worker processes. The machine's load average is printed before and after, since a shared
machine slows the figures down: compare figures of one run, or rotate two versions in one
session.
"""
import argparse
import os
import time

import numpy as np


def load() -> str:
    try:
        return "load average %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "load average unknown"


def measure(name: str, dataset: str, budget, seeds, setting, repeats: str):
    """CPU seconds of this process for the seeds, and their runs."""
    from nord.comparisons.compare import run_seeds
    started = time.process_time()
    runs, _ = run_seeds(name, dataset, budget, seeds, simulation=setting, repeats=repeats)
    return time.process_time() - started, runs


def main(algorithms, seeds: int, budget: int, dataset: str, simulated: bool = False,
         workers: int = 8, repeats: str = "charge", processes: int = 1) -> None:
    from nord.benchmarks.nasbench201 import load_costs, load_table
    from nord.comparisons.anytime import SimulatedSetting
    from nord.comparisons.compare import run_comparison
    load_table()
    load_costs()
    setting = (SimulatedSetting.for_dataset(dataset, workers=workers, mode="async")
               if simulated else None)
    size = (f"{workers} simulated workers x {setting.time_budget:,.0f} s, repeats {repeats}"
            if simulated else f"{budget} evaluations")
    print(f"{dataset}: {seeds} seeds x {size}, in one process; {os.cpu_count()} CPUs; {load()}")
    print(f"{'algorithm':12s} {'results':>9s} {'CPU (s)':>8s} {'µs/result':>10s} "
          f"{'results/CPU-s':>14s}  test accuracy (%)")
    for name in algorithms:
        measure(name, dataset, budget, [seeds], setting, repeats)   # warm-up: imports, caches
        cpu, runs = measure(name, dataset, budget, range(seeds), setting, repeats)
        told = sum(run.evaluations for run in runs)
        accuracy = np.array([run.reported_accuracy for run in runs]) * 100
        if cpu <= 0:   # below the clock's resolution: give more seeds
            rates = f"{'-':>10s} {'-':>14s}"
        else:
            rates = f"{cpu / told * 1e6:10.1f} {told / cpu:14,.0f}"
        print(f"{name:12s} {told:9,d} {cpu:8.2f} {rates}  "
              f"{accuracy.mean():.2f} ± {accuracy.std():.2f}")
    if processes > 1:
        started = time.perf_counter()
        run_comparison(dataset, algorithms, budget=None if simulated else budget, seeds=seeds,
                       processes=processes, simulation=setting, repeats=repeats)
        print(f"all of them over {processes} processes (run_comparison): "
              f"{time.perf_counter() - started:.2f} s wall")
    print(load())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithms", default="random,rea",
                        help="comma-separated names (nord compare --algorithms)")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--budget", type=int, default=500,
                        help="evaluations per run (without --simulated)")
    parser.add_argument("--dataset", default="cifar10")
    parser.add_argument("--simulated", action="store_true",
                        help="runs in simulated time (the data set's NATS-Bench budget)")
    parser.add_argument("--workers", type=int, default=8, help="(--simulated) virtual workers")
    parser.add_argument("--repeats", choices=["charge", "free"], default="charge")
    parser.add_argument("--processes", type=int, default=1,
                        help="N > 1: also the wall time of run_comparison on N processes")
    args = parser.parse_args()
    main([name for name in args.algorithms.split(",") if name], args.seeds, args.budget,
         args.dataset, args.simulated, args.workers, args.repeats, args.processes)
