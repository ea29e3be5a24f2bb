"""How fast the NAS-Bench-201 comparison runner is: seeds x evaluations per second.

    .venv/bin/python bench/compare_speed.py                        # random and rea, 500 x 500
    .venv/bin/python bench/compare_speed.py --algorithms random,rea,ga,pygmo-sga \\
        --seeds 100 --budget 500 --processes 2

For each algorithm, runs ``--seeds`` seeds at ``--budget`` evaluations through
``nord.benchmarks.compare.run_comparison`` and prints the wall time, seeds x evaluations per
second and the result (mean ± std of the returned architecture's 200-epoch test accuracy).
The target of the benchmark issue: 500 seeds x 500 evaluations of one algorithm in under a
minute. The machine's load average is printed before and after, since a shared machine
slows the figures down.
"""
import argparse
import os
import time


def load() -> str:
    try:
        return "load average %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "load average unknown"


def main(algorithms, seeds: int, budget: int, processes: int, dataset: str) -> None:
    from nord.benchmarks.compare import run_comparison
    from nord.benchmarks.nasbench201 import load_table
    load_table()
    print(f"{dataset}: {seeds} seeds x {budget} evaluations, {processes} process(es), "
          f"{os.cpu_count()} CPUs; {load()}")
    print(f"{'algorithm':12s} {'wall (s)':>9s} {'evals/s':>10s}  test accuracy (%)")
    for name in algorithms:
        started = time.perf_counter()
        result = run_comparison(dataset, (name,), budget=budget, seeds=seeds,
                                processes=processes)
        wall = time.perf_counter() - started
        numbers = result.summary()[name]
        evaluations = numbers["evaluations"] * numbers["seeds"]
        print(f"{name:12s} {wall:9.2f} {evaluations / wall:10,.0f}  "
              f"{numbers['test']['mean']:.2f} ± {numbers['test']['std']:.2f}")
    print(load())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithms", default="random,rea",
                        help="comma-separated short names (nord.benchmarks.compare)")
    parser.add_argument("--seeds", type=int, default=500)
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--dataset", default="cifar10")
    args = parser.parse_args()
    main([name for name in args.algorithms.split(",") if name], args.seeds, args.budget,
         args.processes, args.dataset)
