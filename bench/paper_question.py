"""The NORD paper's question on NAS-Bench-201: how should a search use N GPUs?

    .venv/bin/python bench/paper_question.py                     # 100 seeds, about a minute
    .venv/bin/python bench/paper_question.py --seeds 20 --target 93.8 --efficiency 0.9

Three ways of parallelising a search, each at 4, 16 and 64 simulated workers, through the
same search engine and simulated clock as ``nord compare --workers``:

* **sync GA** (the paper's experiment 3): nord's genetic algorithm with a population of one
  child per worker, each generation waiting for its slowest network;
* **data-parallel GA** (experiment 2): the same GA (population 10), every network trained by
  all N workers together, so an evaluation costs ``cost / (N * efficiency)``, one at a time;
  ``--efficiency`` is the scaling efficiency of data-parallel training (default 0.8: an
  assumption, not a measurement; small networks on many GPUs often scale worse);
* **async REA**: regularized evolution (population 10, sample 3), each worker handed the
  next candidate the moment it finishes.

Each run's incumbent (the best search signal so far) is judged by its 200-epoch test
accuracy; the figure gives, per way and worker count, the simulated hours until it first
reaches ``--target`` (median over seeds, with the interquartile range; a seed that never
reaches it counts as the time budget; a run stops once it reaches it). Evaluations cost the 12-epoch signal's training time
(12/200 of the 200-epoch time, an approximation) unless ``--signal valid200``. Writes
``docs/paper_question.png`` and ``docs/paper_question.json``.
"""
import argparse
import json
import math
import os
import time
from pathlib import Path

import numpy as np

WORKERS = (4, 16, 64)
WAYS = ("sync GA", "data-parallel GA", "async REA")


def plan(way: str, workers: int, efficiency: float):
    """(algorithm, its parameters, setting keywords) of one way at ``workers``."""
    if way == "sync GA":
        return "ga", {"population_size": workers}, {"workers": workers, "mode": "sync"}
    if way == "data-parallel GA":
        return "ga", {}, {"workers": workers, "mode": "sync", "train_workers": workers,
                          "scaling_efficiency": efficiency}
    return "rea", {}, {"workers": workers, "mode": "async"}


def one_job(job):
    """Times to reach the target for a list of seeds of one way and worker count."""
    from nord.comparisons.anytime import SimulatedSetting, run_simulated_seed, time_to_reach
    way, workers, seeds, dataset, budget, signal, efficiency, target = job
    algorithm, params, settings = plan(way, workers, efficiency)
    setting = SimulatedSetting(time_budget=budget, signal=signal, **settings).check(dataset)
    times = []
    for seed in seeds:
        run = run_simulated_seed(algorithm, dataset, seed, setting, params,
                                 stop_at=target / 100)
        times.append(time_to_reach(run.curve, target / 100))
    return way, workers, times


def main(seeds: int, dataset: str, budget: float, signal: str, efficiency: float,
         target: float, processes: int, out: Path) -> None:
    from nord.benchmarks.nasbench201 import load_table
    from nord.search.executors import ProcessPool
    load_table()
    started = time.perf_counter()
    chunk = max(1, math.ceil(seeds / max(1, 2 * processes)))
    jobs = [(way, workers, list(range(start, min(seeds, start + chunk))), dataset, budget,
             signal, efficiency, target)
            for way in WAYS for workers in WORKERS for start in range(0, seeds, chunk)]
    times = {(way, workers): [] for way in WAYS for workers in WORKERS}
    for way, workers, found in ProcessPool(processes).map(one_job, jobs):
        times[way, workers].extend(found)
    results = {}
    print(f"{dataset}, signal {signal}, target {target:.2f} % test accuracy, budget "
          f"{budget / 3600:.1f} h, {seeds} seeds, data-parallel efficiency {efficiency:g}")
    print(f"{'way':18s} {'workers':>7s} {'median h':>9s} {'IQR h':>13s} {'reached':>8s}")
    for way in WAYS:
        for workers in WORKERS:
            values = np.minimum(np.array(times[way, workers]), budget) / 3600
            reached = float(np.mean(np.isfinite(times[way, workers])))
            low, median, high = np.percentile(values, [25, 50, 75])
            results.setdefault(way, {})[workers] = {
                "median_hours": median, "q25_hours": low, "q75_hours": high, "reached": reached}
            print(f"{way:18s} {workers:7d} {median:9.2f} {f'{low:.2f}-{high:.2f}':>13s} "
                  f"{reached * 100:7.0f}%")
    print(f"({time.perf_counter() - started:.1f} s)")
    out.mkdir(parents=True, exist_ok=True)
    (out / "paper_question.json").write_text(json.dumps({
        "dataset": dataset, "signal": signal, "target_percent": target,
        "time_budget_s": budget, "seeds": seeds, "scaling_efficiency": efficiency,
        "results": {way: {str(k): v for k, v in by.items()} for way, by in results.items()}},
        indent=2) + "\n")
    plot(results, out / "paper_question.png", dataset, target, efficiency, seeds)
    print(f"written: {out / 'paper_question.png'}, {out / 'paper_question.json'}")


def plot(results, path, dataset, target, efficiency, seeds) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(figsize=(6.5, 4))
    for way, by in results.items():
        workers = sorted(by)
        median = [by[w]["median_hours"] for w in workers]
        low = [by[w]["median_hours"] - by[w]["q25_hours"] for w in workers]
        high = [by[w]["q75_hours"] - by[w]["median_hours"] for w in workers]
        label = f"{way} (efficiency {efficiency:g})" if way == "data-parallel GA" else way
        axes.errorbar(workers, median, yerr=[low, high], marker="o", capsize=3, label=label)
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xticks(WORKERS, [str(w) for w in WORKERS])
    axes.set_xlabel("simulated GPUs")
    axes.set_ylabel(f"hours to reach {target:.1f} % test accuracy")
    axes.set_title(f"NAS-Bench-201 {dataset}: median and IQR over {seeds} seeds")
    axes.grid(alpha=0.3, which="both")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--dataset", default="cifar10")
    parser.add_argument("--time-budget", type=float, default=200_000.0,
                        help="simulated seconds per run (a seed that does not reach the target "
                             "counts as this)")
    parser.add_argument("--signal", default="valid12", choices=["valid12", "valid200"])
    parser.add_argument("--efficiency", type=float, default=0.8,
                        help="scaling efficiency of data-parallel training")
    parser.add_argument("--target", type=float, default=94.3, help="test accuracy, percent")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", default="docs")
    args = parser.parse_args()
    main(args.seeds, args.dataset, args.time_budget, args.signal, args.efficiency, args.target,
         args.processes, Path(args.out))
